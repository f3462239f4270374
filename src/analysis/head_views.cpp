// analysis/head_views.cpp — value norms, value-weighted patterns and attention rollout.
#include "analysis/head_views.h"

#include <algorithm>
#include <cmath>

#include "util/check.h"

namespace headlab::analysis {

std::vector<double> value_norms(const model::Parameters& params, const model::ActivationRecord& r, int layer,
                                int head) {
  // D = NH * HS is C for GPT-2; other families may differ (model/forward.h)
  const int T = r.T, C = r.C, HS = r.HS > 0 ? r.HS : C / r.NH, D = r.NH * HS;
  HEADLAB_CHECK(!r.qkv.empty() && layer >= 0 && layer < r.L && head >= 0 && head < r.NH);
  const float* qkv = r.qkv.data() + std::size_t(layer) * T * 3 * D;  // (T, 3D)
  std::vector<float> wo(std::size_t(C) * D);                          // (C, D) out x in, as float32
  model::parameters_read_rows(params, &model::ParameterTensors::attprojw, layer, 0, C, wo.data());
  const float* W = wo.data();
  // f = W[:, h*HS:(h+1)*HS] @ v_k^h  (C)
  std::vector<double> norm(T);
  for (int k = 0; k < T; ++k) {
    const float* v = qkv + std::size_t(k) * 3 * D + 2 * D + head * HS;  // (HS)
    double sum_sq = 0.0;
    for (int c = 0; c < C; ++c) {
      const float* w = W + std::size_t(c) * D + head * HS;
      double f = 0.0;
      for (int i = 0; i < HS; ++i) f += double(w[i]) * v[i];
      sum_sq += f * f;
    }
    norm[k] = std::sqrt(sum_sq);
  }
  return norm;
}

std::vector<float> value_weighted_pattern(const model::Parameters& params, const model::ActivationRecord& r,
                                          int layer, int head) {
  const int T = r.T;
  HEADLAB_CHECK(!r.pattern.empty());
  const std::vector<double> norm = value_norms(params, r, layer, head);
  std::vector<float> out(model::ActivationRecord::packed_size(T));
  std::vector<double> w(T);
  for (int q = 0; q < T; ++q) {
    const float* p = r.pattern_row(layer, head, q);
    float* o = out.data() + model::ActivationRecord::packed_offset(q);
    double total = 0.0;
    for (int k = 0; k <= q; ++k) total += w[k] = p[k] * norm[k];
    for (int k = 0; k <= q; ++k) o[k] = total > 0 ? static_cast<float>(w[k] / total) : 0.0f;
  }
  return out;
}

std::vector<float> attention_rollout(const model::ActivationRecord& r) {
  const int T = r.T;
  HEADLAB_CHECK(!r.pattern.empty());
  // Dense (T, T) lower-triangular products; T is at most n_ctx.
  std::vector<double> R(std::size_t(T) * T, 0.0), A(std::size_t(T) * T), next(std::size_t(T) * T);
  for (int i = 0; i < T; ++i) R[std::size_t(i) * T + i] = 1.0;
  for (int l = 0; l < r.L; ++l) {
    std::fill(A.begin(), A.end(), 0.0);
    for (int q = 0; q < T; ++q) {
      for (int h = 0; h < r.NH; ++h) {
        const float* p = r.pattern_row(l, h, q);
        for (int k = 0; k <= q; ++k) A[std::size_t(q) * T + k] += 0.5 * p[k] / r.NH;
      }
      A[std::size_t(q) * T + q] += 0.5;
    }
    // next = A @ R (both lower triangular)
    for (int q = 0; q < T; ++q)
      for (int k = 0; k <= q; ++k) {
        double s = 0.0;
        for (int m = k; m <= q; ++m) s += A[std::size_t(q) * T + m] * R[std::size_t(m) * T + k];
        next[std::size_t(q) * T + k] = s;
      }
    std::swap(R, next);
  }
  std::vector<float> out(model::ActivationRecord::packed_size(T));
  for (int q = 0; q < T; ++q)
    for (int k = 0; k <= q; ++k)
      out[model::ActivationRecord::packed_offset(q) + k] = static_cast<float>(R[std::size_t(q) * T + k]);
  return out;
}

}  // namespace headlab::analysis
