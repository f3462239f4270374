// tokenizer/pre_tokenizer.cpp — the pre-tokenizers of tokenizer/pre_tokenizer.h, following Hugging
// Face's tokenizers: a split finds the matches, labels every part match or not, then merges
// the parts by the behaviour.
#include "tokenizer/pre_tokenizer.h"

#include <algorithm>
#include <array>
#include <cstdint>

#include <utf8proc.h>

#include "tokenizer/unicode.h"

namespace headlab::model {

std::vector<std::pair<int, int>> byte_level_split(std::string_view text) {
  // The pattern, alternatives tried in order at each position:
  //   's|'t|'re|'ve|'m|'ll|'d | ?\p{L}+ | ?\p{N}+ | ?[^\s\p{L}\p{N}]+ | \s+(?!\S) | \s+
  enum Class : std::uint8_t { kLetter, kNumber, kSpace, kOther };
  // ASCII, most of any text, from a table; the rest through the Unicode ranges
  static const std::array<Class, 128> kAscii = [] {
    std::array<Class, 128> t{};
    for (std::uint32_t c = 0; c < 128; c++)
      t[c] = is_letter(c) ? kLetter : is_number(c) ? kNumber : is_whitespace(c) ? kSpace : kOther;
    return t;
  }();
  std::vector<std::uint32_t> cps;
  std::vector<Class> classes;  // of each code point, computed once
  std::vector<int> offs;       // byte offset of each code point, plus the end
  cps.reserve(text.size());
  classes.reserve(text.size());
  offs.reserve(text.size() + 1);
  for (std::size_t i = 0; i < text.size();) {
    int len = 1;
    const unsigned char c = static_cast<unsigned char>(text[i]);
    std::uint32_t cp = c;
    Class k;
    if (c < 0x80) {
      k = kAscii[c];
    } else {
      std::int32_t d = utf8_decode(text, i, &len);
      cp = d < 0 ? 0xfffd : static_cast<std::uint32_t>(d);
      k = is_letter(cp) ? kLetter : is_number(cp) ? kNumber : is_whitespace(cp) ? kSpace : kOther;
    }
    cps.push_back(cp);
    classes.push_back(k);
    offs.push_back(static_cast<int>(i));
    i += len;
  }
  offs.push_back(static_cast<int>(text.size()));
  const int n = static_cast<int>(cps.size());
  auto cls = [&](int i) { return classes[i]; };
  std::vector<std::pair<int, int>> pieces;
  int i = 0;
  while (i < n) {
    int end = -1;
    // 1. contractions
    if (cps[i] == '\'' && i + 1 < n) {
      std::uint32_t a = cps[i + 1], b = i + 2 < n ? cps[i + 2] : 0;
      if (a == 's' || a == 't' || a == 'm' || a == 'd') end = i + 2;
      else if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) end = i + 3;
    }
    // 2-4. an optional space, then a run of one class
    if (end < 0) {
      int j = (cps[i] == ' ' && i + 1 < n) ? i + 1 : i;
      for (Class want : {kLetter, kNumber, kOther}) {
        int start = (j > i && cls(j) == want) ? j : i;
        if (cls(start) != want) continue;
        int k = start;
        while (k < n && cls(k) == want) k++;
        end = k;
        break;
      }
    }
    // 5-6. white space: the run, minus its last character if a non-space follows
    if (end < 0) {
      int k = i;
      while (k < n && cls(k) == kSpace) k++;
      end = (k < n && k - i > 1) ? k - 1 : k;
    }
    pieces.emplace_back(offs[i], offs[end]);
    i = end;
  }
  return pieces;
}

namespace {

using Parts = std::vector<std::pair<std::pair<int, int>, bool>>;  // (span, is_match), tiling the text

Parts label(std::size_t size, const std::vector<std::pair<int, int>>& matches) {
  Parts parts;
  int prev = 0;
  for (auto [b, e] : matches) {
    if (b > prev) parts.push_back({{prev, b}, false});
    parts.push_back({{b, e}, true});
    prev = e;
  }
  if (static_cast<std::size_t>(prev) < size) parts.push_back({{prev, static_cast<int>(size)}, false});
  return parts;
}

// Hugging Face's split_off_matches, behaviour by behaviour.
std::vector<std::pair<int, int>> merge_parts(Parts parts, SplitBehavior behavior) {
  std::vector<std::pair<int, int>> out;
  bool previous_match = false;
  switch (behavior) {
    case SplitBehavior::removed:
      for (auto& [span, m] : parts) if (!m) out.push_back(span);
      break;
    case SplitBehavior::isolated:
      for (auto& [span, m] : parts) out.push_back(span);
      break;
    case SplitBehavior::merged_with_previous:
      for (auto& [span, m] : parts) {
        if (m && !previous_match && !out.empty()) out.back().second = span.second;
        else out.push_back(span);
        previous_match = m;
      }
      break;
    case SplitBehavior::merged_with_next:
      for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
        if (it->second && !previous_match && !out.empty()) out.back().first = it->first.first;
        else out.push_back(it->first);
        previous_match = it->second;
      }
      std::reverse(out.begin(), out.end());
      break;
    case SplitBehavior::contiguous:
      for (auto& [span, m] : parts) {
        if (m == previous_match && !out.empty()) out.back().second = span.second;
        else out.push_back(span);
        previous_match = m;
      }
      break;
  }
  return out;
}

// The spans of the characters for which pred holds, one match per character.
template <class Pred>
std::vector<std::pair<int, int>> char_matches(std::string_view text, Pred pred) {
  std::vector<std::pair<int, int>> out;
  for (std::size_t i = 0; i < text.size();) {
    int len = 1;
    std::int32_t cp = utf8_decode(text, i, &len);
    if (len <= 0) len = 1;
    if (cp >= 0 && pred(static_cast<std::uint32_t>(cp))) out.emplace_back(static_cast<int>(i), static_cast<int>(i) + len);
    i += len;
  }
  return out;
}

bool is_white_space(std::uint32_t cp) { return is_whitespace(cp); }

bool is_punctuation(std::uint32_t cp) {  // Hugging Face: ASCII punctuation or a Unicode P* category
  if (cp < 0x80) return (cp >= 0x21 && cp <= 0x2f) || (cp >= 0x3a && cp <= 0x40) || (cp >= 0x5b && cp <= 0x60) || (cp >= 0x7b && cp <= 0x7e);
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(cp))) {
    case UTF8PROC_CATEGORY_PC: case UTF8PROC_CATEGORY_PD: case UTF8PROC_CATEGORY_PS: case UTF8PROC_CATEGORY_PE:
    case UTF8PROC_CATEGORY_PI: case UTF8PROC_CATEGORY_PF: case UTF8PROC_CATEGORY_PO:
      return true;
    default:
      return false;
  }
}

void split_into(const AlignedText& piece, const std::vector<std::pair<int, int>>& matches, SplitBehavior behavior,
                bool invert, std::vector<AlignedText>& out) {
  Parts parts = label(piece.text.size(), matches);
  if (invert)
    for (auto& p : parts) p.second = !p.second;
  for (auto [b, e] : merge_parts(std::move(parts), behavior))
    if (e > b) out.push_back(piece.slice(b, e));
}

std::vector<std::pair<int, int>> literal_matches(std::string_view text, std::string_view pattern) {
  std::vector<std::pair<int, int>> out;
  if (pattern.empty()) return out;
  for (std::size_t at = text.find(pattern); at != std::string_view::npos; at = text.find(pattern, at + pattern.size()))
    out.emplace_back(static_cast<int>(at), static_cast<int>(at + pattern.size()));
  return out;
}

}  // namespace

std::vector<AlignedText> pre_tokenizer_apply(const PreTokenizer& p, std::vector<AlignedText> pieces, bool first) {
  using K = PreTokenizer::Kind;
  if (p.kind == K::sequence) {
    for (const PreTokenizer& s : p.steps) pieces = pre_tokenizer_apply(s, std::move(pieces), first);
    return pieces;
  }
  std::vector<AlignedText> out;
  for (std::size_t k = 0; k < pieces.size(); k++) {
    AlignedText& piece = pieces[k];
    switch (p.kind) {
      case K::byte_level: {
        if (p.add_prefix_space && (piece.text.empty() || piece.text[0] != ' ')) {
          AlignedText t;
          t.append(" ", piece.input_begin(0), piece.input_begin(0));
          t.append(piece);
          piece = std::move(t);
        }
        if (!p.use_regex) {
          if (!piece.text.empty()) out.push_back(std::move(piece));
          break;
        }
        for (auto [b, e] : byte_level_split(piece.text))
          if (e > b) out.push_back(piece.slice(b, e));
        break;
      }
      case K::split:
        split_into(piece, p.regex ? p.regex->find_all(piece.text) : literal_matches(piece.text, p.pattern), p.behavior,
                   p.invert, out);
        break;
      case K::whitespace:
        split_into(piece, p.regex->find_all(piece.text), SplitBehavior::removed, true, out);
        break;
      case K::whitespace_split:
        split_into(piece, char_matches(piece.text, is_white_space), SplitBehavior::removed, false, out);
        break;
      case K::digits:
        split_into(piece, char_matches(piece.text, [](std::uint32_t c) { return is_number(c); }),
                   p.individual_digits ? SplitBehavior::isolated : SplitBehavior::contiguous, false, out);
        break;
      case K::punctuation:
        split_into(piece, char_matches(piece.text, is_punctuation), p.behavior, false, out);
        break;
      case K::metaspace: {
        AlignedText t;
        const bool prepend = p.prepend_scheme == PreTokenizer::Prepend::always ||
                             (p.prepend_scheme == PreTokenizer::Prepend::first && first && k == 0);
        for (std::size_t i = 0; i < piece.text.size(); i++) {
          if (piece.text[i] == ' ') t.append(p.replacement, piece.begin[i], piece.end[i]);
          else t.append(piece.slice(i, i + 1));
        }
        if (prepend && t.text.compare(0, p.replacement.size(), p.replacement) != 0) {
          AlignedText with;
          with.append(p.replacement, piece.input_begin(0), piece.input_begin(0));
          with.append(t);
          t = std::move(with);
        }
        if (p.metaspace_split) split_into(t, literal_matches(t.text, p.replacement), SplitBehavior::merged_with_next, false, out);
        else if (!t.text.empty()) out.push_back(std::move(t));
        break;
      }
      case K::sequence:
        break;
    }
  }
  return out;
}

}  // namespace headlab::model
