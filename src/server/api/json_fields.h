// server/api/json_fields.h — how every request decoder reads a JSON body: parse it as one object
// (any parse failure, a number beyond a double's range included, is a bad request, never an
// exception), refuse fields it does not know, and read each field with its type checked.
//
//   auto j = parse_json_object(body, R"({"sentence": "the cat", "head": "first"})");
//   if (!j) return tl::unexpected(j.error());
//   HEADLAB_TRY(only_fields(*j, {"sentence", "head", "mask"}));
//   HEADLAB_TRY(read_field(*j, "sentence", r.sentence, /*required=*/true));
//   HEADLAB_TRY(read_field(*j, "mask", r.mask, /*required=*/false));  // keeps the default
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>
#include <type_traits>

#include "util/result.h"

namespace headlab::server {

// Returns early with the error of a failed Status.
#define HEADLAB_TRY(expr)                                           \
  do {                                                              \
    if (auto s_ = (expr); !s_) return tl::unexpected(s_.error()); \
  } while (0)

// body must be one JSON object; `example` is shown in the message when it is not.
Result<nlohmann::json> parse_json_object(std::string_view body, std::string_view example);

// Every key of j is in `allowed`; `where` names the nested object in the message (" in 'ablate'").
Status only_fields(const nlohmann::json& j, const std::set<std::string>& allowed, const std::string& where = "");

// Whole numbers a request may carry: anything larger is refused before it is narrowed.
inline constexpr long long kMaxRequestInteger = 1'000'000'000;

// Reads j[name] into out: bool, std::string, int or std::int64_t (whole numbers within
// ±kMaxRequestInteger). A missing optional field leaves out as it was.
template <class T>
Status read_field(const nlohmann::json& j, const char* name, T& out, bool required) {
  auto bad = [&](const char* what) {
    return tl::unexpected(Error{ErrorCode::invalid_argument, std::string("Field '") + name + "' " + what});
  };
  auto it = j.find(name);
  if (it == j.end()) {
    if (required) return tl::unexpected(Error{ErrorCode::invalid_argument, std::string("Missing field '") + name + "'."});
    return {};
  }
  if constexpr (std::is_same_v<T, bool>) {
    if (!it->is_boolean()) return bad("must be true or false.");
    out = it->template get<bool>();
  } else if constexpr (std::is_same_v<T, int> || std::is_same_v<T, std::int64_t>) {
    if (!it->is_number_integer()) return bad("must be a whole number.");
    if (it->is_number_unsigned() ? it->template get<std::uint64_t>() > std::uint64_t(kMaxRequestInteger)
                                 : (it->template get<std::int64_t>() < -kMaxRequestInteger ||
                                    it->template get<std::int64_t>() > kMaxRequestInteger))
      return bad("is out of range.");
    out = static_cast<T>(it->template get<std::int64_t>());
  } else {
    static_assert(std::is_same_v<T, std::string>, "read_field reads bool, int, std::int64_t or std::string");
    if (!it->is_string()) return bad("must be a string.");
    out = it->template get<std::string>();
  }
  return {};
}

}  // namespace headlab::server
