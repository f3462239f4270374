// server/model_service/model_views.cpp — windows over packed causal halves, and the answer of a run.
#include "server/model_service/model_views.h"

#include <algorithm>

#include "model/forward.h"
#include "util/check.h"

namespace headlab::server {

int window_row_size(const TokenWindow& w, int query) {
  return std::max(0, std::min(w.keys.end, query + 1) - w.keys.begin);
}

std::size_t window_cell_count(const TokenWindow& w) {
  std::size_t n = 0;
  for (int q = w.queries.begin; q < w.queries.end; ++q) n += window_row_size(w, q);
  return n;
}

std::vector<float> window_cells(const float* packed, const TokenWindow& w) {
  HEADLAB_CHECK(w.queries.begin >= 0 && w.queries.begin <= w.queries.end && w.keys.begin >= 0 &&
                w.keys.begin <= w.keys.end);
  std::vector<float> out;
  out.reserve(window_cell_count(w));
  for (int q = w.queries.begin; q < w.queries.end; ++q) {
    const float* row = packed + model::ActivationRecord::packed_offset(q) + w.keys.begin;  // keys k..q
    out.insert(out.end(), row, row + window_row_size(w, q));
  }
  return out;
}

std::size_t model_run_result_bytes(const ModelRunResult& r) {
  std::size_t floats = r.rollout.capacity() + r.logits.capacity();
  for (const HeadView& h : r.heads) floats += h.pattern.capacity() + h.value_weighted.capacity() + h.scores.capacity();
  return floats * sizeof(float) + r.heads.capacity() * sizeof(HeadView) + r.tokens.capacity() * sizeof(model::Token);
}

ModelRunResult model_run_result(analysis::RunInput input, analysis::RunReport report, const model::ModelConfig& c,
                                const analysis::RunViews& sends, const std::optional<TokenWindow>& window) {
  ModelRunResult r;
  r.tokens = std::move(input.tokens);
  r.truncated = input.truncated;
  r.n_layer = c.n_layer;
  r.n_head = c.n_head;
  r.sends = sends;
  r.heads = std::move(report.heads);
  r.rollout = std::move(report.rollout);
  r.outcome = std::move(report.outcome);
  r.window = window;
  r.V = report.V;
  r.logits = std::move(report.logits);
  return r;
}

}  // namespace headlab::server
