// model/unicode.h — the little Unicode the tokenizer needs: strict UTF-8 decoding and the
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

}  // namespace headlab::model
