// analysis/head_views.h — views of a head beyond its raw pattern, from one forward's record.
// (T, T) results are packed causal halves: row q holds keys 0..q at offset q*(q+1)/2.
//   value norm: |f(x_k)| = |W_O^h v_k^h| for every key k: how much a key can write
//     through head h when it is attended to.
//   value-weighted (Kobayashi et al. 2020): w[q][k] = p[q][k] * |f(x_k)|, rows renormalised
//     to sum to 1, so a head that parks on a key whose value is small shows little weight.
//   rollout (Abnar & Zuidema 2020): A_l = 0.5 * mean_h P_l + 0.5 * I, R = A_L ... A_1.
//
//   opt.record.pattern = opt.record.qkv = true;  forward(params, ids, opt, out, ws);
//   std::vector<float> vw = value_weighted_pattern(params, out.record, layer, head);
#pragma once

#include <vector>

#include "model/forward.h"
#include "model/parameters.h"

namespace headlab::analysis {

// |W_O^h v_k^h| for each key k of head `head` in `layer`. Needs record.qkv. (T)
std::vector<double> value_norms(const model::Parameters& params, const model::ActivationRecord& record, int layer,
                                int head);

// Needs record.pattern and record.qkv. (T*(T+1)/2)
std::vector<float> value_weighted_pattern(const model::Parameters& params, const model::ActivationRecord& record,
                                          int layer, int head);

// Needs record.pattern. (T*(T+1)/2)
std::vector<float> attention_rollout(const model::ActivationRecord& record);

}  // namespace headlab::analysis
