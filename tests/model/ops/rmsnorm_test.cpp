// Tests for model/ops/rmsnorm.h: the vectorised forward against a plain double loop.
#include "model/ops/rmsnorm.h"

#include <gtest/gtest.h>

#include <cmath>

#include "testing/gradcheck.h"

using headlab::model::rmsnorm_forward;
using headlab::testing::random_vector;

TEST(RmsNormForward, MatchesAPlainLoop) {
  for (int C : {5, 16, 37, 64}) {  // below, at and past the 16 lanes
    const int N = 7;
    const float eps = 1e-6f;
    auto x = random_vector(N * C, 1, 3.0f);
    auto w = random_vector(C, 2);
    std::vector<float> out(N * C);
    rmsnorm_forward(out.data(), x.data(), w.data(), N, C, eps);
    double worst = 0;
    for (int n = 0; n < N; n++) {
      double ss = 0;
      for (int i = 0; i < C; i++) ss += double(x[n * C + i]) * x[n * C + i];
      const double r = 1.0 / std::sqrt(ss / C + eps);
      for (int i = 0; i < C; i++) worst = std::max(worst, std::fabs(out[n * C + i] - x[n * C + i] * r * w[i]));
    }
    EXPECT_LT(worst, 1e-5) << "C = " << C;
  }
}

TEST(RmsNormForward, KeepsTheMeanUnlikeLayerNorm) {
  // a constant row normalises to its sign, not to zero
  const float x[4] = {2.0f, 2.0f, 2.0f, 2.0f}, w[4] = {1.0f, 1.0f, 1.0f, 1.0f};
  float out[4];
  rmsnorm_forward(out, x, w, 1, 4, 0.0f);
  for (float v : out) EXPECT_FLOAT_EQ(v, 1.0f);
}

// The input's gradient of RMSNorm, plain and Gemma's (1 + w), against central differences.
TEST(RmsnormBackward, MatchesFiniteDifferencesWithAndWithoutPlusOne) {
  const int N = 3, C = 8;
  for (bool plus_one : {false, true}) {
    std::vector<float> x = random_vector(N * C, 11), w = random_vector(C, 12, 0.5f), dout = random_vector(N * C, 13);
    std::vector<float> out(N * C), dx(N * C, 0.0f);
    auto loss = [&] {
      rmsnorm_forward(out.data(), x.data(), w.data(), N, C, 1e-6f, plus_one);
      return headlab::testing::weighted_sum(out.data(), dout.data(), out.size());
    };
    headlab::model::rmsnorm_backward(dx.data(), dout.data(), x.data(), w.data(), N, C, 1e-6f, plus_one);
    EXPECT_TRUE(headlab::testing::gradcheck(plus_one ? "rmsnorm (1+w) dinp" : "rmsnorm dinp", loss, x.data(), x.size(),
                                            dx.data()));
  }
}
