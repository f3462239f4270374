// Tests for model/ops/residual.h.
#include "model/ops/residual.h"

#include <gtest/gtest.h>

#include "testing/gradcheck.h"

using headlab::model::residual_backward;
using headlab::model::residual_forward;
using headlab::testing::gradcheck;
using headlab::testing::random_vector;
using headlab::testing::weighted_sum;

TEST(ResidualBackward, MatchesFiniteDifferences) {
  const int N = 30;
  auto a = random_vector(N, 1), b = random_vector(N, 2), dout = random_vector(N, 3);
  std::vector<float> out(N), da(N, 0.0f), db(N, 0.0f);
  auto loss = [&] {
    residual_forward(out.data(), a.data(), b.data(), N);
    return weighted_sum(out.data(), dout.data(), N);
  };
  residual_backward(da.data(), db.data(), dout.data(), N);
  EXPECT_TRUE(gradcheck("residual dinp1", loss, a.data(), a.size(), da.data()));
  EXPECT_TRUE(gradcheck("residual dinp2", loss, b.data(), b.size(), db.data()));
}
