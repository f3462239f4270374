#include "train/cross_entropy.h"

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "testing/gradcheck.h"

using namespace headlab::train;

TEST(CrossEntropy, UniformLogitsGiveLogV) {
  const int N = 2, V = 8;
  std::vector<float> logits(N * V, 0.5f), probs(N * V), losses(N);
  std::vector<int> targets = {3, 7};
  cross_entropy_forward(losses.data(), probs.data(), logits.data(), targets.data(), N, V);
  EXPECT_NEAR(losses[0], std::log(8.0f), 1e-6);
  EXPECT_NEAR(probs[5], 1.0f / 8, 1e-7);
}

TEST(CrossEntropy, IgnoredTargetHasNoLossNorGradient) {
  const int N = 1, V = 4;
  std::vector<float> logits = {1, 2, 3, 4}, probs(V), losses(N), dlogits(V, 0.0f), dlosses = {1.0f};
  std::vector<int> targets = {-1};
  cross_entropy_forward(losses.data(), probs.data(), logits.data(), targets.data(), N, V);
  EXPECT_EQ(losses[0], 0.0f);
  cross_entropy_backward(dlogits.data(), dlosses.data(), probs.data(), targets.data(), N, V);
  for (float d : dlogits) EXPECT_EQ(d, 0.0f);
}

TEST(CrossEntropy, HugeLogitsStayFinite) {
  const int N = 1, V = 3;
  std::vector<float> logits = {1000, -1000, 0}, probs(V), losses(N);
  std::vector<int> targets = {1};
  cross_entropy_forward(losses.data(), probs.data(), logits.data(), targets.data(), N, V);
  EXPECT_TRUE(std::isfinite(losses[0]));
  EXPECT_NEAR(losses[0], 2000.0f, 1e-2);
}

TEST(CrossEntropyBackward, MatchesFiniteDifferences) {
  const int N = 3, V = 5;
  std::vector<float> logits(N * V);
  for (int i = 0; i < N * V; ++i) logits[i] = std::sin(1.7f * i);
  std::vector<int> targets = {1, 4, 0};
  std::vector<float> dlosses = {0.3f, -1.1f, 0.7f};  // a weighted sum of the losses
  auto loss = [&] {
    std::vector<float> probs(N * V), losses(N);
    cross_entropy_forward(losses.data(), probs.data(), logits.data(), targets.data(), N, V);
    double s = 0;
    for (int n = 0; n < N; ++n) s += double(dlosses[n]) * losses[n];
    return s;
  };
  std::vector<float> probs(N * V), losses(N), dlogits(N * V, 0.0f);
  cross_entropy_forward(losses.data(), probs.data(), logits.data(), targets.data(), N, V);
  cross_entropy_backward(dlogits.data(), dlosses.data(), probs.data(), targets.data(), N, V);
  EXPECT_TRUE(headlab::testing::gradcheck("cross-entropy dlogits", loss, logits.data(), logits.size(), dlogits.data()));
}
