// server/api/json_fields.cpp — see json_fields.h.
#include "server/api/json_fields.h"
#include "util/json_depth.h"
#include "util/json_error.h"

#include <set>
#include <string>
#include <vector>

namespace headlab::server {

using nlohmann::json;

Result<json> parse_json_object(std::string_view body, std::string_view example) {
  // before any parser or printer recurses over it (a body nested 100,000 deep crashed one)
  if (auto s = json_depth_check(body, "The request body", ErrorCode::invalid_argument); !s)
    return make_error(ErrorCode::invalid_argument, s.error().message + ". Send one object, like " + std::string(example) + ".");
  json j;
  // {"layer": 0, "layer": 5} could mean either: the parser keeps the last, which the client may
  // not have meant. Each object's keys are kept on a stack while it is read; a repeat is named.
  std::vector<std::set<std::string>> keys;
  std::string repeated;
  auto watch = [&](int, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::object_start) keys.emplace_back();
    else if (event == json::parse_event_t::object_end && !keys.empty()) keys.pop_back();
    else if (event == json::parse_event_t::key && !keys.empty() && !keys.back().insert(parsed.get<std::string>()).second &&
             repeated.empty())
      repeated = parsed.get<std::string>();
    return true;
  };
  try {
    j = json::parse(body, watch);
  } catch (const json::exception& e) {  // parse_error, and out_of_range for numbers like 1e999
    std::string what = json_error_text(e.what());
    // nlohmann's sentence may end without a full stop ("...or a literal"): end it before ours
    if (!what.empty() && what.back() != '.') what += '.';
    return make_error(ErrorCode::invalid_argument, "The request body is not valid JSON: " + what +
                                                       " Send one object, like " + std::string(example) + ".");
  }
  if (!j.is_object())
    return make_error(ErrorCode::invalid_argument,
                      "The request body must be a JSON object, like " + std::string(example) + ".");
  if (!repeated.empty())
    return make_error(ErrorCode::invalid_argument, "The key '" + repeated.substr(0, 100) +
                                                       "' appears twice in one object of the request body. Give it once.");
  return j;
}

Status only_fields(const json& j, const std::set<std::string>& allowed, const std::string& where) {
  for (auto it = j.begin(); it != j.end(); ++it)
    if (!allowed.count(it.key())) {
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      return make_error(ErrorCode::invalid_argument,
                        "Unknown field '" + it.key() + "'" + where + ". Allowed fields: " + list + ".");
    }
  return {};
}

}  // namespace headlab::server
