// tokenizer/unicode.cpp — UTF-8 and character classes for the tokenizer (see unicode.h).
#include "tokenizer/unicode.h"

#include <algorithm>
#include <iterator>

namespace headlab::model {

namespace {
struct CodepointRange {
  std::uint32_t first, last;
};
struct LowercaseMapping {
  std::uint32_t from, to, second;  // second = 0: one code point
};
#include "tokenizer/unicode_tables.inc"

template <std::size_t N>
bool in_ranges(const CodepointRange (&ranges)[N], std::uint32_t cp) {
  auto it = std::upper_bound(std::begin(ranges), std::end(ranges), cp,
                             [](std::uint32_t c, const CodepointRange& r) { return c < r.first; });
  if (it == std::begin(ranges)) return false;
  --it;
  return cp <= it->last;
}
}  // namespace

std::int32_t utf8_decode(std::string_view s, std::size_t pos, int* len) {
  const auto b = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char c = b(pos);
  *len = 1;
  if (c < 0x80) return c;
  int n;
  std::uint32_t cp, min;
  if ((c & 0xe0) == 0xc0) n = 2, cp = c & 0x1f, min = 0x80;
  else if ((c & 0xf0) == 0xe0) n = 3, cp = c & 0x0f, min = 0x800;
  else if ((c & 0xf8) == 0xf0) n = 4, cp = c & 0x07, min = 0x10000;
  else return -1;
  if (pos + n > s.size()) return -1;
  for (int i = 1; i < n; i++) {
    if ((b(pos + i) & 0xc0) != 0x80) return -1;
    cp = (cp << 6) | (b(pos + i) & 0x3f);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return -1;
  *len = n;
  return static_cast<std::int32_t>(cp);
}

long long utf8_find_invalid(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    int len;
    if (utf8_decode(text, i, &len) < 0) return static_cast<long long>(i);
    i += len;
  }
  return -1;
}

void utf8_append(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xc0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xe0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  } else {
    out.push_back(static_cast<char>(0xf0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3f)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  }
}

bool is_letter(std::uint32_t cp) { return in_ranges(kLetterRanges, cp); }
bool is_number(std::uint32_t cp) { return in_ranges(kNumberRanges, cp); }

bool is_whitespace(std::uint32_t cp) {
  switch (cp) {
    case 0x09: case 0x0a: case 0x0b: case 0x0c: case 0x0d: case 0x20: case 0x85: case 0xa0: case 0x1680:
    case 0x2028: case 0x2029: case 0x202f: case 0x205f: case 0x3000:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200a;
  }
}

bool is_cased(std::uint32_t cp) { return in_ranges(kCasedRanges, cp); }
bool is_case_ignorable(std::uint32_t cp) { return in_ranges(kCaseIgnorableRanges, cp); }

int lowercase_mapping(std::uint32_t cp, std::uint32_t out[2]) {
  auto it = std::lower_bound(std::begin(kLowercaseMappings), std::end(kLowercaseMappings), cp,
                             [](const LowercaseMapping& m, std::uint32_t c) { return m.from < c; });
  if (it == std::end(kLowercaseMappings) || it->from != cp) {
    out[0] = cp;
    return 1;
  }
  out[0] = it->to;
  out[1] = it->second;
  return it->second ? 2 : 1;
}

std::uint32_t lowercase_sigma(const std::int32_t* cps, std::size_t n, std::size_t i) {
  // the first character that is not case-ignorable, looking back and then ahead
  auto cased_beyond = [&](std::ptrdiff_t from, std::ptrdiff_t step) {
    for (std::ptrdiff_t j = from; j >= 0 && j < std::ptrdiff_t(n); j += step) {
      if (cps[j] < 0) return false;
      if (!is_case_ignorable(std::uint32_t(cps[j]))) return is_cased(std::uint32_t(cps[j]));
    }
    return false;
  };
  const bool final = cased_beyond(std::ptrdiff_t(i) - 1, -1) && !cased_beyond(std::ptrdiff_t(i) + 1, 1);
  return final ? 0x3c2 : 0x3c3;
}

}  // namespace headlab::model
