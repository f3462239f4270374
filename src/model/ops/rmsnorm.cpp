// model/ops/rmsnorm.cpp — RMSNorm forward (see rmsnorm.h). The sum of squares runs in 16
// lanes so that it vectorises, in a fixed order (the same input gives the same result).
#include "model/ops/rmsnorm.h"

#include <cmath>
#include <cstddef>

#include "model/ops/fast_exp.h"  // HEADLAB_MULTIVERSION

namespace headlab::model {

HEADLAB_MULTIVERSION
void rmsnorm_forward(float* out, const float* inp, const float* weight, int N, int C, float eps, bool plus_one) {
  const float offset = plus_one ? 1.0f : 0.0f;
  for (int n = 0; n < N; n++) {
    const float* x = inp + std::size_t(n) * C;
    float lanes[16] = {};
    int i = 0;
    for (; i + 16 <= C; i += 16)
      for (int j = 0; j < 16; j++) lanes[j] += x[i + j] * x[i + j];
    float ss = 0.0f;
    for (int j = 0; j < 16; j++) ss += lanes[j];
    for (; i < C; i++) ss += x[i] * x[i];
    const float s = 1.0f / std::sqrt(ss / C + eps);
    float* o = out + std::size_t(n) * C;
    for (i = 0; i < C; i++) o[i] = x[i] * s * (offset + weight[i]);
  }
}

void rmsnorm_backward(float* dinp, const float* dout, const float* inp, const float* weight, int N, int C, float eps,
                      bool plus_one) {
  const double offset = plus_one ? 1.0 : 0.0;
  for (int n = 0; n < N; n++) {
    const float* x = inp + std::size_t(n) * C;
    const float* d = dout + std::size_t(n) * C;
    double ss = 0.0, gx = 0.0;
    for (int i = 0; i < C; i++) {
      ss += double(x[i]) * x[i];
      gx += double(d[i]) * (offset + weight[i]) * x[i];
    }
    const double s = 1.0 / std::sqrt(ss / C + eps);
    const double k = s * s * s * gx / C;  // s^3 mean_j(g_j x_j)
    float* dx = dinp + std::size_t(n) * C;
    for (int i = 0; i < C; i++) dx[i] += static_cast<float>(s * double(d[i]) * (offset + weight[i]) - double(x[i]) * k);
  }
}

}  // namespace headlab::model
