// tokenizer/added_tokens.cpp — the matcher of tokenizer/added_tokens.h.
#include "tokenizer/added_tokens.h"

#include <algorithm>
#include <cstdint>

#include "tokenizer/unicode.h"

namespace headlab::model {

namespace {

bool is_word_char(std::int32_t cp) {  // Rust's char::is_alphanumeric or '_'
  return cp == '_' || (cp >= 0 && (is_letter(static_cast<std::uint32_t>(cp)) || is_number(static_cast<std::uint32_t>(cp))));
}

// The code point that ends just before byte i (-1 at the start).
std::int32_t char_before(std::string_view text, std::size_t i, std::size_t* start) {
  if (i == 0) return -1;
  std::size_t s = i - 1;
  while (s > 0 && (static_cast<unsigned char>(text[s]) & 0xc0) == 0x80) s--;
  int len;
  if (start) *start = s;
  return utf8_decode(text, s, &len);
}

}  // namespace

AddedTokenMatcher::AddedTokenMatcher(std::vector<AddedToken> tokens) : tokens_(std::move(tokens)), by_first_byte_(256) {
  for (std::size_t i = 0; i < tokens_.size(); i++)
    if (!tokens_[i].content.empty())
      by_first_byte_[static_cast<unsigned char>(tokens_[i].content[0])].push_back(static_cast<int>(i));
  for (auto& v : by_first_byte_)
    std::stable_sort(v.begin(), v.end(), [&](int a, int b) { return tokens_[a].content.size() > tokens_[b].content.size(); });
}

std::vector<AddedTokenMatch> AddedTokenMatcher::find(std::string_view text, bool with_special) const {
  std::vector<AddedTokenMatch> out;
  if (tokens_.empty()) return out;
  int floor = 0;  // a strip may not reach into the previous match
  for (std::size_t i = 0; i < text.size();) {
    const AddedToken* hit = nullptr;
    for (int k : by_first_byte_[static_cast<unsigned char>(text[i])]) {
      const AddedToken& t = tokens_[k];
      if (t.special && !with_special) continue;
      if (text.compare(i, t.content.size(), t.content) == 0) {
        hit = &t;
        break;
      }
    }
    if (hit && hit->single_word) {
      int len;
      const std::size_t e = i + hit->content.size();
      const bool left_ok = !is_word_char(char_before(text, i, nullptr));
      const bool right_ok = e >= text.size() || !is_word_char(utf8_decode(text, e, &len));
      if (!left_ok || !right_ok) hit = nullptr;
    }
    if (!hit) {
      i++;
      continue;
    }
    std::size_t b = i, e = i + hit->content.size();
    if (hit->lstrip) {
      std::size_t s;
      while (static_cast<int>(b) > floor) {
        std::int32_t cp = char_before(text, b, &s);
        if (cp < 0 || !is_whitespace(static_cast<std::uint32_t>(cp)) || static_cast<int>(s) < floor) break;
        b = s;
      }
    }
    if (hit->rstrip) {
      int len;
      while (e < text.size()) {
        std::int32_t cp = utf8_decode(text, e, &len);
        if (cp < 0 || !is_whitespace(static_cast<std::uint32_t>(cp))) break;
        e += len;
      }
    }
    out.push_back({hit->id, static_cast<int>(b), static_cast<int>(e)});
    floor = static_cast<int>(e);
    i = e;
  }
  return out;
}

}  // namespace headlab::model
