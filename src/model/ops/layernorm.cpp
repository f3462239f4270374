// model/ops/layernorm.cpp — LayerNorm forward and backward (see layernorm.h).
#include "model/ops/layernorm.h"

#include <cmath>
#include <cstddef>

namespace headlab::model {

void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                       const float* bias, int N, int C, float eps) {
  for (int n = 0; n < N; n++) {
    const float* x = inp + std::size_t(n) * C;
    float m = 0.0f;
    for (int i = 0; i < C; i++) m += x[i];
    m /= C;
    // Two passes over x (mean, then variance about it): one-pass E[x^2]-E[x]^2 cancels.
    float v = 0.0f;
    for (int i = 0; i < C; i++) {
      float d = x[i] - m;
      v += d * d;
    }
    v /= C;
    float s = 1.0f / std::sqrt(v + eps);
    float* o = out + std::size_t(n) * C;
    for (int i = 0; i < C; i++) o[i] = (x[i] - m) * s * weight[i] + bias[i];
    if (mean) mean[n] = m;
    if (rstd) rstd[n] = s;
  }
}

void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                        const float* weight, const float* mean, const float* rstd, int N, int C) {
  for (int n = 0; n < N; n++) {
    const float* dout_n = dout + std::size_t(n) * C;
    const float* inp_n = inp + std::size_t(n) * C;
    float* dinp_n = dinp + std::size_t(n) * C;
    float m = mean[n];
    float s = rstd[n];
    // two reductions: mean of g and mean of g * xhat, g = dout * w
    float dnorm_mean = 0.0f;
    float dnorm_norm_mean = 0.0f;
    for (int i = 0; i < C; i++) {
      float xhat = (inp_n[i] - m) * s;
      float g = weight[i] * dout_n[i];
      dnorm_mean += g;
      dnorm_norm_mean += g * xhat;
    }
    dnorm_mean /= C;
    dnorm_norm_mean /= C;
    for (int i = 0; i < C; i++) {
      float xhat = (inp_n[i] - m) * s;
      float g = weight[i] * dout_n[i];
      dbias[i] += dout_n[i];
      dweight[i] += xhat * dout_n[i];
      dinp_n[i] += (g - dnorm_mean - xhat * dnorm_norm_mean) * s;
    }
  }
}

}  // namespace headlab::model
