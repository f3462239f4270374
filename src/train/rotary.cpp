// train/rotary.cpp — the rotation of q and k and its backward (see rotary.h).
#include "train/rotary.h"

#include <cmath>
#include <cstddef>

namespace headlab::train {

RotaryTable rotary_table(int T, int rotary_dim, float theta) {
  RotaryTable r;
  r.T = T;
  r.half = rotary_dim / 2;
  r.cos.resize(std::size_t(T) * r.half);
  r.sin.resize(std::size_t(T) * r.half);
  // as model/ops/rope.cpp: the frequencies in float32 (Hugging Face's inv_freq), the angles
  // and their cos/sin in double, then rounded
  std::vector<float> inv_freq(r.half);
  for (int i = 0; i < r.half; i++)
    inv_freq[i] = static_cast<float>(1.0 / std::pow(double(theta), double(2 * i) / rotary_dim));
  for (int t = 0; t < T; t++)
    for (int i = 0; i < r.half; i++) {
      const double a = double(t) * double(inv_freq[i]);
      r.cos[std::size_t(t) * r.half + i] = static_cast<float>(std::cos(a));
      r.sin[std::size_t(t) * r.half + i] = static_cast<float>(std::sin(a));
    }
  return r;
}

namespace {

// Turns every pair (x[i], x[i + half]) of every head by the table's angle times `sign`.
void rotate(float* x, const RotaryTable& r, int T, int n_heads, int HS, int row_stride, float sign) {
  const int half = r.half;
  for (int t = 0; t < T; t++) {
    const float* c = r.cos.data() + std::size_t(t) * half;  // (half)
    const float* s = r.sin.data() + std::size_t(t) * half;  // (half)
    for (int h = 0; h < n_heads; h++) {
      float* v = x + std::size_t(t) * row_stride + std::size_t(h) * HS;  // (HS)
      for (int i = 0; i < half; i++) {
        const float a = v[i], b = v[i + half], si = sign * s[i];
        v[i] = a * c[i] - b * si;
        v[i + half] = b * c[i] + a * si;
      }
    }
  }
}

}  // namespace

void rotary_forward(float* x, const RotaryTable& table, int T, int n_heads, int HS, int row_stride) {
  rotate(x, table, T, n_heads, HS, row_stride, 1.0f);
}

void rotary_backward(float* dx, const RotaryTable& table, int T, int n_heads, int HS, int row_stride) {
  rotate(dx, table, T, n_heads, HS, row_stride, -1.0f);
}

}  // namespace headlab::train
