// Tests for model/ops/matmul.h.
#include "model/ops/matmul.h"

#include <gtest/gtest.h>

#include <cmath>

#include "testing/gradcheck.h"

using headlab::model::matmul_backward;
using headlab::model::matmul_backward_naive;
using headlab::model::matmul_forward;
using headlab::model::matmul_forward_naive;
using headlab::testing::gradcheck;
using headlab::testing::random_vector;
using headlab::testing::weighted_sum;

static float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  float m = 0.0f;
  for (std::size_t i = 0; i < a.size(); i++) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

TEST(MatmulForward, BlasMatchesPlainLoops) {
  const int N = 37, C = 64, OC = 96;
  auto x = random_vector(N * C, 1), w = random_vector(OC * C, 2), b = random_vector(OC, 3);
  std::vector<float> fast(N * OC), plain(N * OC);
  matmul_forward(fast.data(), x.data(), w.data(), b.data(), N, C, OC);
  matmul_forward_naive(plain.data(), x.data(), w.data(), b.data(), N, C, OC);
  EXPECT_LT(max_abs_diff(fast, plain), 1e-4f);
  matmul_forward(fast.data(), x.data(), w.data(), nullptr, N, C, OC);
  matmul_forward_naive(plain.data(), x.data(), w.data(), nullptr, N, C, OC);
  EXPECT_LT(max_abs_diff(fast, plain), 1e-4f);
}

TEST(MatmulForwardSmall, MatchesPlainLoopsForEveryLeftover) {
  // N and OC not multiples of the 4 x 4 blocks, OC odd like GPT-2's vocabulary
  for (int N : {1, 3, 4, 7, 16, 32, 128})
    for (int OC : {1, 5, 64, 257}) {
      const int C = 48;
      auto x = random_vector(N * C, 1), w = random_vector(OC * C, 2), b = random_vector(OC, 3);
      std::vector<float> fast(N * OC), plain(N * OC);
      headlab::model::matmul_forward_small(fast.data(), x.data(), w.data(), b.data(), N, C, OC);
      matmul_forward_naive(plain.data(), x.data(), w.data(), b.data(), N, C, OC);
      EXPECT_LT(max_abs_diff(fast, plain), 1e-4f) << "N " << N << " OC " << OC;
      headlab::model::matmul_forward_small(fast.data(), x.data(), w.data(), nullptr, N, C, OC);
      matmul_forward_naive(plain.data(), x.data(), w.data(), nullptr, N, C, OC);
      EXPECT_LT(max_abs_diff(fast, plain), 1e-4f) << "N " << N << " OC " << OC << " without bias";
    }
  EXPECT_TRUE(headlab::model::matmul_small_applies(headlab::model::matmul_small_max_rows(), 48));
  EXPECT_FALSE(headlab::model::matmul_small_applies(headlab::model::matmul_small_max_rows() + 1, 48));
  EXPECT_FALSE(headlab::model::matmul_small_applies(4, 20));
}

TEST(MatmulBackward, BlasMatchesPlainLoops) {
  const int N = 29, C = 48, OC = 80;
  auto x = random_vector(N * C, 1), w = random_vector(OC * C, 2), d = random_vector(N * OC, 3);
  // both accumulate into non-zero buffers
  auto dx1 = random_vector(N * C, 4), dw1 = random_vector(OC * C, 5), db1 = random_vector(OC, 6);
  auto dx2 = dx1, dw2 = dw1, db2 = db1;
  matmul_backward(dx1.data(), dw1.data(), db1.data(), d.data(), x.data(), w.data(), N, C, OC);
  matmul_backward_naive(dx2.data(), dw2.data(), db2.data(), d.data(), x.data(), w.data(), N, C, OC);
  EXPECT_LT(max_abs_diff(dx1, dx2), 1e-4f);
  EXPECT_LT(max_abs_diff(dw1, dw2), 1e-4f);
  EXPECT_LT(max_abs_diff(db1, db2), 1e-4f);
}

TEST(MatmulBackward, MatchesFiniteDifferences) {
  const int N = 5, C = 6, OC = 7;
  auto x = random_vector(N * C, 1), w = random_vector(OC * C, 2), b = random_vector(OC, 3);
  auto dout = random_vector(N * OC, 4);
  std::vector<float> out(N * OC);
  auto loss = [&] {
    matmul_forward(out.data(), x.data(), w.data(), b.data(), N, C, OC);
    return weighted_sum(out.data(), dout.data(), out.size());
  };
  std::vector<float> dx(N * C, 0.0f), dw(OC * C, 0.0f), db(OC, 0.0f);
  matmul_backward(dx.data(), dw.data(), db.data(), dout.data(), x.data(), w.data(), N, C, OC);
  EXPECT_TRUE(gradcheck("matmul dinp", loss, x.data(), x.size(), dx.data()));
  EXPECT_TRUE(gradcheck("matmul dweight", loss, w.data(), w.size(), dw.data()));
  EXPECT_TRUE(gradcheck("matmul dbias", loss, b.data(), b.size(), db.data()));
}

// The input's gradient alone equals matmul_backward's dinp.
TEST(MatmulBackwardInput, EqualsTheFullBackwardsInputGradient) {
  const int N = 3, C = 5, OC = 7;
  std::vector<float> inp = random_vector(N * C, 51), w = random_vector(OC * C, 52), dout = random_vector(N * OC, 53);
  std::vector<float> a(N * C, 0.0f), b(N * C, 0.0f), dw(OC * C, 0.0f);
  headlab::model::matmul_backward_input(a.data(), dout.data(), w.data(), N, C, OC);
  matmul_backward(b.data(), dw.data(), nullptr, dout.data(), inp.data(), w.data(), N, C, OC);
  for (int i = 0; i < N * C; i++) EXPECT_NEAR(a[i], b[i], 1e-5f);
}
