// tokenizer/normalizer.cpp — the normalizers of tokenizer/normalizer.h. Unicode forms go through
// utf8proc one segment at a time (a starter and the marks after it), so each segment's
// output keeps the segment's input span.
#include "tokenizer/normalizer.h"

#include <cstdlib>
#include <vector>

#include <utf8proc.h>

#include "tokenizer/unicode.h"

namespace headlab::model {

namespace {

std::string utf8proc_form(std::string_view s, int options) {
  utf8proc_uint8_t* out = nullptr;
  utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()),
                                    static_cast<utf8proc_ssize_t>(s.size()), &out,
                                    static_cast<utf8proc_option_t>(options | UTF8PROC_STABLE));
  if (n < 0) return std::string(s);  // the text was checked as UTF-8 before; keep it as it is
  std::string r(reinterpret_cast<char*>(out), static_cast<std::size_t>(n));
  std::free(out);
  return r;
}

// NFC and friends. The whole text's form is the reference; when the segments' forms joined
// equal it (always, but for compositions across starters such as Hangul jamo), each segment's
// bytes span its own input; otherwise the whole output spans the whole input.
void unicode_form(AlignedText& t, int options) {
  const std::string whole = utf8proc_form(t.text, options);
  if (whole == t.text) return;
  AlignedText out;
  std::size_t seg = 0;
  auto flush = [&](std::size_t upto) {
    if (upto <= seg) return;
    out.append(utf8proc_form(std::string_view(t.text).substr(seg, upto - seg), options), t.begin[seg], t.end[upto - 1]);
    seg = upto;
  };
  for (std::size_t i = 0; i < t.text.size();) {
    int len = 1;
    std::int32_t cp = utf8_decode(t.text, i, &len);
    if (i > 0 && cp >= 0 && utf8proc_get_property(cp)->combining_class == 0) flush(i);
    i += static_cast<std::size_t>(len > 0 ? len : 1);
  }
  flush(t.text.size());
  if (out.text != whole) {
    AlignedText coarse;
    coarse.append(whole, t.begin.front(), t.end.back());
    out = std::move(coarse);
  }
  t = std::move(out);
}

// Full lowercase, as Hugging Face's Lowercase (Rust's str::to_lowercase; the JS port's
// toLowerCase): U+0130 becomes two characters, and Σ depends on its word (lowercase_sigma).
void lowercase(AlignedText& t) {
  std::vector<std::int32_t> cps;
  std::vector<std::size_t> at, size;  // each code point's byte offset and length
  for (std::size_t i = 0; i < t.text.size();) {
    int len = 1;
    cps.push_back(utf8_decode(t.text, i, &len));
    if (len <= 0) len = 1;
    at.push_back(i), size.push_back(std::size_t(len));
    i += std::size_t(len);
  }
  AlignedText out;
  for (std::size_t k = 0; k < cps.size(); k++) {
    const std::size_t i = at[k], len = size[k];
    std::string c;
    if (cps[k] < 0) {
      c = t.text.substr(i, len);
    } else if (cps[k] == 0x3a3) {
      utf8_append(c, lowercase_sigma(cps.data(), cps.size(), k));
    } else {
      std::uint32_t lower[2];
      const int n = lowercase_mapping(std::uint32_t(cps[k]), lower);
      for (int j = 0; j < n; j++) utf8_append(c, lower[j]);
    }
    out.append(c, t.begin[i], t.end[i + len - 1]);
  }
  t = std::move(out);
}

bool is_space(std::int32_t cp) {  // Rust's char::is_whitespace (Unicode White_Space)
  return cp >= 0 && (cp == 0x20 || (cp >= 0x09 && cp <= 0x0d) || cp == 0x85 || cp == 0xa0 || cp == 0x1680 ||
                     (cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 || cp == 0x2029 || cp == 0x202f ||
                     cp == 0x205f || cp == 0x3000);
}

void strip(AlignedText& t, bool left, bool right) {
  std::size_t b = 0, e = t.text.size();
  if (left)
    while (b < e) {
      int len = 1;
      if (!is_space(utf8_decode(t.text, b, &len))) break;
      b += len;
    }
  if (right)
    while (e > b) {
      std::size_t s = e - 1;
      while (s > b && (static_cast<unsigned char>(t.text[s]) & 0xc0) == 0x80) s--;
      int len = 1;
      if (!is_space(utf8_decode(t.text, s, &len))) break;
      e = s;
    }
  t = t.slice(b, e);
}

// Replaces each span in matches by content; the content spans the input of what it replaces.
void replace_spans(AlignedText& t, const std::vector<std::pair<int, int>>& matches, const std::string& content) {
  if (matches.empty()) return;
  AlignedText out;
  std::size_t pos = 0;
  for (auto [b, e] : matches) {
    if (e == b) continue;
    out.append(t.slice(pos, b));
    out.append(content, t.begin[b], t.end[e - 1]);
    pos = e;
  }
  out.append(t.slice(pos, t.text.size()));
  t = std::move(out);
}

}  // namespace

void normalizer_apply(const Normalizer& n, AlignedText& t) {
  using K = Normalizer::Kind;
  switch (n.kind) {
    case K::nfc: if (!t.text.empty()) unicode_form(t, UTF8PROC_COMPOSE); break;
    case K::nfd: if (!t.text.empty()) unicode_form(t, UTF8PROC_DECOMPOSE); break;
    case K::nfkc: if (!t.text.empty()) unicode_form(t, UTF8PROC_COMPOSE | UTF8PROC_COMPAT); break;
    case K::nfkd: if (!t.text.empty()) unicode_form(t, UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT); break;
    case K::lowercase: lowercase(t); break;
    case K::strip: strip(t, n.strip_left, n.strip_right); break;
    case K::prepend:
      // Hugging Face prepends only to a non-empty text
      if (!t.text.empty()) {
        AlignedText out;
        out.append(n.prepend, t.begin.front(), t.begin.front());
        out.append(t);
        t = std::move(out);
      }
      break;
    case K::replace: {
      std::vector<std::pair<int, int>> matches;
      if (n.regex) {
        matches = n.regex->find_all(t.text);
      } else if (!n.pattern.empty()) {
        for (std::size_t at = t.text.find(n.pattern); at != std::string::npos; at = t.text.find(n.pattern, at + n.pattern.size()))
          matches.emplace_back(static_cast<int>(at), static_cast<int>(at + n.pattern.size()));
      }
      replace_spans(t, matches, n.content);
      break;
    }
    case K::sequence:
      for (const Normalizer& s : n.steps) normalizer_apply(s, t);
      break;
  }
}

}  // namespace headlab::model
