// Tests for model/ops/gelu.h.
#include "model/ops/gelu.h"

#include <gtest/gtest.h>

#include "testing/gradcheck.h"

using headlab::model::gelu_backward;
using headlab::model::gelu_forward;
using headlab::testing::gradcheck;
using headlab::testing::random_vector;
using headlab::testing::weighted_sum;

TEST(GeluForward, MatchesKnownValues) {
  // torch.nn.functional.gelu(x, approximate="tanh") at -2, -0.5, 0, 1, 3
  const float x[5] = {-2.0f, -0.5f, 0.0f, 1.0f, 3.0f};
  const float expected[5] = {-0.04540230f, -0.15428598f, 0.0f, 0.84119200f, 2.99636340f};
  float out[5];
  gelu_forward(out, x, 5);
  for (int i = 0; i < 5; i++) EXPECT_NEAR(out[i], expected[i], 1e-6f) << "x = " << x[i];
}

TEST(GeluBackward, MatchesFiniteDifferences) {
  const int N = 200;
  auto x = random_vector(N, 1, 2.0f);
  auto dout = random_vector(N, 2);
  std::vector<float> out(N), dx(N, 0.0f);
  auto loss = [&] {
    gelu_forward(out.data(), x.data(), N);
    return weighted_sum(out.data(), dout.data(), N);
  };
  gelu_backward(dx.data(), x.data(), dout.data(), N);
  EXPECT_TRUE(gradcheck("gelu dinp", loss, x.data(), x.size(), dx.data()));
}

TEST(GeluErfForward, MatchesKnownValues) {
  // torch.nn.functional.gelu(x) (the exact, erf form) at -2, -0.5, 0, 1, 3
  const float x[5] = {-2.0f, -0.5f, 0.0f, 1.0f, 3.0f};
  const float expected[5] = {-0.04550026f, -0.15426877f, 0.0f, 0.84134475f, 2.99595031f};
  float out[5];
  headlab::model::gelu_erf_forward(out, x, 5);
  for (int i = 0; i < 5; i++) EXPECT_NEAR(out[i], expected[i], 1e-6f) << "x = " << x[i];
}

// The exact (erf) GELU's gradient, against central differences.
TEST(GeluErfBackward, MatchesFiniteDifferences) {
  const int N = 32;
  std::vector<float> x = random_vector(N, 31, 2.0f), dout = random_vector(N, 32), out(N), dx(N);
  auto loss = [&] {
    headlab::model::gelu_erf_forward(out.data(), x.data(), N);
    return weighted_sum(out.data(), dout.data(), N);
  };
  headlab::model::gelu_erf_backward(dx.data(), x.data(), dout.data(), N);
  EXPECT_TRUE(gradcheck("gelu_erf dinp", loss, x.data(), x.size(), dx.data()));
}
