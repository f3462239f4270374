// core/attention_pattern.cpp — rule, mask, softmax.
#include "core/attention_pattern.h"

#include "core/causal_mask.h"
#include "core/softmax.h"

namespace headlab::core {

AttentionPattern compute_pattern(HeadKind head, std::vector<std::string> tokens, bool mask) {
  AttentionPattern p;
  p.head = head;
  p.mask = mask;
  p.scores = constructed_head_scores(head, tokens);
  p.tokens = std::move(tokens);
  Matrix masked = p.scores;
  if (mask) causal_mask_apply(masked);
  softmax_forward(p.weights, masked);
  return p;
}

}  // namespace headlab::core
