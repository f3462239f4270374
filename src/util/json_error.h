// util/json_error.h — nlohmann::json's exception text as a sentence for a person:
//   "[json.exception.parse_error.101] parse error at line 1, column 2: syntax error ..."
//   -> "parse error at line 1, column 2: syntax error ..."
// The bracketed id names the library's internals, not what is wrong with the file.
#pragma once

#include <string>

namespace headlab {

inline std::string json_error_text(const char* what) {
  std::string s = what;
  if (s.rfind("[json.exception.", 0) == 0)
    if (auto p = s.find("] "); p != std::string::npos) s = s.substr(p + 2);
  while (!s.empty() && (s.back() == ' ' || s.back() == ';')) s.pop_back();
  return s;
}

}  // namespace headlab
