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

// SwiGLU's and GeGLU's gradients with respect to gate and up, against central differences.
TEST(GatedMlpBackward, SwigluAndGegluMatchFiniteDifferences) {
  const int N = 2, F = 6;
  for (bool swi : {true, false}) {
    std::vector<float> inp = random_vector(N * 2 * F, 21), dout = random_vector(N * F, 22);
    std::vector<float> out(N * F), dinp(N * 2 * F, 0.0f);
    auto loss = [&] {
      if (swi) swiglu_forward(out.data(), inp.data(), N, F);
      else headlab::model::geglu_forward(out.data(), inp.data(), N, F);
      return headlab::testing::weighted_sum(out.data(), dout.data(), out.size());
    };
    if (swi) headlab::model::swiglu_backward(dinp.data(), dout.data(), inp.data(), N, F);
    else headlab::model::geglu_backward(dinp.data(), dout.data(), inp.data(), N, F);
    EXPECT_TRUE(headlab::testing::gradcheck(swi ? "swiglu dinp" : "geglu dinp", loss, inp.data(), inp.size(), dinp.data()));
  }
}
