// Tests for model/ops/matmul_packed.h and model/packed_weights.h: every kernel this CPU runs,
// in each weight type, against the plain loops on the same (rounded) weights; the packed
// layout and its rounding; GGUF's blocks, and their SIMD decoders (model/quant_simd.h) against
// the scalar ones bit for bit (each kernel widens with its own: portable scalar, avx2 AVX2,
// avx512 and avx512bf16 AVX-512).
#include "model/ops/matmul_packed.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "model/ops/matmul.h"
#include "model/packed_weights.h"
#include "model/quant_blocks.h"
#include "model/quant_simd.h"
#include "testing/gradcheck.h"
#include "testing/quant_random_blocks.h"

using namespace headlab::model;
using headlab::testing::quant_random_blocks;
using headlab::testing::random_vector;

namespace {

const WeightType kTypes[] = {WeightType::f32, WeightType::bf16, WeightType::f16};
const PackedKernel kKernels[] = {PackedKernel::portable, PackedKernel::avx2, PackedKernel::avx512, PackedKernel::avx512bf16,
                                 PackedKernel::amx};

// The weights as the packed matrix holds them (rounded to its type), as float32 rows.
std::vector<float> rounded(const PackedMatrix& m) {
  std::vector<float> w(std::size_t(m.rows) * m.cols);
  packed_read_rows(m, 0, m.rows, w.data());
  return w;
}

}  // namespace

TEST(MatmulForwardPacked, EveryKernelMatchesPlainLoopsForEveryRowColumnAndKLeftoverInEachType) {
  // N around the row tiles (8 for avx512, 6 for avx2, 4 portable) and past the short-input
  // limit (64); OC around the 32-column panels and their 16- and 8-column halves (257 is odd like
  // GPT-2's vocabulary); C not a multiple of 16
  for (PackedKernel kernel : kKernels) {
    if (!matmul_packed_kernel_supported(kernel)) continue;
    for (WeightType type : kTypes)
      for (int N : {1, 5, 7, 9, 13, 64, 65, 130, 300})
        for (int OC : {1, 9, 17, 31, 33, 257})
          for (int C : {16, 50, 300}) {
            if (N > 64 && C == 16) continue;  // the blocked path is reached with the others
            auto x = random_vector(N * C, 1), w = random_vector(OC * C, 2), b = random_vector(OC, 3);
            OwnedPackedMatrix packed = packed_matrix_from_rows(type, w.data(), OC, C);
            const std::vector<float> wr = rounded(packed.m);
            for (const float* bias : {static_cast<const float*>(b.data()), static_cast<const float*>(nullptr)}) {
              // out carries a sentinel one row past the end and one column past each row's
              // end: the kernel must not write there
              const int ldo = OC + 1;
              std::vector<float> fast(std::size_t(N + 1) * ldo, 7.0f), plain(std::size_t(N) * OC);
              matmul_forward_packed_with(kernel, fast.data(), ldo, x.data(), C, packed.m, 0, C, bias, N);
              matmul_forward_naive(plain.data(), x.data(), wr.data(), bias, N, C, OC);
              float m = 0.0f;
              for (int n = 0; n < N; n++)
                for (int o = 0; o < OC; o++)
                  m = std::max(m, std::fabs(fast[std::size_t(n) * ldo + o] - plain[std::size_t(n) * OC + o]));
              ASSERT_LT(m, 1e-4f) << matmul_packed_kernel_name(kernel) << " " << weight_type_name(type) << " N=" << N
                                  << " OC=" << OC << " C=" << C << (bias ? " bias" : "");
              for (int n = 0; n < N; n++) ASSERT_EQ(fast[std::size_t(n) * ldo + OC], 7.0f) << "wrote past column OC-1";
              for (int o = 0; o < ldo; o++) ASSERT_EQ(fast[std::size_t(N) * ldo + o], 7.0f) << "wrote past row N-1";
            }
          }
  }
}

TEST(MatmulForwardPacked, BlocksOfRowsAndOfALongKAddUpToThePlainProduct) {
  // k past kMaxKAvx512 (2,048; avx2's kMaxK 1,024) goes in blocks of 512 that add into out; the
  // rows then in blocks of 512 KB / (4 x 512) = 256 (252 for avx2's 6-row tiles), so 300 rows make two
  const int N = 300, OC = 33, C = 2100;
  auto x = random_vector(N * C, 11), w = random_vector(OC * C, 12), b = random_vector(OC, 13);
  for (PackedKernel kernel : kKernels) {
    if (!matmul_packed_kernel_supported(kernel)) continue;
    for (WeightType type : kTypes) {
      OwnedPackedMatrix packed = packed_matrix_from_rows(type, w.data(), OC, C);
      const std::vector<float> wr = rounded(packed.m);
      std::vector<float> fast(std::size_t(N) * OC), plain(fast.size());
      matmul_forward_packed_with(kernel, fast.data(), OC, x.data(), C, packed.m, 0, C, b.data(), N);
      matmul_forward_naive(plain.data(), x.data(), wr.data(), b.data(), N, C, OC);
      float m = 0.0f;
      for (std::size_t i = 0; i < plain.size(); i++) m = std::max(m, std::fabs(fast[i] - plain[i]));
      EXPECT_LT(m, 2e-4f) << matmul_packed_kernel_name(kernel) << " " << weight_type_name(type);
    }
  }
}

TEST(MatmulForwardPacked, APartOfTheColumnsMatchesThatSliceOfThePlainProduct) {
  // head h's share of W_O: inputs z (N, D) at column h*HS, W's columns h*HS..(h+1)*HS
  const int N = 70, OC = 40, D = 48, HS = 12;
  auto z = random_vector(N * D, 5), w = random_vector(OC * D, 6);
  for (PackedKernel kernel : kKernels) {
    if (!matmul_packed_kernel_supported(kernel)) continue;
    for (WeightType type : kTypes) {
      OwnedPackedMatrix packed = packed_matrix_from_rows(type, w.data(), OC, D);
      const std::vector<float> wr = rounded(packed.m);
      for (int h = 0; h < D / HS; h++) {
        std::vector<float> fast(std::size_t(N) * OC);
        matmul_forward_packed_with(kernel, fast.data(), OC, z.data() + h * HS, D, packed.m, h * HS, HS, nullptr, N);
        float m = 0.0f;
        for (int n = 0; n < N; n++)
          for (int o = 0; o < OC; o++) {
            double s = 0;
            for (int i = 0; i < HS; i++) s += double(z[std::size_t(n) * D + h * HS + i]) * wr[std::size_t(o) * D + h * HS + i];
            m = std::max(m, float(std::fabs(fast[std::size_t(n) * OC + o] - s)));
          }
        EXPECT_LT(m, 1e-5f) << matmul_packed_kernel_name(kernel) << " " << weight_type_name(type) << " head " << h;
      }
    }
  }
}

TEST(MatmulForwardPacked, SixteenBitWeightsGiveTheSameOutputAsTheSameWeightsWidenedToF32) {
  // the 16-bit kernels widen in a register and accumulate in float32 in the same order as the
  // f32 kernel: on weights that are exactly 16-bit values the outputs are identical
  const int N = 37, OC = 70, C = 90;
  auto x = random_vector(N * C, 7), w = random_vector(OC * C, 8);
  for (PackedKernel kernel : kKernels) {
    if (!matmul_packed_kernel_supported(kernel)) continue;
    for (WeightType type : {WeightType::bf16, WeightType::f16}) {
      OwnedPackedMatrix narrow = packed_matrix_from_rows(type, w.data(), OC, C);
      const std::vector<float> wr = rounded(narrow.m);
      OwnedPackedMatrix wide = packed_matrix_from_rows(WeightType::f32, wr.data(), OC, C);
      std::vector<float> a(std::size_t(N) * OC), b(a.size());
      matmul_forward_packed_with(kernel, a.data(), OC, x.data(), C, narrow.m, 0, C, nullptr, N);
      matmul_forward_packed_with(kernel, b.data(), OC, x.data(), C, wide.m, 0, C, nullptr, N);
      EXPECT_EQ(a, b) << matmul_packed_kernel_name(kernel) << " " << weight_type_name(type);
    }
  }
}

TEST(MatmulPackedKernel, IsChosenFromTheCpusFeaturesAndNamed) {
  EXPECT_TRUE(matmul_packed_kernel_supported(PackedKernel::portable));
  EXPECT_TRUE(matmul_packed_kernel_supported(matmul_packed_kernel()));
  const std::string d = matmul_packed_kernels_description();
  EXPECT_NE(d.find(std::string(matmul_packed_kernel_name(matmul_packed_kernel()))), std::string::npos) << d;
}

TEST(PackedWeights, RowsReadBackAsTheirRoundedValuesAndThePaddingIsZero) {
  const int OC = 33, C = 3;  // two panels, the second with one real column; an odd C (bf16 pads k)
  auto w = random_vector(OC * C, 4);
  for (WeightType type : kTypes) {
    OwnedPackedMatrix p = packed_matrix_from_rows(type, w.data(), OC, C);
    const int kn = packed_k_count(type, C);
    ASSERT_EQ(kn, type == WeightType::bf16 ? 4 : 3);
    ASSERT_EQ(packed_bytes(type, OC, C), std::size_t(2 * kPanel * kn * weight_type_size(type)));
    const std::vector<float> back = rounded(p.m);
    for (int i = 0; i < OC * C; i++) {
      const float want = type == WeightType::f32    ? w[i]
                         : type == WeightType::bf16 ? weight_from_bf16(weight_to_bf16(w[i]))
                                                    : weight_from_f16(weight_to_f16(w[i]));
      ASSERT_EQ(back[i], want) << weight_type_name(type) << " at " << i;
    }
    // zero: columns 33..63 of the second panel at every k, and every column at bf16's k = 3
    const int size = weight_type_size(type);
    for (int panel = 0; panel < 2; panel++)
      for (int k = 0; k < kn; k++)
        for (int j = 0; j < kPanel; j++) {
          const unsigned char* e = p.m.panel(panel) + packed_element(type, k, j) * size;
          bool zero = true;
          for (int b = 0; b < size; b++) zero = zero && e[b] == 0;
          const bool real = k < C && 32 * panel + j < OC;
          if (!real) {
            ASSERT_TRUE(zero) << weight_type_name(type) << " panel " << panel << " k " << k << " column " << j;
          }
        }
  }
}

TEST(PackedWeights, Bf16KeepsKInPairsSoOneLaneHoldsAColumnsKAndKPlusOne) {
  // per pair of k, 128 bytes: columns 0..15 then 16..31, each a 32-bit lane (k even low, k odd
  // high): a shift or a mask widens one k, and the lane is vdpbf16ps's operand as it is
  const int OC = 32, C = 4;
  std::vector<float> w(std::size_t(OC) * C);
  for (int o = 0; o < OC; o++)
    for (int k = 0; k < C; k++) w[std::size_t(o) * C + k] = float(o + 32 * k);  // below 256: exact in bf16
  OwnedPackedMatrix p = packed_matrix_from_rows(WeightType::bf16, w.data(), OC, C);
  const auto* lane = reinterpret_cast<const std::uint32_t*>(p.m.data);
  for (int pair = 0; pair < C / 2; pair++)
    for (int j = 0; j < kPanel; j++) {
      const std::uint32_t v = lane[pair * kPanel + j];
      EXPECT_EQ(weight_from_bf16(std::uint16_t(v & 0xFFFF)), float(j + 32 * (2 * pair))) << j;
      EXPECT_EQ(weight_from_bf16(std::uint16_t(v >> 16)), float(j + 32 * (2 * pair + 1))) << j;
    }
}

TEST(MatmulForwardPacked, Bf16InputsGiveTheProductOfTheRoundedInputsOnEveryKernel) {
  // --compute bf16: every kernel multiplies the inputs rounded to bfloat16 (avx512bf16 with
  // vdpbf16ps, the others by rounding first): the float64 product of the rounded inputs and
  // weights, to float32's error; over whole matrices, odd C and slices starting at an odd k
  for (PackedKernel kernel : kKernels) {
    if (!matmul_packed_kernel_supported(kernel)) continue;
    for (int N : {1, 9, 64, 70, 300})
      for (int C : {16, 33, 300, 1100}) {
        const int OC = 45;
        auto x = random_vector(N * C, 21), w = random_vector(OC * C, 22), b = random_vector(OC, 23);
        OwnedPackedMatrix packed = packed_matrix_from_rows(WeightType::bf16, w.data(), OC, C);
        packed.m.bf16_inputs = true;
        const std::vector<float> wr = rounded(packed.m);
        for (auto [k0, K] : {std::pair{0, C}, std::pair{1, C - 1}, std::pair{3, C / 2}, std::pair{2, C / 2 - 1}}) {
          std::vector<float> fast(std::size_t(N) * OC);
          matmul_forward_packed_with(kernel, fast.data(), OC, x.data() + k0, C, packed.m, k0, K, b.data(), N);
          float m = 0.0f;
          for (int n = 0; n < N; n++)
            for (int o = 0; o < OC; o++) {
              double s = b[o];
              for (int k = k0; k < k0 + K; k++)
                s += double(weight_from_bf16(weight_to_bf16(x[std::size_t(n) * C + k]))) * wr[std::size_t(o) * C + k];
              m = std::max(m, float(std::fabs(fast[std::size_t(n) * OC + o] - s)));
            }
          ASSERT_LT(m, 1e-4f) << matmul_packed_kernel_name(kernel) << " N=" << N << " C=" << C << " k0=" << k0
                              << " K=" << K;
        }
      }
  }
}

TEST(MatmulForwardPacked, ARowsOutputDoesNotDependOnTheRowsBesideItOnAnyKernel) {
  // what makes a batch's rows equal each sequence run alone: 70 rows at once (the blocked path,
  // AMX's whole tiles of 16 with the last padded) against each row alone, bit for bit, with a k
  // past the last whole AMX tile (C = 1100: 550 pairs, 16 x 34 + 6)
  const int N = 70, C = 1100, OC = 45;
  auto x = random_vector(N * C, 61), w = random_vector(OC * C, 62), b = random_vector(OC, 63);
  for (bool bf16_inputs : {false, true}) {
    OwnedPackedMatrix packed = packed_matrix_from_rows(WeightType::bf16, w.data(), OC, C);
    packed.m.bf16_inputs = bf16_inputs;
    for (PackedKernel kernel : kKernels) {
      if (!matmul_packed_kernel_supported(kernel)) continue;
      std::vector<float> all(std::size_t(N) * OC), one(OC);
      matmul_forward_packed_with(kernel, all.data(), OC, x.data(), C, packed.m, 0, C, b.data(), N);
      for (int n = 0; n < N; n++) {
        matmul_forward_packed_with(kernel, one.data(), OC, x.data() + std::size_t(n) * C, C, packed.m, 0, C, b.data(), 1);
        ASSERT_TRUE(std::equal(one.begin(), one.end(), all.begin() + std::ptrdiff_t(n) * OC))
            << matmul_packed_kernel_name(kernel) << (bf16_inputs ? " bf16 inputs" : "") << " row " << n;
      }
    }
  }
}

TEST(MatmulForwardPacked, Bf16InputsAreRoundedOnlyWhenAsked) {
  // the same bf16 matrix without the mark multiplies the float32 inputs: the outputs differ
  const int N = 20, OC = 40, C = 64;
  auto x = random_vector(N * C, 31), w = random_vector(OC * C, 32);
  OwnedPackedMatrix packed = packed_matrix_from_rows(WeightType::bf16, w.data(), OC, C);
  std::vector<float> exact(std::size_t(N) * OC), rounded_inputs(exact.size());
  matmul_forward_packed(exact.data(), x.data(), packed.m, nullptr, N);
  packed.m.bf16_inputs = true;
  matmul_forward_packed(rounded_inputs.data(), x.data(), packed.m, nullptr, N);
  float m = 0.0f;
  for (std::size_t i = 0; i < exact.size(); i++) m = std::max(m, std::fabs(exact[i] - rounded_inputs[i]));
  EXPECT_GT(m, 1e-4f);  // bfloat16 keeps 8 significant bits: the inputs move by up to 2^-9
  EXPECT_LT(m, 0.1f);
}

TEST(MatmulForwardPackedGroups, EachGroupGetsItsOwnProductBitForBitInEveryTypeKernelAndLength) {
  // groups of every length the kernels treat differently (short, a tile's leftover, past the
  // short-input limit of 64), each into its own output rows `ldo` apart beside a sentinel column,
  // against the same product made group by group; OC spans several chunks (kGroupChunkBytes)
  // and ends in a partial panel, in every weight type, with bf16 inputs, and quantized blocks
  // with float32 and 8-bit inputs
  const int C = 512, OC = 32 * 70 + 5;
  const std::vector<int> lengths = {1, 7, 32, 65, 3};
  auto w = random_vector(OC * C, 41);
  struct Matrix {
    std::string name;
    OwnedPackedMatrix m;
  };
  std::vector<Matrix> matrices;
  for (WeightType type : kTypes) matrices.push_back({std::string(weight_type_name(type)), packed_matrix_from_rows(type, w.data(), OC, C)});
  matrices.push_back({"bf16 inputs", packed_matrix_from_rows(WeightType::bf16, w.data(), OC, C)});
  matrices.back().m.m.bf16_inputs = true;
  for (WeightType t : {WeightType::q4_k, WeightType::q8_0}) {
    const std::vector<unsigned char> blocks = quant_random_blocks(t, OC, C, 43);
    const RowBand band{t, OC};
    matrices.push_back({std::string(weight_type_name(t)), packed_matrix_from_blocks({&band, 1}, C, blocks.data())});
    matrices.push_back({std::string(weight_type_name(t)) + " q8 inputs", packed_matrix_from_blocks({&band, 1}, C, blocks.data())});
    matrices.back().m.m.q8_inputs = true;
  }
  for (PackedKernel kernel : kKernels) {
    if (!matmul_packed_kernel_supported(kernel)) continue;
    for (const Matrix& mat : matrices) {
      const int ldo = OC + 1;
      std::vector<std::vector<float>> x, got, want;
      std::vector<PackedGroup> groups;
      for (std::size_t g = 0; g < lengths.size(); g++) {
        const int N = lengths[g];
        x.push_back(random_vector(N * (C + 3), unsigned(50 + g)));
        got.emplace_back(std::size_t(N) * ldo, 7.0f);
        want.emplace_back(std::size_t(N) * ldo, 7.0f);
      }
      for (std::size_t g = 0; g < lengths.size(); g++) {
        groups.push_back({got[g].data(), ldo, x[g].data(), C + 3, lengths[g]});
        matmul_forward_packed_with(kernel, want[g].data(), ldo, x[g].data(), C + 3, mat.m.m, 0, C, nullptr, lengths[g]);
      }
      matmul_forward_packed_groups_with(kernel, groups, mat.m.m);
      for (std::size_t g = 0; g < lengths.size(); g++)
        ASSERT_EQ(got[g], want[g]) << matmul_packed_kernel_name(kernel) << " " << mat.name << " group " << g << " of "
                                   << lengths[g] << " rows";  // the sentinels too: nothing written past OC
    }
  }
}

TEST(PackedWeights, F16ReportsTheFirstValueItCannotHold) {
  std::vector<float> w = {1.0f, 65504.0f, -2.0f, 70000.0f, 1e6f, 3.0f};  // (2, 3)
  OwnedPackedMatrix h = packed_matrix_from_rows(WeightType::f16, std::vector<float>(6, 0.0f).data(), 2, 3);
  EXPECT_EQ(packed_write_rows(h.m, 0, 2, w.data()), 3);  // 70000 turns infinite; 65504 is the largest half
  OwnedPackedMatrix b = packed_matrix_from_rows(WeightType::bf16, std::vector<float>(6, 0.0f).data(), 2, 3);
  EXPECT_EQ(packed_write_rows(b.m, 0, 2, w.data()), -1);  // bfloat16 has float32's range
}

namespace {

const WeightType kBlockTypes[] = {WeightType::q4_0, WeightType::q4_1, WeightType::q5_0, WeightType::q5_1, WeightType::q8_0,
                                  WeightType::q2_k, WeightType::q3_k, WeightType::q4_k, WeightType::q5_k, WeightType::q6_k};

}  // namespace

TEST(MatmulForwardPackedQuantized, EveryKernelInEveryBlockTypeIsTheF32KernelOnTheDequantizedWeightsBitForBit) {
  // dequantize-then-multiply, two ways: the f32 panels of the widened weights through the same
  // kernel (the same sums in the same order: equal bit for bit), and plain loops (close)
  for (PackedKernel kernel : kKernels) {
    if (!matmul_packed_kernel_supported(kernel)) continue;
    for (WeightType t : kBlockTypes)
      for (int N : {1, 9, 65, 130})
        for (int OC : {1, 33, 70}) {
          const int C = quant_block_elements(t) == 32 ? 96 : 512;
          const std::vector<unsigned char> blocks = quant_random_blocks(t, OC, C, unsigned(N * 131 + OC));
          const RowBand band{t, OC};
          OwnedPackedMatrix q = packed_matrix_from_blocks({&band, 1}, C, blocks.data());
          std::vector<float> w(std::size_t(OC) * C);
          quant_dequantize(t, blocks.data(), std::int64_t(w.size()), w.data());
          OwnedPackedMatrix f = packed_matrix_from_rows(WeightType::f32, w.data(), OC, C);
          auto x = random_vector(N * C, 4), b = random_vector(OC, 5);
          std::vector<float> got(std::size_t(N) * OC), want(got.size()), plain(got.size());
          matmul_forward_packed_with(kernel, got.data(), OC, x.data(), C, q.m, 0, C, b.data(), N);
          matmul_forward_packed_with(kernel, want.data(), OC, x.data(), C, f.m, 0, C, b.data(), N);
          matmul_forward_naive(plain.data(), x.data(), w.data(), b.data(), N, C, OC);
          ASSERT_EQ(got, want) << matmul_packed_kernel_name(kernel) << " " << weight_type_name(t) << " N=" << N << " OC=" << OC;
          float m = 0.0f, scale = 0.0f;
          for (std::size_t i = 0; i < plain.size(); i++)
            m = std::max(m, std::fabs(got[i] - plain[i])), scale = std::max(scale, std::fabs(plain[i]));
          ASSERT_LE(m, 1e-5f * std::max(1.0f, scale)) << matmul_packed_kernel_name(kernel) << " " << weight_type_name(t);
        }
  }
}

TEST(MatmulForwardPackedQuantized, BandsOfDifferentTypesAndAPartOfKNotOnABlockBoundaryMatchTheWidenedWeights) {
  // c_attn as llama.cpp's Q4_K_M may leave it: q and k Q4_K, v Q6_K; and head 1's share of a
  // W_O whose blocks (256) are wider than a head (64 columns from k0 = 64)
  const int C = 512;
  const RowBand bands[] = {{WeightType::q4_k, 40}, {WeightType::q6_k, 30}, {WeightType::q8_0, 3}};
  const int OC = 73;
  std::vector<unsigned char> blocks;
  for (const RowBand& b : bands) {
    auto part = quant_random_blocks(b.type, b.rows, C, unsigned(b.rows));
    blocks.insert(blocks.end(), part.begin(), part.end());
  }
  OwnedPackedMatrix q = packed_matrix_from_blocks(bands, C, blocks.data());
  EXPECT_EQ(packed_matrix_bytes(q.m), blocks.size());
  std::vector<float> w(std::size_t(OC) * C);
  packed_read_rows(q.m, 0, OC, w.data());
  std::vector<float> one(C);
  WeightType t;
  quant_dequantize(WeightType::q6_k, packed_quant_row(q.m, 45, t), C, one.data());
  EXPECT_EQ(t, WeightType::q6_k);
  EXPECT_TRUE(std::equal(one.begin(), one.end(), w.begin() + 45 * C)) << "row 45 is row 5 of the Q6_K band";
  OwnedPackedMatrix f = packed_matrix_from_rows(WeightType::f32, w.data(), OC, C);
  for (PackedKernel kernel : kKernels) {
    if (!matmul_packed_kernel_supported(kernel)) continue;
    for (int N : {1, 7, 100}) {
      auto x = random_vector(N * C, 6);
      for (auto [k0, K] : {std::pair{0, C}, {64, 64}, {250, 12}, {500, 12}}) {
        std::vector<float> got(std::size_t(N) * OC), want(got.size());
        matmul_forward_packed_with(kernel, got.data(), OC, x.data(), C, q.m, k0, K, nullptr, N);
        matmul_forward_packed_with(kernel, want.data(), OC, x.data(), C, f.m, k0, K, nullptr, N);
        ASSERT_EQ(got, want) << matmul_packed_kernel_name(kernel) << " N=" << N << " k0=" << k0 << " K=" << K;
      }
    }
  }
}

TEST(MatmulForwardPackedQuantized, QuantizedBlocksAreTheirFilesSizeNotFloat32s) {
  const RowBand band{WeightType::q4_k, 64};
  PackedMatrix m;
  m.rows = 64, m.cols = 4096;
  ASSERT_TRUE(packed_set_bands(m, {&band, 1}));
  EXPECT_EQ(packed_matrix_bytes(m), std::size_t(64) * 16 * 144);  // 4.5 bits a weight
  EXPECT_LT(packed_matrix_bytes(m) * 7, packed_bytes(WeightType::f32, 64, 4096));
  PackedMatrix odd;
  odd.rows = 64, odd.cols = 100;  // not a whole number of blocks
  EXPECT_FALSE(packed_set_bands(odd, {&band, 1}));
}

namespace {

const QuantDecoder kDecoders[] = {QuantDecoder::scalar, QuantDecoder::avx2, QuantDecoder::avx512};

// The half scales every type's test blocks are given beside the sweep: zeros, the subnormals'
// ends, the largest finite, infinities, quiet and signalling NaNs, each sign.
const std::uint16_t kSpecialHalves[] = {0x0000, 0x8000, 0x0001, 0x8001, 0x03ff, 0x83ff, 0x0400, 0x3c00, 0x7bff,
                                        0xfbff, 0x7c00, 0xfc00, 0x7e00, 0xfe00, 0x7c01, 0x7fff};

// n_blocks random blocks of t whose half scales (d, and m or dmin) sweep the half values: the
// special ones first, then every exponent and sign with assorted mantissas.
std::vector<unsigned char> blocks_with_every_half(WeightType t, int n_blocks, unsigned seed) {
  std::vector<unsigned char> b = quant_random_blocks(t, 1, quant_block_elements(t) * n_blocks, seed);
  const QuantScaleOffsets o = quant_scale_offsets(t);
  const std::size_t bytes = std::size_t(quant_block_bytes(t));
  const int n_special = int(std::size(kSpecialHalves));
  for (int k = 0; k < n_blocks; k++) {
    const std::uint16_t d = k < n_special ? kSpecialHalves[k] : std::uint16_t(unsigned(k) * 16u + unsigned(k) % 16u);
    const std::uint16_t m = k < n_special ? kSpecialHalves[(k * 5 + 3) % n_special] : std::uint16_t(unsigned(k) * 592u + 5u);
    for (auto [at, h] : {std::pair{o.d, d}, {o.min, m}})
      if (at >= 0) {
        b[std::size_t(k) * bytes + std::size_t(at)] = h & 0xff;
        b[std::size_t(k) * bytes + std::size_t(at) + 1] = h >> 8;
      }
  }
  return b;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST(QuantSimd, EveryDecoderGivesTheScalarDecodersFloatsBitForBitWhateverTheHalfScales) {
  // 4,096 blocks of every block type (each has SIMD code under avx2 and avx512): random quants
  // and sub-block scales; d (and dmin or m) every sign and exponent of a half, subnormal,
  // infinite and NaN ones too
  for (QuantDecoder d : kDecoders) {
    if (!quant_decoder_supported(d)) continue;
    for (WeightType t : kBlockTypes) {
      ASSERT_EQ(quant_decoder_simd(d, t), d != QuantDecoder::scalar) << quant_decoder_name(d) << " " << weight_type_name(t);
      const int n_blocks = 4096;
      const std::vector<unsigned char> blocks = blocks_with_every_half(t, n_blocks, unsigned(int(t) + 7));
      const std::int64_t n = std::int64_t(n_blocks) * quant_block_elements(t);
      std::vector<float> want(static_cast<std::size_t>(n)), got(want.size(), -1.0f);
      quant_dequantize(t, blocks.data(), n, want.data());
      quant_dequantize_with(d, t, blocks.data(), n, got.data());
      for (std::size_t i = 0; i < want.size(); i++)
        ASSERT_EQ(std::bit_cast<std::uint32_t>(got[i]), std::bit_cast<std::uint32_t>(want[i]))
            << quant_decoder_name(d) << " " << weight_type_name(t) << " weight " << i << " of block "
            << i / std::size_t(quant_block_elements(t));
    }
  }
}

TEST(QuantSimd, EveryDecoderMatchesTheScalarOneOnEveryRowLengthThePanelsUse) {
  // the panels decode 256 columns at a time (the last step of a row: any multiple of 32), and
  // packed_read_rows whole rows; starting anywhere in a row
  for (QuantDecoder d : kDecoders) {
    if (!quant_decoder_supported(d)) continue;
    for (WeightType t : kBlockTypes) {
      ASSERT_EQ(quant_decoder_simd(d, t), d != QuantDecoder::scalar) << quant_decoder_name(d) << " " << weight_type_name(t);
      const int be = quant_block_elements(t);
      const std::vector<unsigned char> blocks = quant_random_blocks(t, 1, 16 * 256, unsigned(int(t) + 11));
      for (int n = be; n <= 16 * 256; n += n < 512 ? be : 256)
        for (int first : {0, 1, 3}) {
          if (first * be + n > 16 * 256) continue;
          const unsigned char* at = blocks.data() + std::size_t(first) * std::size_t(quant_block_bytes(t));
          std::vector<float> want(static_cast<std::size_t>(n)), got(want.size(), -1.0f);
          quant_dequantize(t, at, n, want.data());
          quant_dequantize_with(d, t, at, n, got.data());
          ASSERT_TRUE(same_bits(got, want)) << quant_decoder_name(d) << " " << weight_type_name(t) << " n=" << n;
        }
    }
  }
}

TEST(QuantSimd, TheTranspositionCopiesEightRowsIntoEightPanelColumnsBitForBit) {
  std::vector<float> rows(8 * 40);
  for (std::size_t i = 0; i < rows.size(); i++)  // every bit pattern kind: NaNs with payloads too
    rows[i] = std::bit_cast<float>(std::uint32_t(i * 2654435761u));
  for (QuantDecoder d : kDecoders) {
    if (!quant_decoder_supported(d)) continue;
    for (int n : {0, 1, 7, 8, 9, 16, 23, 37})
      for (int from : {0, 3}) {
        std::vector<float> out(std::size_t(std::max(1, n)) * 32, 0.5f);
        quant_transpose8(d, rows.data() + from, 40, n, out.data());
        for (int k = 0; k < n; k++)
          for (int j = 0; j < 32; j++) {
            const float want = j < 8 ? rows[std::size_t(j) * 40 + from + k] : 0.5f;  // the other columns untouched
            ASSERT_EQ(std::bit_cast<std::uint32_t>(out[std::size_t(k) * 32 + j]), std::bit_cast<std::uint32_t>(want))
                << quant_decoder_name(d) << " n=" << n << " k=" << k << " j=" << j;
          }
      }
  }
}

TEST(PackedWeights, AQuantizedPanelIsItsRowsDequantizedAndTransposedUnderEveryDecoder) {
  // every block type, three bands a matrix (a band edge inside a panel), a last panel of 9 rows,
  // parts of k that start and end inside blocks; non-finite half scales too
  const int C = 768;
  const WeightType band_types[][3] = {{WeightType::q4_k, WeightType::q6_k, WeightType::q8_0},
                                      {WeightType::q4_0, WeightType::q4_1, WeightType::q5_0},
                                      {WeightType::q5_1, WeightType::q2_k, WeightType::q3_k},
                                      {WeightType::q3_k, WeightType::q5_k, WeightType::q2_k}};
  for (const auto& types : band_types) {
    const RowBand bands[] = {{types[0], 45}, {types[1], 20}, {types[2], 8}};
    std::vector<unsigned char> blocks;
    for (const RowBand& b : bands) {
      auto part = blocks_with_every_half(b.type, b.rows * C / quant_block_elements(b.type), unsigned(b.rows));
      blocks.insert(blocks.end(), part.begin(), part.end());
    }
    OwnedPackedMatrix q = packed_matrix_from_blocks(bands, C, blocks.data());
    const int OC = q.m.rows;
    std::vector<float> w(std::size_t(OC) * C);
    for (int r = 0; r < OC; r++) {
      WeightType t;
      const unsigned char* row = packed_quant_row(q.m, r, t);
      quant_dequantize(t, row, C, w.data() + std::size_t(r) * C);
    }
    for (QuantDecoder d : kDecoders) {
      if (!quant_decoder_supported(d)) continue;
      for (int p = 0; p < q.m.panels(); p++)
        for (auto [k0, K] : {std::pair{0, C}, {64, 64}, {250, 12}, {200, 400}, {767, 1}, {0, 0}}) {
          std::vector<float> got(std::size_t(std::max(1, K)) * kPanel, -1.0f), want(got.size(), -1.0f);
          for (int k = 0; k < K; k++)
            for (int j = 0; j < kPanel; j++) {
              const int r = p * kPanel + j;
              want[std::size_t(k) * kPanel + j] = r < OC ? w[std::size_t(r) * C + k0 + k] : 0.0f;
            }
          packed_quant_panel(d, q.m, p, k0, K, got.data());
          ASSERT_TRUE(same_bits(got, want)) << quant_decoder_name(d) << " " << weight_type_name(types[0]) << "/"
                                            << weight_type_name(types[1]) << "/" << weight_type_name(types[2])
                                            << " panel " << p << " k0=" << k0 << " K=" << K;
        }
    }
  }
}

TEST(QuantSimd, TheBestDecoderIsOneThisCpuRunsAndTheKernelsDescriptionNamesIt) {
  EXPECT_TRUE(quant_decoder_supported(QuantDecoder::scalar));
  EXPECT_TRUE(quant_decoder_supported(quant_decoder_best()));
  EXPECT_FALSE(quant_decoder_simd(QuantDecoder::scalar, WeightType::q4_k));
  if (quant_decoder_supported(QuantDecoder::avx2)) {
    for (WeightType t : kBlockTypes) EXPECT_TRUE(quant_decoder_simd(QuantDecoder::avx2, t)) << weight_type_name(t);
  }
  const std::string desc = matmul_packed_kernels_description();
  EXPECT_NE(desc.find("block decoders"), std::string::npos) << desc;
}
