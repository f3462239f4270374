// Tests for model/ops/swiglu.h: the vectorised forward against a plain double loop.
#include "model/ops/swiglu.h"

#include <gtest/gtest.h>

#include <cmath>

#include "testing/gradcheck.h"

using headlab::model::swiglu_forward;
using headlab::testing::random_vector;

TEST(SwigluForward, MatchesAPlainLoopOfSiluGateTimesUp) {
  const int N = 5, F = 37;
  auto in = random_vector(N * 2 * F, 3, 6.0f);  // gates far into both tails of the sigmoid
  std::vector<float> out(N * F);
  swiglu_forward(out.data(), in.data(), N, F);
  double worst = 0;
  for (int n = 0; n < N; n++)
    for (int i = 0; i < F; i++) {
      const double g = in[n * 2 * F + i], u = in[n * 2 * F + F + i];
      const double want = g / (1.0 + std::exp(-g)) * u;
      worst = std::max(worst, std::fabs(out[n * F + i] - want) / std::max(1.0, std::fabs(want)));  // relative
    }
  EXPECT_LT(worst, 1e-6);
}
