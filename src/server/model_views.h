// server/model_views.h — what the pages draw from one forward's record, beyond the raw
// pattern. All (T, T) results are packed causal halves: row q holds keys 0..q.
//   value-weighted (Kobayashi et al. 2020): w[q][k] = p[q][k] * |f(x_k)|, f(x_k) = W_O^h v_k^h,
//     rows renormalised to sum to 1, so a head that parks on a key whose value is small
//     shows little weight there.
//   rollout (Abnar & Zuidema 2020): A_l = 0.5 * mean_h P_l + 0.5 * I, R = A_L ... A_1.
// An answer carries only a window of each view: window_cells cuts it out of a packed half.
#pragma once

#include <cstddef>
#include <vector>

#include "model/forward.h"
#include "model/parameters.h"
#include "server/model_types.h"

namespace headlab::server {

// Needs record.pattern and record.qkv. (T*(T+1)/2)
std::vector<float> value_weighted_pattern(const model::Parameters& params, const model::ActivationRecord& record,
                                          int layer, int head);

// Needs record.pattern. (T*(T+1)/2)
std::vector<float> attention_rollout(const model::ActivationRecord& record);

// Keys row q holds in window w: w.keys.begin..min(w.keys.end, q+1)-1, none when the
// key range starts after q.
int window_row_size(const TokenWindow& w, int query);
// Values a view carries in window w: the sum of window_row_size over its queries.
std::size_t window_cell_count(const TokenWindow& w);
// The cells of a packed causal half inside w, row by row. packed: (T*(T+1)/2) with
// w.queries.end <= T. Returns (window_cell_count(w)); the whole window returns packed.
std::vector<float> window_cells(const float* packed, const TokenWindow& w);

// Loss of the actual next token at each position (T-1 values), from logits (T, V).
std::vector<float> next_token_losses(const std::vector<float>& logits, const std::vector<int>& ids, int V);

}  // namespace headlab::server
