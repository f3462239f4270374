// train/adamw.cpp — AdamW and the gradient norm.
#include "train/adamw.h"

#include <cmath>

#include "model/ops/fast_exp.h"  // HEADLAB_MULTIVERSION

namespace headlab::train {

HEADLAB_MULTIVERSION
void adamw_update(float* params, float* m, float* v, const float* grads, std::size_t N, float lr,
                  float weight_decay, int t, const AdamWOptions& o) {
  const float c1 = 1.0f - std::pow(o.beta1, static_cast<float>(t));
  const float c2 = 1.0f - std::pow(o.beta2, static_cast<float>(t));
  for (std::size_t i = 0; i < N; ++i) {
    const float g = grads[i];
    m[i] = o.beta1 * m[i] + (1.0f - o.beta1) * g;
    v[i] = o.beta2 * v[i] + (1.0f - o.beta2) * g * g;
    const float mhat = m[i] / c1;
    const float vhat = v[i] / c2;
    params[i] -= lr * (mhat / (std::sqrt(vhat) + o.eps) + weight_decay * params[i]);
  }
}

double grad_sum_of_squares(const float* grads, std::size_t N) {
  // 8 lanes, so the loop vectorises (the order of the sum is fixed: same N, same result)
  double lanes[8] = {};
  std::size_t i = 0;
  for (; i + 8 <= N; i += 8)
    for (int j = 0; j < 8; j++) lanes[j] += static_cast<double>(grads[i + j]) * grads[i + j];
  double sum = 0.0;
  for (; i < N; ++i) sum += static_cast<double>(grads[i]) * grads[i];
  for (int j = 0; j < 8; j++) sum += lanes[j];
  return sum;
}

double grad_norm(const float* grads, std::size_t N) { return std::sqrt(grad_sum_of_squares(grads, N)); }

float clip_factor(double norm, float max_norm) {
  if (max_norm <= 0.0f) return 1.0f;
  const double f = max_norm / (norm + 1e-6);
  return f < 1.0 ? static_cast<float>(f) : 1.0f;
}

}  // namespace headlab::train
