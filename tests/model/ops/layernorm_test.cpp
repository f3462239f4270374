// Tests for model/ops/layernorm.h.
#include "model/ops/layernorm.h"

#include <gtest/gtest.h>

#include <cmath>

#include "testing/gradcheck.h"

using headlab::model::layernorm_backward;
using headlab::model::layernorm_forward;
using headlab::testing::gradcheck;
using headlab::testing::random_vector;
using headlab::testing::weighted_sum;

TEST(LayerNormForward, NormalisesEachRowToZeroMeanUnitVariance) {
  const int N = 3, C = 16;
  auto x = random_vector(N * C, 1, 3.0f);
  std::vector<float> w(C, 1.0f), b(C, 0.0f), out(N * C), mean(N), rstd(N);
  layernorm_forward(out.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), N, C, 1e-5f);
  for (int n = 0; n < N; n++) {
    double m = 0, v = 0;
    for (int i = 0; i < C; i++) m += out[n * C + i];
    m /= C;
    for (int i = 0; i < C; i++) v += (out[n * C + i] - m) * (out[n * C + i] - m);
    v /= C;
    EXPECT_NEAR(m, 0.0, 1e-5);
    EXPECT_NEAR(v, 1.0, 1e-3);
  }
}

TEST(LayerNormBackward, MatchesFiniteDifferences) {
  const int N = 4, C = 10;
  auto x = random_vector(N * C, 1);
  auto w = random_vector(C, 2);
  auto b = random_vector(C, 3);
  auto dout = random_vector(N * C, 4);
  std::vector<float> out(N * C), mean(N), rstd(N);
  auto loss = [&] {
    layernorm_forward(out.data(), nullptr, nullptr, x.data(), w.data(), b.data(), N, C, 1e-5f);
    return weighted_sum(out.data(), dout.data(), out.size());
  };
  layernorm_forward(out.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), N, C, 1e-5f);
  std::vector<float> dx(N * C, 0.0f), dw(C, 0.0f), db(C, 0.0f);
  layernorm_backward(dx.data(), dw.data(), db.data(), dout.data(), x.data(), w.data(), mean.data(), rstd.data(),
                     N, C);
  EXPECT_TRUE(gradcheck("layernorm dinp", loss, x.data(), x.size(), dx.data()));
  EXPECT_TRUE(gradcheck("layernorm dweight", loss, w.data(), w.size(), dw.data()));
  EXPECT_TRUE(gradcheck("layernorm dbias", loss, b.data(), b.size(), db.data()));
}
