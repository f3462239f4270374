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

}  // namespace headlab::model
