// Fuzzes the lesson's sentence tokenizer: any bytes give tokens or an Error, and the
// tokens of valid text are non-empty, within the limit, and each one valid UTF-8.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "core/attention_pattern.h"
#include "core/pattern_summary.h"
#include "core/sentence.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace headlab::core;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto tokens = tokenize_sentence(text);
  if (!tokens) return 0;
  if (tokens->empty() || static_cast<int>(tokens->size()) > kMaxSentenceTokens) std::abort();
  for (const auto& t : *tokens)
    if (t.empty() || !is_valid_utf8(t)) std::abort();
  // Whatever the words, every head's rows are a distribution and a summary exists.
  for (const HeadInfo& h : constructed_heads()) {
    AttentionPattern p = compute_pattern(h.kind, *tokens, data[0] & 1);
    for (int q = 0; q < p.size(); ++q) {
      double sum = 0;
      for (int k = 0; k < p.size(); ++k) sum += p.weights.at(q, k);
      if (sum < 0.999999 || sum > 1.000001) std::abort();
      if (looks_most_at(p, q).keys.empty()) std::abort();
    }
  }
  return 0;
}
