// server/model_service/model_views.h — the server's windows over (T, T) views. A view is a packed causal
// half (row q holds keys 0..q, analysis/head_views.h makes them); an answer carries only a
// window of each view, and window_cells cuts it out; model_run_result shapes the answer.
#pragma once

#include <cstddef>
#include <vector>

#include "server/model_service/model_types.h"

namespace headlab::server {

// Keys row q holds in window w: w.keys.begin..min(w.keys.end, q+1)-1, none when the
// key range starts after q.
int window_row_size(const TokenWindow& w, int query);
// Values a view carries in window w: the sum of window_row_size over its queries.
std::size_t window_cell_count(const TokenWindow& w);
// The cells of a packed causal half inside w, row by row. packed: (T*(T+1)/2) with
// w.queries.end <= T. Returns (window_cell_count(w)); the whole window returns packed.
std::vector<float> window_cells(const float* packed, const TokenWindow& w);

// The answer of a run (analysis::run_model, whose views `window` has cut already): what
// encode_model_run writes, for POST /api/model/run and `headlab run --format json` alike.
ModelRunResult model_run_result(analysis::RunInput input, analysis::RunReport report, const model::ModelConfig& config,
                                const analysis::RunViews& sends, const std::optional<TokenWindow>& window);
// The bytes a run's result keeps (its views, rollout and logits) and, at most, what encoding it
// adds (the JSON tree and text encode_model_run builds, or the compact views' base64): what its
// `held` counts, from the report until the route has encoded it and let it go.
std::size_t model_run_result_bytes(const ModelRunResult& result);

}  // namespace headlab::server
