// tokenizer/byte_alphabet.cpp — the table of byte_alphabet.h, built once.
#include "tokenizer/byte_alphabet.h"

#include "tokenizer/unicode.h"

namespace headlab::model {
namespace {

struct ByteAlphabet {
  std::array<std::string, 256> text;          // byte -> UTF-8 of its character
  std::array<std::uint32_t, 256> code_point;  // byte -> its character
  std::array<unsigned char, 256> order;       // id -> byte (ascending code point)
  ByteAlphabet() {
    int n = 0, next = 0;
    for (int b = 0; b < 256; b++) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
      code_point[b] = printable ? static_cast<std::uint32_t>(b) : static_cast<std::uint32_t>(256 + n++);
      utf8_append(text[b], code_point[b]);
    }
    // printable bytes first (their code points are below 256), then the others
    for (int b = 0; b < 256; b++)
      if (code_point[b] < 256) order[next++] = static_cast<unsigned char>(b);
    for (int b = 0; b < 256; b++)
      if (code_point[b] >= 256) order[next++] = static_cast<unsigned char>(b);
  }
};

const ByteAlphabet& alphabet() {
  static const ByteAlphabet a;
  return a;
}

}  // namespace

const std::string& byte_to_unicode(unsigned char byte) { return alphabet().text[byte]; }

int unicode_to_byte(std::uint32_t cp) {
  // the printable bytes are their own code points; the others are U+0100 + n in byte order
  if (cp < 256) return alphabet().code_point[cp] == cp ? static_cast<int>(cp) : -1;
  if (cp >= 256 + 68) return -1;  // 256 - 188 printable = 68 stand-ins
  return alphabet().order[188 + (cp - 256)];
}

const std::array<unsigned char, 256>& byte_order() { return alphabet().order; }

}  // namespace headlab::model
