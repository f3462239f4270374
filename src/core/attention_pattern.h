// core/attention_pattern.h — one constructed head over one sentence, end to end:
//   scores s(i, j) by rule -> causal mask (optional) -> row softmax -> weights.
//
//   auto tokens = tokenize_sentence(kLessonSentence);
//   AttentionPattern p = compute_pattern(HeadKind::induction, *tokens, /*mask=*/true);
//   p.weights.at(7, 2);   // 0.92: cat (7) looks at chased (2)
//   p.is_masked(0, 1);    // true: reported as masked, never as 0.00
#pragma once

#include <string>
#include <vector>

#include "core/constructed_heads.h"
#include "util/matrix.h"

namespace headlab::core {

struct AttentionPattern {
  std::vector<std::string> tokens;  // (T)
  HeadKind head = HeadKind::previous;
  bool mask = true;
  Matrix scores;   // (T, T) by rule, before the mask
  Matrix weights;  // (T, T) after mask and softmax; rows = queries, columns = keys

  int size() const { return static_cast<int>(tokens.size()); }
  bool is_masked(int query, int key) const { return mask && key > query; }
};

AttentionPattern compute_pattern(HeadKind head, std::vector<std::string> tokens, bool mask);

}  // namespace headlab::core
