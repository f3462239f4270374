// analysis/query_scores.cpp — q·k for one query and every key, from the recorded q and k.
#include "analysis/query_scores.h"

#include <cstddef>
#include <string>

#include "model/head_range.h"

namespace headlab::analysis {

Result<std::vector<float>> query_scores_all_keys(const model::ActivationRecord& r, const model::ModelConfig& c, int layer,
                                                 int head, int query) {
  if (auto s = model::check_layer_head(c, layer, head); !s) return tl::unexpected(s.error());
  if (query < 0 || query >= r.T)
    return make_error(ErrorCode::invalid_argument,
                      "query must be a token position from 0 to " + std::to_string(r.T - 1) + ".");
  const int D = r.NH * r.HS;
  if (r.qkv.size() != std::size_t(r.L) * r.T * 3 * D)
    return make_error(ErrorCode::invalid_argument, "The record holds no q, k and v: ask the forward for record.qkv.");
  const float scale = c.attention_scale(layer);
  const float* layer_qkv = r.qkv.data() + std::size_t(layer) * r.T * 3 * D;  // (T, 3*D)
  const float* q = layer_qkv + std::size_t(query) * 3 * D + head * r.HS;     // (HS,)
  std::vector<float> scores(r.T);                                            // (T,)
  for (int key = 0; key < r.T; ++key) {
    const float* k = layer_qkv + std::size_t(key) * 3 * D + D + head * r.HS;  // (HS,)
    float dot = 0.0f;
    for (int i = 0; i < r.HS; ++i) dot += q[i] * k[i];
    scores[key] = dot * scale;
  }
  return scores;
}

}  // namespace headlab::analysis
