// util/untrusted_text.cpp — see untrusted_text.h. utf8proc decodes, normalises (NFKC,
// NFKC_Casefold) and gives each code point's general category; the scripts that can pass
// for one another (Latin, Cyrillic, Greek) are told apart by their Unicode blocks.
#include "util/untrusted_text.h"

#include <cstdio>
#include <cstdlib>

#include <utf8proc.h>

namespace headlab {
namespace {

constexpr const char* kReplacement = "\xEF\xBF\xBD";  // U+FFFD

bool is_bidi_control(utf8proc_int32_t c) {
  return c == 0x061C || c == 0x200E || c == 0x200F || (c >= 0x202A && c <= 0x202E) || (c >= 0x2066 && c <= 0x2069);
}

std::string code_point_name(utf8proc_int32_t c) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "U+%04X", static_cast<unsigned>(c));
  return buf;
}

std::string utf8_of(utf8proc_int32_t c) {
  utf8proc_uint8_t buf[4];
  auto n = utf8proc_encode_char(c, buf);
  return std::string(reinterpret_cast<char*>(buf), static_cast<std::size_t>(n));
}

// utf8proc_map with `options`; nullopt-like empty + false when the text is not UTF-8.
bool utf8proc_form(std::string_view s, int options, std::string& out) {
  utf8proc_uint8_t* mapped = nullptr;
  utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()),
                                    static_cast<utf8proc_ssize_t>(s.size()), &mapped,
                                    static_cast<utf8proc_option_t>(options | UTF8PROC_STABLE));
  if (n < 0) return false;
  out.assign(reinterpret_cast<char*>(mapped), static_cast<std::size_t>(n));
  std::free(mapped);
  return true;
}

std::string trim(std::string_view s) {
  auto a = s.find_first_not_of(" \t\r\n");
  if (a == std::string_view::npos) return "";
  auto b = s.find_last_not_of(" \t\r\n");
  return std::string(s.substr(a, b - a + 1));
}

// Why a code point cannot be in a nickname, or nullptr when it can.
const char* invisible_reason(utf8proc_int32_t c) {
  if (is_bidi_control(c)) return "a direction control, which reorders the text around it";
  if (c == 0x200B || c == 0x200C || c == 0x200D || c == 0x2060 || c == 0xFEFF) return "a zero-width character";
  // Hangul fillers and the like: letters by category, blank on the screen.
  if (c == 0x115F || c == 0x1160 || c == 0x3164 || c == 0xFFA0 || c == 0x2800) return "a blank character";
  switch (utf8proc_category(c)) {
    case UTF8PROC_CATEGORY_CC: return "a control character";
    case UTF8PROC_CATEGORY_CF: return "an invisible formatting character";
    case UTF8PROC_CATEGORY_ZL:
    case UTF8PROC_CATEGORY_ZP: return "a line break";
    case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CN: return "a character with no agreed look (private or unassigned)";
    default: return nullptr;
  }
}

enum class Script { other, latin, greek, cyrillic };

Script letter_script(utf8proc_int32_t c) {
  const auto cat = utf8proc_category(c);
  const bool letter = cat == UTF8PROC_CATEGORY_LU || cat == UTF8PROC_CATEGORY_LL || cat == UTF8PROC_CATEGORY_LT ||
                      cat == UTF8PROC_CATEGORY_LM || cat == UTF8PROC_CATEGORY_LO;
  if (!letter) return Script::other;
  if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= 0x00C0 && c <= 0x024F) ||
      (c >= 0x1E00 && c <= 0x1EFF) || (c >= 0x2C60 && c <= 0x2C7F) || (c >= 0xA720 && c <= 0xA7FF) ||
      (c >= 0xAB30 && c <= 0xAB6F) || (c >= 0x0250 && c <= 0x02AF))
    return Script::latin;
  if ((c >= 0x0370 && c <= 0x03FF) || (c >= 0x1F00 && c <= 0x1FFF)) return Script::greek;
  if ((c >= 0x0400 && c <= 0x052F) || (c >= 0x1C80 && c <= 0x1C8F) || (c >= 0x2DE0 && c <= 0x2DFF) ||
      (c >= 0xA640 && c <= 0xA69F))
    return Script::cyrillic;
  return Script::other;
}

const char* script_name(Script s) {
  switch (s) {
    case Script::latin: return "Latin";
    case Script::greek: return "Greek";
    case Script::cyrillic: return "Cyrillic";
    default: return "other";
  }
}

}  // namespace

std::string escape_controls(std::string_view s, std::string_view keep) {
  std::string out;
  out.reserve(s.size());
  const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(s.data());
  utf8proc_ssize_t left = static_cast<utf8proc_ssize_t>(s.size());
  while (left > 0) {
    utf8proc_int32_t c = -1;
    utf8proc_ssize_t n = utf8proc_iterate(p, left, &c);
    if (n <= 0) {  // not UTF-8: one byte becomes one U+FFFD
      out += kReplacement;
      ++p;
      --left;
      continue;
    }
    const bool control = c < 0x20 || (c >= 0x7F && c <= 0x9F) || is_bidi_control(c);
    if (control && !(c < 0x80 && keep.find(static_cast<char>(c)) != std::string_view::npos))
      out += kReplacement;
    else
      out.append(reinterpret_cast<const char*>(p), static_cast<std::size_t>(n));
    p += n;
    left -= n;
  }
  return out;
}

Result<CleanNickname> clean_nickname(std::string_view raw, int max_chars) {
  std::string nfkc;
  if (!utf8proc_form(raw, UTF8PROC_COMPOSE | UTF8PROC_COMPAT, nfkc))
    return make_error(ErrorCode::invalid_argument, "The nickname is not valid UTF-8 text.");
  CleanNickname out;
  out.text = trim(nfkc);
  if (out.text.empty()) return make_error(ErrorCode::invalid_argument, "Choose a nickname (not your real name).");
  int chars = 0;
  Script seen = Script::other;
  utf8proc_int32_t seen_at = 0;
  const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(out.text.data());
  utf8proc_ssize_t left = static_cast<utf8proc_ssize_t>(out.text.size());
  while (left > 0) {
    utf8proc_int32_t c = -1;
    utf8proc_ssize_t n = utf8proc_iterate(p, left, &c);
    if (n <= 0) return make_error(ErrorCode::invalid_argument, "The nickname is not valid UTF-8 text.");
    p += n;
    left -= n;
    ++chars;
    if (const char* why = invisible_reason(c))
      return make_error(ErrorCode::invalid_argument, "The nickname has " + code_point_name(c) + ", " + why +
                                                         ": a name that looks like another must not be possible. "
                                                         "Choose one without it.");
    const Script s = letter_script(c);
    if (s == Script::other) continue;
    if (seen == Script::other) {
      seen = s;
      seen_at = c;
    } else if (s != seen) {
      return make_error(ErrorCode::invalid_argument,
                        "The nickname mixes " + std::string(script_name(seen)) + " letters (" + code_point_name(seen_at) +
                            " '" + utf8_of(seen_at) + "') with " + script_name(s) + " ones (" + code_point_name(c) +
                            " '" + utf8_of(c) + "'), so it could pass for someone else's. "
                            "Use the letters of one alphabet.");
    }
  }
  if (chars > max_chars)
    return make_error(ErrorCode::invalid_argument,
                      "A nickname is at most " + std::to_string(max_chars) + " characters; this one has " +
                          std::to_string(chars) + ".");
  out.key = nickname_key(out.text);
  return out;
}

Status check_shown_text(std::string_view s, const std::string& what) {
  const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(s.data());
  utf8proc_ssize_t left = static_cast<utf8proc_ssize_t>(s.size());
  while (left > 0) {
    utf8proc_int32_t c = -1;
    const utf8proc_ssize_t n = utf8proc_iterate(p, left, &c);
    if (n <= 0) return make_error(ErrorCode::invalid_argument, what + " is not valid UTF-8 text.");
    if (is_bidi_control(c))
      return make_error(ErrorCode::invalid_argument, what + " has " + code_point_name(c) +
                                                         ", a direction control, which reorders the text around it "
                                                         "wherever it is shown. Remove it.");
    p += n;
    left -= n;
  }
  return {};
}

std::string escape_for_terminal(std::string_view text) {
  std::string out;
  char buf[12];
  const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(text.data());
  utf8proc_ssize_t left = static_cast<utf8proc_ssize_t>(text.size());
  while (left > 0) {
    utf8proc_int32_t c = -1;
    utf8proc_ssize_t n = utf8proc_iterate(p, left, &c);
    if (n <= 0) n = 1, c = -1;  // not UTF-8: the byte as it is
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n' || c == '\t' || c == '\r') {
      out += c == '\n' ? "\\n" : c == '\t' ? "\\t" : "\\r";
    } else if ((c >= 0 && c < 0x20) || c == 0x7F) {
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(c));
      out += buf;
    } else if ((c >= 0x80 && c <= 0x9F) || is_bidi_control(c)) {
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
      out += buf;
    } else {
      out.append(reinterpret_cast<const char*>(p), static_cast<std::size_t>(n));
    }
    p += n;
    left -= n;
  }
  return out;
}

std::string nickname_key(std::string_view raw) {
  std::string key;
  const std::string t = trim(raw);
  if (!utf8proc_form(t, UTF8PROC_COMPOSE | UTF8PROC_COMPAT | UTF8PROC_CASEFOLD | UTF8PROC_IGNORE, key)) return t;
  return key;
}

std::size_t display_width(std::string_view s) {
  std::size_t width = 0;
  const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(s.data());
  utf8proc_ssize_t left = static_cast<utf8proc_ssize_t>(s.size());
  while (left > 0) {
    utf8proc_int32_t c = 0;
    utf8proc_ssize_t n = utf8proc_iterate(p, left, &c);
    if (n <= 0) {  // not UTF-8: one replacement character, one column
      ++width;
      ++p;
      --left;
      continue;
    }
    const int w = utf8proc_charwidth(c);
    width += w > 0 ? static_cast<std::size_t>(w) : 0;
    p += n;
    left -= n;
  }
  return width;
}

}  // namespace headlab
