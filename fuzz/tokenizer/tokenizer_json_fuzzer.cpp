// fuzz/tokenizer/tokenizer_json_fuzzer.cpp — libFuzzer target: any bytes as a tokenizer.json.
// The input is the file, optionally followed by a NUL byte and a text to encode with it.
// Loading must give a tokenizer or an error, never a crash; a tokenizer must encode its
// texts into ids of its vocabulary whose input spans are in order and inside the text, and
// must decode them.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/unicode.h"

namespace {

void check(const headlab::model::BpeTokenizer& tok, std::string_view text) {
  for (bool with_template : {false, true}) {
    auto toks = tok.encode(text, {.template_tokens = with_template});
    if (!toks) continue;  // invalid UTF-8, or a character the vocabulary cannot spell
    int pos = 0;
    std::vector<int> ids;
    for (const auto& t : *toks) {
      if (t.id < 0 || t.id >= tok.vocab_size()) std::abort();
      if (t.begin < pos || t.end < t.begin || t.end > static_cast<int>(text.size())) std::abort();
      pos = t.begin;
      ids.push_back(t.id);
    }
    if (!tok.decode(ids)) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::size_t nul = input.find('\0');
  const std::string_view json = input.substr(0, nul);
  auto tok = headlab::model::BpeTokenizer::from_tokenizer_json(json, "tokenizer.json");
  if (!tok) return 0;
  check(*tok, "Hello world, it's 2026! caf\u00e9 \U0001F355 <s> <|endoftext|>  \n\n x");
  if (nul != std::string_view::npos) check(*tok, input.substr(nul + 1));
  return 0;
}
