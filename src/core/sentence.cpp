// core/sentence.cpp — white-space split, punctuation split, UTF-8 validation.
#include "core/sentence.h"

#include <array>
#include <cstdint>

namespace headlab::core {
namespace {

// Multi-byte punctuation that learners paste from word processors.
constexpr std::array<std::string_view, 14> kUnicodePunctuation = {
    "\u2018", "\u2019", "\u201C", "\u201D", "\u2013", "\u2014", "\u2026",
    "\u00AB", "\u00BB", "\u00BF", "\u00A1", "\u3001", "\u3002", "\u00B7"};

// Length in bytes of the UTF-8 sequence starting with byte c (1 for ASCII).
int utf8_length(unsigned char c) {
  if (c < 0x80) return 1;
  if ((c >> 5) == 0x6) return 2;
  if ((c >> 4) == 0xE) return 3;
  return 4;
}

bool is_space(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
bool is_ascii_letter_or_digit(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c >= 0x80;
}

// Byte length of a punctuation mark starting at text[i], or 0 when there is none.
std::size_t punctuation_at(std::string_view text, std::size_t i) {
  unsigned char c = static_cast<unsigned char>(text[i]);
  if (c < 0x80) {
    bool punct = (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x60) ||
                 (c >= 0x7B && c <= 0x7E);
    if (!punct) return 0;
    // An apostrophe between two letters belongs to the word: don't, o'clock.
    if (c == '\'' && i > 0 && i + 1 < text.size() &&
        is_ascii_letter_or_digit(static_cast<unsigned char>(text[i - 1])) &&
        is_ascii_letter_or_digit(static_cast<unsigned char>(text[i + 1])))
      return 0;
    return 1;
  }
  for (std::string_view mark : kUnicodePunctuation)
    if (text.substr(i, mark.size()) == mark) return mark.size();
  return 0;
}

}  // namespace

bool is_valid_utf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) { ++i; continue; }
    int n;
    std::uint32_t cp;
    if ((c >> 5) == 0x6) { n = 2; cp = c & 0x1F; }
    else if ((c >> 4) == 0xE) { n = 3; cp = c & 0x0F; }
    else if ((c >> 3) == 0x1E) { n = 4; cp = c & 0x07; }
    else return false;
    if (i + n > s.size()) return false;
    for (int k = 1; k < n; ++k) {
      unsigned char cc = static_cast<unsigned char>(s[i + k]);
      if ((cc >> 6) != 0x2) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000)) return false;
    if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += n;
  }
  return true;
}

bool is_punctuation(std::string_view token) {
  if (token.empty()) return false;
  std::size_t n = punctuation_at(token, 0);
  return n == token.size();
}

Result<std::vector<std::string>> tokenize_sentence(std::string_view text, int max_tokens) {
  if (text.size() > kMaxSentenceBytes)
    return make_error(ErrorCode::too_long, "The sentence is " + std::to_string(text.size()) +
                                               " bytes long; at most " + std::to_string(kMaxSentenceBytes) +
                                               " are allowed. Shorten it.");
  if (!is_valid_utf8(text))
    return make_error(ErrorCode::invalid_argument,
                      "The sentence is not valid UTF-8 text. Retype it or paste plain text.");
  std::vector<std::string> tokens;
  std::string word;
  auto flush = [&] {
    if (!word.empty()) tokens.push_back(std::move(word));
    word.clear();
  };
  std::size_t i = 0;
  while (i < text.size()) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (is_space(c)) { flush(); ++i; continue; }
    if (std::size_t p = punctuation_at(text, i); p > 0) {
      flush();
      tokens.emplace_back(text.substr(i, p));
      i += p;
      continue;
    }
    std::size_t n = std::min<std::size_t>(utf8_length(c), text.size() - i);
    word.append(text.substr(i, n));
    i += n;
  }
  flush();
  if (tokens.empty())
    return make_error(ErrorCode::invalid_argument,
                      "The sentence is empty. Type at least one word, for example: " +
                          std::string(kLessonSentence));
  if (static_cast<int>(tokens.size()) > max_tokens)
    return make_error(ErrorCode::too_long, "The sentence has " + std::to_string(tokens.size()) +
                                               " tokens; at most " + std::to_string(max_tokens) +
                                               " are allowed (words and punctuation marks each count "
                                               "as one). Shorten it.");
  return tokens;
}

std::string join_tokens(const std::vector<std::string>& tokens) {
  std::string out;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    if (i) out += ' ';
    out += tokens[i];
  }
  return out;
}

}  // namespace headlab::core
