// util/json_depth.h — how deeply JSON text nests, measured before any parser or printer
// recurses over it. A config.json, a tokenizer.json, a safetensors header or a request body
// nested 100,000 deep would otherwise overflow the stack of the code that walks it (a crash,
// not an error); every JSON reader of headlab calls this first.
//
//   if (auto s = json_depth_check(text, path); !s) return tl::unexpected(s.error());
//
// Strings (with their escapes) are skipped, so brackets inside them do not count. The text
// need not be valid JSON: the parser that runs next says what else is wrong with it.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "util/result.h"

namespace headlab {

// Deeper than any real config.json (4), tokenizer.json (about 6: a Sequence of normalizers
// holds one level of others) or request body (3) nests.
inline constexpr int kMaxJsonDepth = 64;

// The byte offset of the first '[' or '{' that opens level max_depth + 1, or npos.
inline std::size_t json_too_deep_at(std::string_view text, int max_depth = kMaxJsonDepth) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (std::size_t i = 0; i < text.size(); i++) {
    const char c = text[i];
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return i;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return std::string_view::npos;
}

// ok, or an error of `code` (corrupt for a file, invalid_argument for a request):
// "<what>: JSON nested deeper than 64 levels (at byte N); ..."
inline Status json_depth_check(std::string_view text, const std::string& what, ErrorCode code = ErrorCode::corrupt,
                               int max_depth = kMaxJsonDepth) {
  const std::size_t at = json_too_deep_at(text, max_depth);
  if (at == std::string_view::npos) return {};
  return make_error(code, what + ": JSON nested deeper than " + std::to_string(max_depth) + " levels (at byte " +
                              std::to_string(at) + "); headlab reads at most " + std::to_string(max_depth) +
                              ", more than any real file of its kind needs");
}

}  // namespace headlab
