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

// What encoding the answer (api/model_codec.cpp's encode_model_run) adds while it runs, at most,
// per value: the rows of 5-decimal numbers are a JSON tree (a node of kJsonNode bytes each) and
// then text ("-12345.12345," at most 13 characters for a view's number; a float's shortest
// round-trip as a double, "-1.2345678901234567e-05,", 24 for a logit); the compact views are
// base64 of 2 bytes a probability and 4 a score (8/3 and 16/3 characters, 6 allowing for the
// padding). Tokens and predictions are a few nodes each, counted in kEncodeSlack per token.
constexpr std::size_t kJsonNode = 16, kViewText = 13, kLogitText = 24, kCompactText = 6, kEncodeSlack = 512;

std::size_t model_run_result_bytes(const ModelRunResult& r) {
  std::size_t views = r.rollout.capacity();
  for (const HeadView& h : r.heads) views += h.pattern.capacity() + h.value_weighted.capacity() + h.scores.capacity();
  const std::size_t logits = r.logits.capacity();
  const std::size_t kept = (views + logits) * sizeof(float) + r.heads.capacity() * sizeof(HeadView) +
                           r.tokens.capacity() * sizeof(model::Token);
  const std::size_t encoding = views * (r.compact ? kCompactText : kJsonNode + kViewText) +
                               logits * (kJsonNode + kLogitText) + (r.tokens.size() + r.heads.size() + 1) * kEncodeSlack;
  return kept + encoding;
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
