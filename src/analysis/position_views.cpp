// analysis/position_views.cpp — the word-order lesson's engine numbers (see position_views.h).
#include "analysis/position_views.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "model/ops/layernorm.h"
#include "model/ops/matmul.h"
#include "model/ops/rope.h"

namespace headlab::analysis {

Result<std::vector<float>> content_only_pattern(const model::Parameters& params, std::span<const int> ids, int head) {
  const model::ModelConfig& c = params.config;
  const int T = static_cast<int>(ids.size()), C = c.n_embd, HS = c.head_size(), D = c.q_width();
  if (T == 0) return make_error(ErrorCode::invalid_argument, "The text has no tokens.");
  if (head < 0 || head >= c.n_head)
    return make_error(ErrorCode::invalid_argument,
                      "Head " + std::to_string(head) + " does not exist: layer 0 has heads 0 to " + std::to_string(c.n_head - 1) + ".");
  if (c.norm != model::ModelConfig::Norm::layernorm)
    return make_error(ErrorCode::unsupported, "The content-only view reads LayerNorm models (GPT-2's); this one uses RMSNorm.");
  for (int id : ids)
    if (id < 0 || id >= c.vocab_size)
      return make_error(ErrorCode::invalid_argument, "Token id " + std::to_string(id) + " is outside the vocabulary.");
  std::vector<float> x(std::size_t(T) * C), xn(std::size_t(T) * C);  // (T, C)
  for (int t = 0; t < T; ++t)
    model::parameters_read_rows(params, &model::ParameterTensors::wte, 0, ids[t], 1, x.data() + std::size_t(t) * C);
  model::layernorm_forward(xn.data(), nullptr, nullptr, x.data(), params.t.ln1w, params.t.ln1b, T, C, c.layer_norm_eps);
  // q rows of c_attn for this head at h*HS, k rows of its KV head at D + kv*HS (layer 0).
  std::vector<float> wq(std::size_t(HS) * C), wk(std::size_t(HS) * C);  // (HS, C) each, as float32
  model::parameters_read_rows(params, &model::ParameterTensors::qkvw, 0, head * HS, HS, wq.data());
  model::parameters_read_rows(params, &model::ParameterTensors::qkvw, 0, D + c.kv_head_of(head) * HS, HS, wk.data());
  const float* bq = c.qkv_bias ? params.t.qkvb + std::size_t(head) * HS : nullptr;
  const float* bk = c.qkv_bias ? params.t.qkvb + D + std::size_t(c.kv_head_of(head)) * HS : nullptr;
  std::vector<float> q(std::size_t(T) * HS), k(std::size_t(T) * HS);  // (T, HS)
  model::matmul_forward_naive(q.data(), xn.data(), wq.data(), bq, T, C, HS);
  model::matmul_forward_naive(k.data(), xn.data(), wk.data(), bk, T, C, HS);
  const float scale = c.attention_scale(0);
  std::vector<float> p(std::size_t(T) * T);  // (T, T)
  for (int a = 0; a < T; ++a) {
    float* row = p.data() + std::size_t(a) * T;
    float mx = -INFINITY;
    for (int b = 0; b < T; ++b) {
      double s = 0;
      for (int i = 0; i < HS; ++i) s += double(q[std::size_t(a) * HS + i]) * k[std::size_t(b) * HS + i];
      row[b] = float(s) * scale;
      mx = std::max(mx, row[b]);
    }
    double sum = 0;
    for (int b = 0; b < T; ++b) sum += (row[b] = std::exp(row[b] - mx));  // subtract the max: exp overflows
    for (int b = 0; b < T; ++b) row[b] = float(row[b] / sum);
  }
  return p;
}

std::vector<float> position_similarity(const float* P, int N, int C) {
  std::vector<double> norm(N);
  for (int a = 0; a < N; ++a) {
    double s = 0;
    for (int i = 0; i < C; ++i) s += double(P[std::size_t(a) * C + i]) * P[std::size_t(a) * C + i];
    norm[a] = std::sqrt(s);
  }
  std::vector<float> out(std::size_t(N) * N);  // (N, N)
  for (int a = 0; a < N; ++a)
    for (int b = 0; b < N; ++b) {
      double s = 0;
      for (int i = 0; i < C; ++i) s += double(P[std::size_t(a) * C + i]) * P[std::size_t(b) * C + i];
      const double d = norm[a] * norm[b];
      out[std::size_t(a) * N + b] = d > 0 ? float(s / d) : 0.0f;
    }
  return out;
}

std::vector<float> sinusoidal_positions(int N, int C) {
  std::vector<float> pe(std::size_t(N) * C);  // (N, C)
  for (int t = 0; t < N; ++t)
    for (int i = 0; 2 * i < C; ++i) {
      const double a = t / std::pow(10000.0, double(2 * i) / C);
      pe[std::size_t(t) * C + 2 * i] = float(std::sin(a));
      if (2 * i + 1 < C) pe[std::size_t(t) * C + 2 * i + 1] = float(std::cos(a));
    }
  return pe;
}

Result<std::vector<RopeDot>> rope_dots(const std::vector<float>& q, const std::vector<float>& k, float theta,
                                       const std::vector<std::pair<int, int>>& pairs) {
  const int HS = static_cast<int>(q.size());
  if (HS == 0 || q.size() != k.size() || HS % 2 != 0 || HS > 512)
    return make_error(ErrorCode::invalid_argument, "Send q and k of the same even size, 2 to 512 numbers (they had " +
                                                       std::to_string(q.size()) + " and " + std::to_string(k.size()) + ").");
  if (std::isinf(theta) || theta > 1e9f)  // a double past float's range arrives here as inf
    return make_error(ErrorCode::invalid_argument, "The base theta is at most 1,000,000,000 here (Llama 3 uses 500000).");
  if (!(theta > 1.0f))
    return make_error(ErrorCode::invalid_argument, "The base theta must be a number above 1, like 10000.");
  if (pairs.empty() || pairs.size() > 256)
    return make_error(ErrorCode::invalid_argument, "Send 1 to 256 pairs of positions [m, n].");
  int maxpos = 0;
  for (auto [m, n] : pairs) {
    if (m < 0 || n < 0 || m > kMaxRopePosition || n > kMaxRopePosition)
      return make_error(ErrorCode::invalid_argument, "Positions lie in 0 to " + std::to_string(kMaxRopePosition) + "; got [" +
                                                         std::to_string(m) + ", " + std::to_string(n) + "].");
    maxpos = std::max({maxpos, m, n});
  }
  // One row per position up to the largest asked for, each a copy of q (or k); the engine's
  // rope_forward turns row t by t times each pair's frequency.
  const int T = maxpos + 1;
  std::vector<float> rq(std::size_t(T) * HS), rk(std::size_t(T) * HS);  // (T, HS)
  for (int t = 0; t < T; ++t) {
    std::copy(q.begin(), q.end(), rq.begin() + std::size_t(t) * HS);
    std::copy(k.begin(), k.end(), rk.begin() + std::size_t(t) * HS);
  }
  model::rope_forward(rq.data(), T, 1, HS, HS, HS, /*interleaved=*/false, theta, 1.0f);
  model::rope_forward(rk.data(), T, 1, HS, HS, HS, /*interleaved=*/false, theta, 1.0f);
  std::vector<RopeDot> out;
  for (auto [m, n] : pairs) {
    RopeDot d{m, n, {rq.begin() + std::size_t(m) * HS, rq.begin() + std::size_t(m + 1) * HS},
              {rk.begin() + std::size_t(n) * HS, rk.begin() + std::size_t(n + 1) * HS}, 0.0};
    for (int i = 0; i < HS; ++i) d.dot += double(d.q[i]) * d.k[i];
    out.push_back(std::move(d));
  }
  return out;
}

Result<std::vector<RopePair>> rope_wavelengths(double theta, int head_size) {
  if (!std::isfinite(theta) || theta <= 1.0)
    return make_error(ErrorCode::invalid_argument,
                      "The base theta must be a number above 1: GPT-NeoX uses 10000, Llama 3 uses 500000.");
  if (theta > 1e9) return make_error(ErrorCode::invalid_argument, "The base theta is at most 1,000,000,000 here.");
  if (head_size < 2 || head_size > 1024 || head_size % 2 != 0)
    return make_error(ErrorCode::invalid_argument,
                      "The head size must be an even whole number from 2 to 1024 (RoPE turns pairs of channels); got " +
                          std::to_string(head_size) + ".");
  std::vector<RopePair> out;
  for (int i = 0; i < head_size / 2; ++i) {
    const double f = std::pow(theta, -2.0 * i / head_size);
    out.push_back({i, f, 2.0 * M_PI / f});
  }
  return out;
}

}  // namespace headlab::analysis
