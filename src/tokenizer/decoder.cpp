// tokenizer/decoder.cpp — the decoders of tokenizer/decoder.h.
#include "tokenizer/decoder.h"

#include "tokenizer/byte_alphabet.h"
#include "tokenizer/unicode.h"

namespace headlab::model {

namespace {

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  if (from.empty()) return s;
  for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
  return s;
}

int hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

}  // namespace

std::string decoder_token_bytes(const Decoder& d, const std::string& token) {
  using K = Decoder::Kind;
  switch (d.kind) {
    case K::none: case K::fuse: case K::strip:
      return token;
    case K::byte_level: {
      std::string out;
      for (std::size_t i = 0; i < token.size();) {
        int len;
        std::int32_t cp = utf8_decode(token, i, &len);
        if (len <= 0) len = 1;
        const int byte = cp >= 0 ? unicode_to_byte(static_cast<std::uint32_t>(cp)) : -1;
        if (byte >= 0) out.push_back(static_cast<char>(byte));
        else out.append(token, i, len);
        i += len;
      }
      return out;
    }
    case K::byte_fallback:
      if (token.size() == 6 && token.compare(0, 3, "<0x") == 0 && token[5] == '>' && hex(token[3]) >= 0 && hex(token[4]) >= 0)
        return std::string(1, static_cast<char>(hex(token[3]) * 16 + hex(token[4])));
      return token;
    case K::replace:
      return replace_all(token, d.pattern, d.content);
    case K::metaspace:
      return replace_all(token, d.replacement, " ");
    case K::sequence: {
      std::string s = token;
      for (const Decoder& step : d.steps) s = decoder_token_bytes(step, s);
      return s;
    }
  }
  return token;
}

void decoder_finish(const Decoder& d, std::string& text) {
  using K = Decoder::Kind;
  if (d.kind == K::sequence) {
    for (const Decoder& step : d.steps) decoder_finish(step, text);
  } else if (d.kind == K::strip && !d.content.empty()) {
    for (int i = 0; i < d.strip_start && text.compare(0, d.content.size(), d.content) == 0; i++) text.erase(0, d.content.size());
    for (int i = 0; i < d.strip_stop && text.size() >= d.content.size() &&
                    text.compare(text.size() - d.content.size(), d.content.size(), d.content) == 0; i++)
      text.resize(text.size() - d.content.size());
  } else if (d.kind == K::metaspace && d.metaspace_prepends && !text.empty() && text[0] == ' ') {
    text.erase(0, 1);
  }
}

}  // namespace headlab::model
