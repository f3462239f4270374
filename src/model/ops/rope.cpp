// model/ops/rope.cpp — rotary position embedding forward (see rope.h).
#include "model/ops/rope.h"

#include <cmath>
#include <cstddef>
#include <numbers>
#include <vector>

namespace headlab::model {

std::vector<float> rope_frequencies(int rotary_dim, float theta) {
  std::vector<float> inv_freq(rotary_dim / 2);
  for (int i = 0; i < rotary_dim / 2; i++)
    inv_freq[i] = static_cast<float>(1.0 / std::pow(double(theta), double(2 * i) / rotary_dim));
  return inv_freq;
}

void rope_llama3_frequencies(std::vector<float>& inv_freq, float factor, float low_freq_factor, float high_freq_factor,
                             int original_max_positions) {
  const double n = original_max_positions;
  const double low_wavelen = n / low_freq_factor, high_wavelen = n / high_freq_factor;
  for (float& f : inv_freq) {
    const double w = 2.0 * std::numbers::pi / double(f);
    if (w < high_wavelen) continue;
    if (w > low_wavelen) {
      f = static_cast<float>(double(f) / factor);
      continue;
    }
    const double s = (n / w - low_freq_factor) / (double(high_freq_factor) - low_freq_factor);
    f = static_cast<float>((1.0 - s) * double(f) / factor + s * double(f));
  }
}

void rope_forward(float* x, int T, int n_heads, int HS, int row_stride, int rotary_dim, bool interleaved,
                  float theta, float scale) {
  const std::vector<float> inv_freq = rope_frequencies(rotary_dim, theta);
  rope_forward_frequencies(x, T, n_heads, HS, row_stride, rotary_dim, interleaved, inv_freq.data(), scale);
}

namespace {

// Turns each pair by sign * angle(t, i): +1 the forward, -1 its backward.
void rope_turn(float* x, int T, int n_heads, int HS, int row_stride, int rotary_dim, bool interleaved,
               const float* inv_freq, float scale, float sign, int first_position = 0) {
  const int half = rotary_dim / 2;
  if (half == 0) return;
  // The angles and their cos/sin in double, then rounded: one table for every head of a row.
  std::vector<float> cosv(half), sinv(half);
  for (int t = 0; t < T; t++) {
    const double pos = double(first_position + t) / scale;
    for (int i = 0; i < half; i++) {
      const double a = pos * double(inv_freq[i]);
      cosv[i] = static_cast<float>(std::cos(a));
      sinv[i] = sign * static_cast<float>(std::sin(a));
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

}  // namespace

void rope_forward_frequencies(float* x, int T, int n_heads, int HS, int row_stride, int rotary_dim, bool interleaved,
                              const float* inv_freq, float scale, int first_position) {
  rope_turn(x, T, n_heads, HS, row_stride, rotary_dim, interleaved, inv_freq, scale, 1.0f, first_position);
}

void rope_backward_frequencies(float* dx, int T, int n_heads, int HS, int row_stride, int rotary_dim, bool interleaved,
                               const float* inv_freq, float scale) {
  rope_turn(dx, T, n_heads, HS, row_stride, rotary_dim, interleaved, inv_freq, scale, -1.0f);
}

}  // namespace headlab::model
