// tokenizer/decoder.h — a tokenizer.json's decoder, turned into what each token shows: its
// bytes (ByteLevel maps GPT-2's byte alphabet back to bytes; ByteFallback reads "<0x0A>" as
// the byte 0x0A; Replace and Metaspace put back the spaces; Fuse joins, Strip trims the start
// of the whole text). A piece of a multi-byte character stays those bytes, never "�".
//
//   Decoder d{.kind = Decoder::Kind::byte_fallback};
//   decoder_token_bytes(d, "<0xE2>");  // "\xE2"
#pragma once

#include <string>
#include <vector>

namespace headlab::model {

struct Decoder {
  enum class Kind { none, byte_level, metaspace, byte_fallback, fuse, strip, replace, sequence };
  Kind kind = Kind::none;
  std::string pattern, content;     // replace: pattern -> content; strip: the character trimmed
  int strip_start = 0, strip_stop = 0;  // strip
  std::string replacement = "\u2581";   // metaspace
  bool metaspace_prepends = true;       // metaspace: a prefix space was added, drop it
  std::vector<Decoder> steps;           // sequence
};

// The bytes one token stands for (vocabulary spelling in, text bytes out).
std::string decoder_token_bytes(const Decoder& d, const std::string& token);
// What the decoder does once to the joined bytes of all tokens (Strip, Metaspace's prefix).
void decoder_finish(const Decoder& d, std::string& text);

}  // namespace headlab::model
