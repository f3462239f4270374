// tokenizer/unicode.h — the little Unicode the tokenizer needs: strict UTF-8 decoding and the
// character classes of GPT-2's pre-tokenisation pattern (\p{L}, \p{N}, and \s as Unicode
// White_Space, as GPT-2's Python `regex`, Oniguruma and Hugging Face's tokenizers read it).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace headlab::model {

// Decodes the code point at text[pos]; sets *len to its byte length. Returns -1 for
// invalid UTF-8 (bad lead byte, truncated sequence, overlong form, surrogate, > U+10FFFF).
std::int32_t utf8_decode(std::string_view text, std::size_t pos, int* len);

// The byte offset of the first invalid UTF-8 sequence, or -1 if `text` is valid.
long long utf8_find_invalid(std::string_view text);

void utf8_append(std::string& out, std::uint32_t cp);

bool is_letter(std::uint32_t cp);      // \p{L}
bool is_number(std::uint32_t cp);      // \p{N}
bool is_whitespace(std::uint32_t cp);  // \s: Unicode White_Space (U+0085 yes, U+FEFF no)
bool is_cased(std::uint32_t cp);           // \p{Cased}
bool is_case_ignorable(std::uint32_t cp);  // \p{Case_Ignorable}

// The full lowercase mapping of one code point, without context, as String.prototype.
// toLowerCase and Rust's str::to_lowercase have it (UnicodeData and the unconditional
// SpecialCasing: U+0130 -> U+0069 U+0307): writes 1 or 2 code points to out, returns how many.
// (Σ's context rule is the caller's: see lowercase_sigma.)
int lowercase_mapping(std::uint32_t cp, std::uint32_t out[2]);
// Σ (U+03A3) at position i of `cps`: ς (U+03C2) when it ends a word — a cased letter before it
// and none after it, skipping case-ignorable characters both ways (Unicode's Final_Sigma) —
// else σ (U+03C3).
std::uint32_t lowercase_sigma(const std::int32_t* cps, std::size_t n, std::size_t i);

}  // namespace headlab::model
