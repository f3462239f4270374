// The lesson's Induction head through headlab's C++ API: the same three lines of output
// as induction_by_rule.py.
#include <cstdio>

#include "core/attention_pattern.h"
#include "core/head_split.h"
#include "core/pattern_summary.h"
#include "core/sentence.h"

int main() {
  using namespace headlab::core;
  auto words = tokenize_sentence("the cat chased the dog . the cat chased the");
  if (!words) return 1;

  // Score by rule, apply the causal mask, softmax each row.
  AttentionPattern p = compute_pattern(HeadKind::induction, *words, /*mask=*/true);

  const int q = 7;
  LooksMostAt most = looks_most_at(p, q);
  const int k = most.keys.front();
  std::printf("%s (%d) looks most at %s (%d) with weight %.2f\n", p.tokens[q].c_str(), q, p.tokens[k].c_str(), k,
              most.weight);

  double future = 0.0;
  for (int i = 0; i < p.size(); ++i)
    for (int j = 0; j < p.size(); ++j)
      if (p.is_masked(i, j)) future += p.weights.at(i, j);
  std::printf("weight on future keys: %.1f\n", future);

  auto gpt2 = head_split(768, 12);  // GPT-2 small
  std::printf("GPT-2 small: %lld heads of width %lld\n", static_cast<long long>(gpt2->h),
              static_cast<long long>(gpt2->d_k));
  return 0;
}
