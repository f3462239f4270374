// Tests for model/ops/matmul_packed.h: the packed-weight kernel against the plain loops.
#include "model/ops/matmul_packed.h"

#include <gtest/gtest.h>

#include <cmath>

#include "model/ops/matmul.h"
#include "testing/gradcheck.h"

using namespace headlab::model;
using headlab::testing::random_vector;

TEST(MatmulForwardPacked, MatchesPlainLoopsForEveryRowAndColumnLeftover) {
  if (!matmul_packed_supported()) GTEST_SKIP() << "this CPU has no AVX-512F: nothing is packed here";
  // N around the 8-row tiles, OC around the 32-column panels (257 is odd like GPT-2's
  // vocabulary), C not a multiple of 16
  for (int N : {1, 3, 7, 8, 9, 16, 64, 65, 256})
    for (int OC : {1, 5, 31, 32, 33, 96, 257})
      for (int C : {16, 50}) {
        auto x = random_vector(N * C, 1), w = random_vector(OC * C, 2), b = random_vector(OC, 3);
        std::vector<float> packed(matmul_packed_size(OC, C), -1.0f);
        matmul_pack(packed.data(), w.data(), OC, C);
        for (const float* bias : {static_cast<const float*>(b.data()), static_cast<const float*>(nullptr)}) {
          // out carries a sentinel one row past the end: the kernel must not write there
          std::vector<float> fast(std::size_t(N + 1) * OC, 7.0f), plain(std::size_t(N) * OC);
          matmul_forward_packed(fast.data(), x.data(), packed.data(), bias, N, C, OC);
          matmul_forward_naive(plain.data(), x.data(), w.data(), bias, N, C, OC);
          float m = 0.0f;
          for (std::size_t i = 0; i < plain.size(); i++) m = std::max(m, std::fabs(fast[i] - plain[i]));
          EXPECT_LT(m, 1e-4f) << "N=" << N << " OC=" << OC << " C=" << C << (bias ? " bias" : "");
          for (int o = 0; o < OC; o++) ASSERT_EQ(fast[std::size_t(N) * OC + o], 7.0f) << "wrote past row N-1";
        }
      }
}

TEST(MatmulPack, PadsTheLastPanelWithZeros) {
  const int OC = 33, C = 3;  // two panels, the second with one real column
  auto w = random_vector(OC * C, 4);
  std::vector<float> packed(matmul_packed_size(OC, C), -1.0f);
  ASSERT_EQ(packed.size(), std::size_t(2 * kPanel * C));
  matmul_pack(packed.data(), w.data(), OC, C);
  for (int k = 0; k < C; k++) {
    EXPECT_EQ(packed[(std::size_t(1) * C + k) * kPanel + 0], w[32 * C + k]);  // column 32 of row k
    for (int j = 1; j < kPanel; j++) EXPECT_EQ(packed[(std::size_t(1) * C + k) * kPanel + j], 0.0f);
  }
  EXPECT_EQ(packed[std::size_t(2) * kPanel + 5], w[5 * C + 2]);  // panel 0, k = 2, column 5
}
