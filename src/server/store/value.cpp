// server/store/value.cpp — see value.h.
#include "server/store/value.h"

#include <cstdlib>

namespace headlab::server::db {

std::string Row::text(std::size_t column) const {
  const Value& v = cells.at(column);
  if (const auto* s = std::get_if<std::string>(&v)) return *s;
  if (const auto* i = std::get_if<std::int64_t>(&v)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&v)) return std::to_string(*d);
  return {};
}

std::int64_t Row::integer(std::size_t column) const {
  const Value& v = cells.at(column);
  if (const auto* i = std::get_if<std::int64_t>(&v)) return *i;
  if (const auto* d = std::get_if<double>(&v)) return static_cast<std::int64_t>(*d);
  if (const auto* s = std::get_if<std::string>(&v)) return std::strtoll(s->c_str(), nullptr, 10);
  return 0;
}

}  // namespace headlab::server::db
