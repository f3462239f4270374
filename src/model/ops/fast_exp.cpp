// model/ops/fast_exp.cpp — a vectorisable exp for softmax rows (see fast_exp.h).
#include "model/ops/fast_exp.h"

#include <cstdint>
#include <cstring>

namespace headlab::model {

namespace {

inline float exp_nonpositive(float x) {
  // x <= 0 (after the shift); clamp so 2^n stays a normal float, flush below to 0.
  const bool underflow = x < -87.0f;
  x = x < -87.0f ? -87.0f : x;
  const float fx = x * 1.44269504088896341f;                  // x / ln 2
  const float n = static_cast<float>(static_cast<int>(fx - 0.5f + (fx >= 0.0f ? 1.0f : 0.0f)));
  float r = x - n * 0.693359375f;                              // ln 2, high part
  r = r - n * -2.12194440e-4f;                                 // ln 2, low part
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const std::int32_t bits = (static_cast<std::int32_t>(n) + 127) << 23;
  float pow2n;
  std::memcpy(&pow2n, &bits, sizeof pow2n);
  return underflow ? 0.0f : p * pow2n;
}

}  // namespace

void exp_shifted_inplace(float* row, int n, float shift, float* sum) {
  float acc = 0.0f;
  for (int i = 0; i < n; i++) {
    const float e = exp_nonpositive(row[i] - shift);
    row[i] = e;
    acc += e;
  }
  *sum = acc;
}

}  // namespace headlab::model
