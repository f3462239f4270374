// model/ops/rope.cpp — rotary position embedding forward (see rope.h).
#include "model/ops/rope.h"

#include <cmath>
#include <cstddef>
#include <vector>

namespace headlab::model {

void rope_forward(float* x, int T, int n_heads, int HS, int row_stride, int rotary_dim, bool interleaved,
                  float theta, float scale) {
  const int half = rotary_dim / 2;
  if (half == 0) return;
  // The frequencies in float32 as Hugging Face computes them (1 / theta^(2i/d)); the angles
  // and their cos/sin in double, then rounded: one table for every head of every row.
  std::vector<float> cosv(half), sinv(half);
  std::vector<float> inv_freq(half);
  for (int i = 0; i < half; i++)
    inv_freq[i] = static_cast<float>(1.0 / std::pow(double(theta), double(2 * i) / rotary_dim));
  for (int t = 0; t < T; t++) {
    const double pos = double(t) / scale;
    for (int i = 0; i < half; i++) {
      const double a = pos * double(inv_freq[i]);
      cosv[i] = static_cast<float>(std::cos(a));
      sinv[i] = static_cast<float>(std::sin(a));
    }
    for (int h = 0; h < n_heads; h++) {
      float* v = x + std::size_t(t) * row_stride + std::size_t(h) * HS;  // (HS)
      for (int i = 0; i < half; i++) {
        float& a = interleaved ? v[2 * i] : v[i];
        float& b = interleaved ? v[2 * i + 1] : v[i + half];
        const float a0 = a, b0 = b;
        a = a0 * cosv[i] - b0 * sinv[i];
        b = b0 * cosv[i] + a0 * sinv[i];
      }
    }
  }
}

}  // namespace headlab::model
