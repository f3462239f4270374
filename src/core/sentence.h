// core/sentence.h — the lesson's word tokenizer: split on white space, and every
// punctuation mark becomes a token of its own ("dog." -> "dog", ".").
//
//   auto tokens = tokenize_sentence("the cat chased the dog.");  // 6 tokens
//   if (!tokens) puts(tokens.error().message.c_str());
//
// Errors: invalid_argument for empty text or invalid UTF-8; too_long past max_tokens
// or max_bytes. Apostrophes between letters stay inside a word ("don't").
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace headlab::core {

inline constexpr int kMaxSentenceTokens = 32;
inline constexpr std::size_t kMaxSentenceBytes = 2000;

// The sentence of the first lesson: 10 tokens, positions 0-9.
inline constexpr std::string_view kLessonSentence = "the cat chased the dog . the cat chased the";

Result<std::vector<std::string>> tokenize_sentence(std::string_view text,
                                                   int max_tokens = kMaxSentenceTokens);

// True when the token is one punctuation mark (ASCII or common typographic marks).
bool is_punctuation(std::string_view token);

// True when bytes are well-formed UTF-8 (no overlongs, no surrogates, <= U+10FFFF).
bool is_valid_utf8(std::string_view bytes);

// The tokens joined with single spaces: the canonical form of a sentence.
std::string join_tokens(const std::vector<std::string>& tokens);

}  // namespace headlab::core
