// analysis/query_scores.h — one query's attention scores against every key, the keys after it
// too: the step-through's first step ("scores before the mask") for a trained head.
//   s_k = (q_query · k_k) * attention_scale(layer)      k = 0..T-1   (q·k/√HS for GPT-2)
// The forward computes only the causal half (keys 0..query); the rest comes from the q and k
// it recorded (after the rotary, per query head), so the two halves are the same sum.
//
//   opt.record.qkv = true;  forward(params, ids, opt, out, ws);
//   auto s = query_scores_all_keys(out.record, params.config, /*layer=*/1, /*head=*/2, /*query=*/5);
#pragma once

#include <vector>

#include "model/config.h"
#include "model/forward.h"
#include "util/result.h"

namespace headlab::analysis {

// (T,) scores of `query` against keys 0..T-1. record: a forward's record with qkv.
// Errors: invalid_argument for a layer, head or query out of range, or a record without qkv.
Result<std::vector<float>> query_scores_all_keys(const model::ActivationRecord& record, const model::ModelConfig& config,
                                                 int layer, int head, int query);

}  // namespace headlab::analysis
