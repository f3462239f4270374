// Tests for model/ops/matmul_quant_q8.h: the inputs' 8-bit blocks (ggml's Q8_K and Q8_0), and
// every integer kernel this CPU runs, in every block type the path takes (Q4_0, Q8_0, Q4_K,
// Q5_K, Q6_K):
//   (a) against the exact maths of the same quantized inputs: sum_k w_k * (yd * q_k) in double,
//       w_k the dequantized weight; the kernels' integer sums are exact, so the difference is
//       float32 rounding only (the per-block scalings, the weights' own dequantization, the
//       order of the float sums): within 3e-5 of sum_k |w_k * yd * q_k|;
//   (b) against dequantize-then-multiply on the float32 inputs, within what rounding the inputs
//       to 8 bits allows: |x - yd * q| <= |yd| / 2 with |yd| = amax / 127 per block (Q8_K); Q8_0
//       keeps d as a half, adding at most 127 * |d| * 2^-11, so 0.5625 * amax / 127; the bound
//       is sum_k |w_k| * that, plus 1e-5 of sum_k |w_k x_k| for float32;
//   (c) odd shapes (N = 1, N and OC off the tiles, C one block) and hostile inputs.
#include "model/ops/matmul_quant_q8.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "model/ops/matmul.h"
#include "model/ops/matmul_packed.h"
#include "model/packed_weights.h"
#include "model/quant_blocks.h"
#include "testing/gradcheck.h"
#include "testing/quant_random_blocks.h"

using namespace headlab::model;
using headlab::testing::quant_random_blocks;
using headlab::testing::random_vector;

namespace {

const Q8Kernel kQ8Kernels[] = {Q8Kernel::portable, Q8Kernel::avx2, Q8Kernel::avx512vnni};
const WeightType kQ8Types[] = {WeightType::q4_0, WeightType::q8_0, WeightType::q4_k, WeightType::q5_k, WeightType::q6_k};

struct Case {
  WeightType t;
  int N, OC, C;
  std::string name() const {
    return std::string(weight_type_name(t)) + " N=" + std::to_string(N) + " OC=" + std::to_string(OC) + " C=" + std::to_string(C);
  }
};

// Every type, with N = 1, N and OC off the tiles (4 x 2, 2 x 2), C one block and several.
std::vector<Case> cases() {
  std::vector<Case> out;
  for (WeightType t : kQ8Types) {
    const int E = quant_block_elements(t);
    for (int C : {E, 3 * E})
      for (int N : {1, 2, 7})
        for (int OC : {1, 6, 37}) out.push_back({t, N, OC, C});
  }
  return out;
}

}  // namespace

TEST(Q8Inputs, Q8KMapsEachBlocksLargestInputToMinus127KeepingItsSignAndSumsEach16) {
  std::vector<float> x(512);
  for (int k = 0; k < 512; k++) x[std::size_t(k)] = std::sin(0.37f * float(k)) * (k < 256 ? 1.0f : 0.001f);
  x[17] = 3.0f;     // block 0's largest, positive
  x[300] = -0.02f;  // block 1's largest, negative
  Q8Inputs y;
  q8_quantize_rows(y, 256, x.data(), 512, 512, 1);
  ASSERT_EQ(y.q.size(), 512u);
  EXPECT_EQ(y.q[17], -127);
  EXPECT_FLOAT_EQ(y.d[0], 3.0f / -127.0f);
  EXPECT_EQ(y.q[300], -127);
  EXPECT_FLOAT_EQ(y.d[1], 0.02f / 127.0f);
  for (int k = 0; k < 512; k++)
    ASSERT_LE(std::fabs(x[std::size_t(k)] - y.d[std::size_t(k / 256)] * float(y.q[std::size_t(k)])),
              std::fabs(y.d[std::size_t(k / 256)]) * 0.5001f)
        << k;
  for (int g = 0; g < 32; g++) {
    int s = 0;
    for (int i = 0; i < 16; i++) s += y.q[std::size_t(16 * g + i)];
    ASSERT_EQ(y.bsums[std::size_t(g)], s) << g;
  }
}

TEST(Q8Inputs, Q8_0KeepsItsScaleAsAHalfAndRoundsWithinAHalfStepOfIt) {
  const std::vector<float> x = random_vector(96, 3);
  Q8Inputs y;
  q8_quantize_rows(y, 32, x.data(), 96, 96, 1);
  for (int b = 0; b < 3; b++) {
    float amax = 0.0f;
    for (int i = 0; i < 32; i++) amax = std::max(amax, std::fabs(x[std::size_t(32 * b + i)]));
    EXPECT_EQ(y.d[std::size_t(b)], f16_to_f32(f32_to_f16(amax / 127.0f)));
    for (int i = 0; i < 32; i++) {
      const std::size_t k = std::size_t(32 * b + i);
      ASSERT_LE(std::fabs(x[k] - y.d[std::size_t(b)] * float(y.q[k])), 0.5625f * amax / 127.0f) << k;
    }
  }
}

TEST(Q8Inputs, AnAllZeroBlockHasScaleZeroAndANonFiniteOneScaleNaN) {
  std::vector<float> x(768, 0.0f);
  x[300] = std::numeric_limits<float>::quiet_NaN();
  x[600] = std::numeric_limits<float>::infinity();
  Q8Inputs y;
  q8_quantize_rows(y, 256, x.data(), 768, 768, 1);
  EXPECT_EQ(y.d[0], 0.0f);
  EXPECT_TRUE(std::isnan(y.d[1]));
  EXPECT_TRUE(std::isnan(y.d[2]));
  for (std::int8_t q : y.q) ASSERT_EQ(q, 0);
}

TEST(MatmulQ8, EveryKernelGivesTheExactMathsOfTheQuantizedInputsInEveryType) {
  for (Q8Kernel kernel : kQ8Kernels) {
    if (!matmul_q8_kernel_supported(kernel)) continue;
    for (const Case& c : cases()) {
      const int E = quant_block_elements(c.t);
      const std::vector<unsigned char> blocks = quant_random_blocks(c.t, c.OC, c.C, unsigned(c.N * 131 + c.OC + c.C));
      const RowBand band{c.t, c.OC};
      OwnedPackedMatrix q = packed_matrix_from_blocks({&band, 1}, c.C, blocks.data());
      std::vector<float> w(std::size_t(c.OC) * std::size_t(c.C));
      quant_dequantize(c.t, blocks.data(), std::int64_t(w.size()), w.data());
      const std::vector<float> x = random_vector(std::size_t(c.N) * std::size_t(c.C), 4), bias = random_vector(std::size_t(c.OC), 5);
      Q8Inputs y;
      q8_quantize_rows(y, E, x.data(), c.C, c.C, c.N);
      std::vector<float> got(std::size_t(c.N) * std::size_t(c.OC));
      matmul_forward_q8_quantized(kernel, got.data(), c.OC, E == 256 ? &y : nullptr, E == 32 ? &y : nullptr, q.m, 0, c.C,
                                  bias.data(), c.N);
      for (int i = 0; i < c.N; i++)
        for (int o = 0; o < c.OC; o++) {
          double want = bias[std::size_t(o)], size = std::fabs(bias[std::size_t(o)]);
          for (int k = 0; k < c.C; k++) {
            const double yk = double(y.d[std::size_t(i) * std::size_t(c.C / E) + std::size_t(k / E)]) *
                              double(y.q[std::size_t(i) * std::size_t(c.C) + std::size_t(k)]);
            const double term = double(w[std::size_t(o) * std::size_t(c.C) + std::size_t(k)]) * yk;
            want += term, size += std::fabs(term);
          }
          ASSERT_NEAR(got[std::size_t(i) * std::size_t(c.OC) + std::size_t(o)], want, 3e-5 * size + 1e-6)
              << matmul_q8_kernel_name(kernel) << " " << c.name() << " i=" << i << " o=" << o;
        }
    }
  }
}

TEST(MatmulQ8, ComputeQ8IsDequantizeThenMultiplyWithinTheInputsEightBitRoundingOnEveryPackedKernel) {
  const PackedKernel kernels[] = {PackedKernel::portable, PackedKernel::avx2, PackedKernel::avx512, PackedKernel::avx512bf16,
                                  PackedKernel::amx};
  for (PackedKernel kernel : kernels) {
    if (!matmul_packed_kernel_supported(kernel)) continue;
    for (const Case& c : cases()) {
      const int E = quant_block_elements(c.t);
      const std::vector<unsigned char> blocks = quant_random_blocks(c.t, c.OC, c.C, unsigned(c.N * 7 + c.OC + c.C));
      const RowBand band{c.t, c.OC};
      OwnedPackedMatrix q = packed_matrix_from_blocks({&band, 1}, c.C, blocks.data());
      q.m.q8_inputs = true;
      std::vector<float> w(std::size_t(c.OC) * std::size_t(c.C));
      quant_dequantize(c.t, blocks.data(), std::int64_t(w.size()), w.data());
      const std::vector<float> x = random_vector(std::size_t(c.N) * std::size_t(c.C), 8), bias = random_vector(std::size_t(c.OC), 9);
      std::vector<float> got(std::size_t(c.N) * std::size_t(c.OC)), want(got.size());
      matmul_forward_packed_with(kernel, got.data(), c.OC, x.data(), c.C, q.m, 0, c.C, bias.data(), c.N);
      matmul_forward_naive(want.data(), x.data(), w.data(), bias.data(), c.N, c.C, c.OC);
      const double step = E == 256 ? 0.5 : 0.5625;  // of amax / 127 (see the top of the file)
      bool moved = false;
      for (int i = 0; i < c.N; i++)
        for (int o = 0; o < c.OC; o++) {
          double bound = 0.0;
          for (int b = 0; b < c.C / E; b++) {
            double amax = 0.0, wsum = 0.0, wx = 0.0;
            for (int k = b * E; k < (b + 1) * E; k++) {
              const double xk = x[std::size_t(i) * std::size_t(c.C) + std::size_t(k)], wk = w[std::size_t(o) * std::size_t(c.C) + std::size_t(k)];
              amax = std::max(amax, std::fabs(xk)), wsum += std::fabs(wk), wx += std::fabs(wk * xk);
            }
            bound += wsum * step * amax / 127.0 + 1e-5 * wx;
          }
          const std::size_t at = std::size_t(i) * std::size_t(c.OC) + std::size_t(o);
          ASSERT_LE(std::fabs(double(got[at]) - double(want[at])), bound + 1e-6)
              << matmul_packed_kernel_name(kernel) << " " << c.name() << " i=" << i << " o=" << o;
          moved = moved || got[at] != want[at];
        }
      EXPECT_TRUE(moved) << "the inputs were rounded: " << c.name();
    }
  }
}

TEST(MatmulQ8, SimdKernelsAgreeWithThePortableOneUpToTheOrderOfTheirFloatSums) {
  // the integer sums are the same; the SIMD kernels scale lanes of partial sums and add the lanes
  // last, so they differ in float32 rounding only: within 1e-5 of sum_k |w_k * yd * q_k|
  for (Q8Kernel kernel : {Q8Kernel::avx2, Q8Kernel::avx512vnni}) {
    if (!matmul_q8_kernel_supported(kernel)) continue;
    for (const Case& c : cases()) {
      const int E = quant_block_elements(c.t);
      const std::vector<unsigned char> blocks = quant_random_blocks(c.t, c.OC, c.C, unsigned(c.N + c.OC * 3 + c.C));
      const RowBand band{c.t, c.OC};
      OwnedPackedMatrix q = packed_matrix_from_blocks({&band, 1}, c.C, blocks.data());
      const std::vector<float> x = random_vector(std::size_t(c.N) * std::size_t(c.C), 12);
      Q8Inputs y;
      q8_quantize_rows(y, E, x.data(), c.C, c.C, c.N);
      std::vector<float> got(std::size_t(c.N) * std::size_t(c.OC)), want(got.size());
      const Q8Inputs* yk = E == 256 ? &y : nullptr;
      const Q8Inputs* y0 = E == 32 ? &y : nullptr;
      matmul_forward_q8_quantized(kernel, got.data(), c.OC, yk, y0, q.m, 0, c.C, nullptr, c.N);
      matmul_forward_q8_quantized(Q8Kernel::portable, want.data(), c.OC, yk, y0, q.m, 0, c.C, nullptr, c.N);
      std::vector<float> w(std::size_t(c.OC) * std::size_t(c.C));
      quant_dequantize(c.t, blocks.data(), std::int64_t(w.size()), w.data());
      for (int i = 0; i < c.N; i++)
        for (int o = 0; o < c.OC; o++) {
          double size = 0.0;  // sum_k |w_k * yd * q_k|: the K-quants' minimums cancel most of it
          for (int k = 0; k < c.C; k++)
            size += std::fabs(double(w[std::size_t(o) * std::size_t(c.C) + std::size_t(k)]) *
                              double(y.d[std::size_t(i) * std::size_t(c.C / E) + std::size_t(k / E)]) *
                              double(y.q[std::size_t(i) * std::size_t(c.C) + std::size_t(k)]));
          const std::size_t at = std::size_t(i) * std::size_t(c.OC) + std::size_t(o);
          ASSERT_NEAR(got[at], want[at], 1e-5 * size + 1e-6) << matmul_q8_kernel_name(kernel) << " " << c.name();
        }
    }
  }
}

TEST(MatmulQ8, BandsOfTwoInputBlockSizesAndAPartOfTheColumnsEachTakeTheirOwnInputs) {
  // c_attn's q, k, v may be three types: Q8_0 (Q8_0 inputs), Q4_K and Q6_K (Q8_K inputs)
  const int C = 512;
  const RowBand bands[] = {{WeightType::q8_0, 9}, {WeightType::q4_k, 14}, {WeightType::q6_k, 5}};
  std::vector<unsigned char> blocks;
  std::vector<float> w;
  for (const RowBand& b : bands) {
    auto part = quant_random_blocks(b.type, b.rows, C, unsigned(b.rows));
    blocks.insert(blocks.end(), part.begin(), part.end());
    std::vector<float> wp(std::size_t(b.rows) * C);
    quant_dequantize(b.type, part.data(), std::int64_t(wp.size()), wp.data());
    w.insert(w.end(), wp.begin(), wp.end());
  }
  OwnedPackedMatrix q = packed_matrix_from_blocks(bands, C, blocks.data());
  q.m.q8_inputs = true;
  const int N = 5, OC = q.m.rows;
  const std::vector<float> x = random_vector(std::size_t(N) * C, 21);
  for (auto [k0, K] : {std::pair{0, C}, std::pair{256, 256}}) {
    ASSERT_TRUE(matmul_q8_applies(q.m, k0, K));
    std::vector<float> got(std::size_t(N) * OC), want(got.size());
    matmul_forward_packed_with(matmul_packed_kernel(), got.data(), OC, x.data() + k0, C, q.m, k0, K, nullptr, N);
    std::vector<float> ws(std::size_t(OC) * std::size_t(K)), xs(std::size_t(N) * std::size_t(K));
    for (int o = 0; o < OC; o++)
      for (int k = 0; k < K; k++) ws[std::size_t(o * K + k)] = w[std::size_t(o * C + k0 + k)];
    for (int i = 0; i < N; i++)
      for (int k = 0; k < K; k++) xs[std::size_t(i * K + k)] = x[std::size_t(i * C + k0 + k)];
    matmul_forward_naive(want.data(), xs.data(), ws.data(), nullptr, N, K, OC);
    float err = 0.0f, scale = 0.0f;
    for (std::size_t i = 0; i < got.size(); i++) err = std::max(err, std::fabs(got[i] - want[i])), scale = std::max(scale, std::fabs(want[i]));
    EXPECT_GT(err, 0.0f);
    EXPECT_LT(err, 0.02f * scale) << "k0=" << k0;  // 8-bit inputs: about 1% of the outputs' size
  }
}

TEST(MatmulQ8, AppliesOnlyToItsBlockTypesAndToColumnsOnBlockBoundaries) {
  const RowBand q4k{WeightType::q4_k, 3}, q41{WeightType::q4_1, 3}, q80{WeightType::q8_0, 3};
  OwnedPackedMatrix a = packed_matrix_from_blocks({&q4k, 1}, 512, quant_random_blocks(WeightType::q4_k, 3, 512, 1).data());
  OwnedPackedMatrix b = packed_matrix_from_blocks({&q41, 1}, 512, quant_random_blocks(WeightType::q4_1, 3, 512, 2).data());
  OwnedPackedMatrix c = packed_matrix_from_blocks({&q80, 1}, 512, quant_random_blocks(WeightType::q8_0, 3, 512, 3).data());
  EXPECT_TRUE(matmul_q8_applies(a.m, 0, 512));
  EXPECT_FALSE(matmul_q8_applies(a.m, 64, 64));  // a head's share of W_O inside a 256-block: the float32 path
  EXPECT_FALSE(matmul_q8_applies(b.m, 0, 512));  // Q4_1 keeps the float32 path
  EXPECT_TRUE(matmul_q8_applies(c.m, 64, 64));
  const std::vector<float> w = random_vector(3 * 64, 1);
  OwnedPackedMatrix f = packed_matrix_from_rows(WeightType::f32, w.data(), 3, 64);
  EXPECT_FALSE(matmul_q8_applies(f.m, 0, 64));
}

TEST(MatmulQ8, ZeroRowsGiveTheBiasAndNonFiniteOrHugeInputsDoNotCrash) {
  for (Q8Kernel kernel : kQ8Kernels) {
    if (!matmul_q8_kernel_supported(kernel)) continue;
    for (WeightType t : kQ8Types) {
      const int C = 256, OC = 5, N = 4;
      const RowBand band{t, OC};
      OwnedPackedMatrix q = packed_matrix_from_blocks({&band, 1}, C, quant_random_blocks(t, OC, C, 7).data());
      const std::vector<float> bias = random_vector(OC, 2);
      std::vector<float> x(std::size_t(N) * C, 0.0f);                 // row 0 all zero
      for (int k = 0; k < C; k++) x[std::size_t(C + k)] = 1e30f * float((k % 3) - 1);  // row 1 huge
      x[std::size_t(2 * C + 7)] = std::numeric_limits<float>::quiet_NaN();                // row 2 a NaN
      x[std::size_t(3 * C + 9)] = 1e-40f;                                                  // row 3 one subnormal
      const int E = quant_block_elements(t);
      Q8Inputs y;
      q8_quantize_rows(y, E, x.data(), C, C, N);
      std::vector<float> out(std::size_t(N) * OC);
      matmul_forward_q8_quantized(kernel, out.data(), OC, E == 256 ? &y : nullptr, E == 32 ? &y : nullptr, q.m, 0, C, bias.data(), N);
      for (int o = 0; o < OC; o++) {
        EXPECT_EQ(out[std::size_t(o)], bias[std::size_t(o)]) << matmul_q8_kernel_name(kernel) << " " << weight_type_name(t);
        // Q8_0 inputs keep d as a half: beyond 65504 * 127 it is infinite, as in ggml
        if (E == 256) {
          EXPECT_TRUE(std::isfinite(out[std::size_t(OC + o)])) << weight_type_name(t);
        }
        EXPECT_TRUE(std::isnan(out[std::size_t(2 * OC + o)])) << weight_type_name(t);
        EXPECT_TRUE(std::isfinite(out[std::size_t(3 * OC + o)])) << weight_type_name(t);
      }
    }
  }
}

TEST(MatmulQ8, KernelIsChosenFromTheCpusFeaturesAndNamed) {
  EXPECT_TRUE(matmul_q8_kernel_supported(matmul_q8_kernel()));
  EXPECT_TRUE(matmul_q8_kernel_supported(Q8Kernel::portable));
  EXPECT_NE(matmul_q8_kernels_description().find(std::string(matmul_q8_kernel_name(matmul_q8_kernel()))), std::string::npos);
}
