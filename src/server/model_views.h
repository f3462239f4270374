// server/model_views.h — what the pages draw from one forward's record, beyond the raw
// pattern. All (T, T) results are packed causal halves: row q holds keys 0..q.
//   value-weighted (Kobayashi et al. 2020): w[q][k] = p[q][k] * |f(x_k)|, f(x_k) = W_O^h v_k^h,
//     rows renormalised to sum to 1, so a head that parks on a key whose value is small
//     shows little weight there.
//   rollout (Abnar & Zuidema 2020): A_l = 0.5 * mean_h P_l + 0.5 * I, R = A_L ... A_1.
#pragma once

#include <vector>

#include "model/forward.h"
#include "model/parameters.h"

namespace headlab::server {

// Needs record.pattern and record.qkv. (T*(T+1)/2)
std::vector<float> value_weighted_pattern(const model::Parameters& params, const model::ActivationRecord& record,
                                          int layer, int head);

// Needs record.pattern. (T*(T+1)/2)
std::vector<float> attention_rollout(const model::ActivationRecord& record);

// Loss of the actual next token at each position (T-1 values), from logits (T, V).
std::vector<float> next_token_losses(const std::vector<float>& logits, const std::vector<int>& ids, int V);

}  // namespace headlab::server
