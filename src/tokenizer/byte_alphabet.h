// tokenizer/byte_alphabet.h — GPT-2's byte alphabet (bytes_to_unicode in encoder.py): each of
// the 256 bytes stands for one printable character, so a token is a visible string with no
// space in it. The printable Latin-1 bytes stand for themselves; every other byte b, in
// order, for U+0100 + n (n counting up): ' ' -> "Ġ" (U+0120), '\n' -> "Ċ" (U+010A).
//
//   byte_to_unicode(' ')  == "\xC4\xA0"   // "Ġ", as UTF-8
//   unicode_to_byte(0x120) == ' '
//   byte_order()[0]       == '!'          // GPT-2's vocab.json gives '!' id 0
//
// The one table of the code base: the tokenizer spells its vocabulary with it, and the
// tokenizer trainer spells what it learned with it.
#pragma once

#include <array>
#include <cstdint>
#include <string>

namespace headlab::model {

// The UTF-8 of the character that stands for `byte`.
const std::string& byte_to_unicode(unsigned char byte);

// The byte that code point `cp` stands for, or -1 when cp is not in the alphabet.
int unicode_to_byte(std::uint32_t cp);

// The 256 bytes in the order of their characters' code points: GPT-2's ids 0..255.
const std::array<unsigned char, 256>& byte_order();

}  // namespace headlab::model
