// model/ops/fast_exp.h — exp written so the compiler vectorises it: the softmax of every
// attention row and the tanh of every GELU are exp-bound.
//   exp(x) = 2^n * p(r),  n = round(x / ln 2),  r = x - n ln 2 (two-part ln 2),
//   p a degree-6 polynomial (Cephes expf); relative error below 2e-7.
// HEADLAB_MULTIVERSION compiles a function for AVX-512, AVX2+FMA and baseline x86-64; the
// loader picks the best the CPU has (GCC target_clones), so one binary runs anywhere.
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define HEADLAB_MULTIVERSION __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define HEADLAB_MULTIVERSION
#endif

namespace headlab::model {

// exp(x) for any float x: below -87 it is 0, above 88 it saturates at exp(88).
inline float fast_exp(float x) {
  // branch-free, so loops over it vectorise: clamp, then n = round(x / ln 2) by adding
  // and subtracting 1.5 * 2^23 (the float addition rounds to an integer)
  const float underflow = x < -87.0f ? 0.0f : 1.0f;
  x = x < -87.0f ? -87.0f : x;
  x = x > 88.0f ? 88.0f : x;
  // n's integer read from the shifted float's bits (0x4B400000 is 1.5 * 2^23's): a NaN x
  // (from a diverged run) gives a NaN result, where a float-to-int cast of it is undefined
  const float shifted = x * 1.44269504088896341f + 12582912.0f;
  const float n = shifted - 12582912.0f;
  std::int32_t shifted_bits;
  std::memcpy(&shifted_bits, &shifted, sizeof shifted_bits);
  const std::int32_t ni = shifted_bits - 0x4B400000;
  float r = x - n * 0.693359375f;  // ln 2, high part
  r = r - n * -2.12194440e-4f;     // ln 2, low part
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const std::uint32_t bits = std::uint32_t(ni + 127) << 23;
  float pow2n;
  std::memcpy(&pow2n, &bits, sizeof pow2n);
  return p * pow2n * underflow;
}

// tanh(x) = 1 - 2 / (exp(2x) + 1); absolute error below 1e-7.
inline float fast_tanh(float x) { return 1.0f - 2.0f / (fast_exp(2.0f * x) + 1.0f); }

// The largest of row[0..n), n >= 1 (the shift a softmax subtracts). 16 lanes, so the loop
// vectorises without reassociating floats behind the compiler's back.
float row_max(const float* row, int n);

// row[i] = exp(row[i] - shift) for i < n, *sum = the sum of the results. Inputs below
// shift - 87 (and -inf) give 0.
void exp_shifted_inplace(float* row, int n, float shift, float* sum);

}  // namespace headlab::model
