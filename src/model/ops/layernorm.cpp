// model/ops/layernorm.cpp — LayerNorm forward and backward (see layernorm.h).
// The sums run in 16 lanes so that the loops vectorise (the order of the sum is fixed:
// the same input gives the same result on every call).
#include "model/ops/layernorm.h"

#include <cmath>
#include <cstddef>

#include "model/ops/fast_exp.h"  // HEADLAB_MULTIVERSION

namespace headlab::model {

namespace {

inline float sum16(const float* lanes) {
  float s = 0.0f;
  for (int j = 0; j < 16; j++) s += lanes[j];
  return s;
}

}  // namespace

HEADLAB_MULTIVERSION
void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                       const float* bias, int N, int C, float eps) {
  for (int n = 0; n < N; n++) {
    const float* x = inp + std::size_t(n) * C;
    float lanes[16] = {};
    int i = 0;
    for (; i + 16 <= C; i += 16)
      for (int j = 0; j < 16; j++) lanes[j] += x[i + j];
    float m = sum16(lanes);
    for (; i < C; i++) m += x[i];
    m /= C;
    // Two passes over x (mean, then variance about it): one-pass E[x^2]-E[x]^2 cancels.
    float vl[16] = {};
    i = 0;
    for (; i + 16 <= C; i += 16)
      for (int j = 0; j < 16; j++) {
        const float d = x[i + j] - m;
        vl[j] += d * d;
      }
    float v = sum16(vl);
    for (; i < C; i++) v += (x[i] - m) * (x[i] - m);
    v /= C;
    const float s = 1.0f / std::sqrt(v + eps);
    float* o = out + std::size_t(n) * C;
    for (i = 0; i < C; i++) o[i] = (x[i] - m) * s * weight[i] + bias[i];
    if (mean) mean[n] = m;
    if (rstd) rstd[n] = s;
  }
}

HEADLAB_MULTIVERSION
void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                        const float* weight, const float* mean, const float* rstd, int N, int C) {
  for (int n = 0; n < N; n++) {
    const float* dout_n = dout + std::size_t(n) * C;
    const float* inp_n = inp + std::size_t(n) * C;
    float* dinp_n = dinp + std::size_t(n) * C;
    const float m = mean[n];
    const float s = rstd[n];
    // two reductions: mean of g and mean of g * xhat, g = dout * w
    float gl[16] = {}, gxl[16] = {};
    int i = 0;
    for (; i + 16 <= C; i += 16)
      for (int j = 0; j < 16; j++) {
        const float xhat = (inp_n[i + j] - m) * s;
        const float g = weight[i + j] * dout_n[i + j];
        gl[j] += g;
        gxl[j] += g * xhat;
      }
    float dnorm_mean = sum16(gl);
    float dnorm_norm_mean = sum16(gxl);
    for (; i < C; i++) {
      const float xhat = (inp_n[i] - m) * s;
      const float g = weight[i] * dout_n[i];
      dnorm_mean += g;
      dnorm_norm_mean += g * xhat;
    }
    dnorm_mean /= C;
    dnorm_norm_mean /= C;
    for (i = 0; i < C; i++) {
      const float xhat = (inp_n[i] - m) * s;
      const float g = weight[i] * dout_n[i];
      dbias[i] += dout_n[i];
      dweight[i] += xhat * dout_n[i];
      dinp_n[i] += (g - dnorm_mean - xhat * dnorm_norm_mean) * s;
    }
  }
}

}  // namespace headlab::model
