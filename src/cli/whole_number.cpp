// cli/whole_number.cpp — whole-number option checks (see whole_number.h).
#include "cli/whole_number.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace headlab::cli {
namespace {

// The value as a whole number, or false (not a number, a fraction, or beyond int64).
bool parse_whole(const std::string& text, std::int64_t& out) {
  if (text.empty()) return false;
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno == ERANGE || end == text.c_str() || *end != '\0') return false;
  out = v;
  return true;
}

CLI::Validator whole_number_check(std::int64_t min, std::int64_t max) {
  const std::string bounds = "of " + std::to_string(min) + " or more";
  return CLI::Validator(
      [min, max, bounds](std::string& value) -> std::string {
        std::int64_t v = 0;
        if (!parse_whole(value, v)) return "must be a whole number " + bounds + ", got \"" + value + "\"";
        if (v < min) return "must be a whole number " + bounds + ", got " + value;
        if (v > max)
          return "must be a whole number from " + std::to_string(min) + " to " + std::to_string(max) + ", got " + value;
        return {};
      },
      "INT >= " + std::to_string(min));
}

CLI::Validator number_check(double bound, bool exclusive, double most, const std::string& most_text) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", bound);
  const std::string words = std::string("must be a number ") + (exclusive ? "above " : "from ") + b +
                            (exclusive ? " and at most " : " to ") + most_text;
  return CLI::Validator(
      [=](std::string& value) -> std::string {
        errno = 0;
        char* end = nullptr;
        const double v = std::strtod(value.c_str(), &end);
        if (value.empty() || end == value.c_str() || *end != '\0' || !std::isfinite(v) || errno == ERANGE ||
            (exclusive ? !(v > bound) : !(v >= bound)) || !(v <= most))
          return words + ", got " + value.substr(0, 40);
        return {};
      },
      "NUMBER");
}

}  // namespace

CLI::Validator number_above(double above, double most, const std::string& most_text) {
  return number_check(above, true, most, most_text);
}
CLI::Validator number_from(double least, double most, const std::string& most_text) {
  return number_check(least, false, most, most_text);
}

CLI::Validator whole_number_from(std::int64_t min, std::int64_t max) { return whole_number_check(min, max); }

CLI::Validator whole_number_u64() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        const bool digits = !value.empty() && value.find_first_not_of("0123456789") == std::string::npos;
        errno = 0;
        if (digits) std::strtoull(value.c_str(), nullptr, 10);
        if (digits && errno != ERANGE) return {};
        return "must be a whole number from 0 to " + std::to_string(std::numeric_limits<std::uint64_t>::max()) + ", got " +
               value.substr(0, 40);
      },
      "");
}

}  // namespace headlab::cli
