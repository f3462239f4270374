// Tests for train/rotary.h: the trainer's rotation is the engine's, its backward matches
// finite differences and undoes the forward, and q.k after it depends on the offset only.
#include "train/rotary.h"

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "model/ops/rope.h"
#include "testing/gradcheck.h"

using namespace headlab;
using namespace headlab::train;
using headlab::testing::random_vector;

TEST(RotaryForward, IsTheEnginesRotationBitForBit) {
  const int T = 40, NH = 3, HS = 16, stride = 3 * NH * HS;
  for (int d : {16, 8, 4})  // all of the head, a half, a quarter (Pythia)
    for (float theta : {10000.0f, 500000.0f}) {
      auto x = random_vector(std::size_t(T) * stride, 11);
      auto engine = x;
      model::rope_forward(engine.data(), T, NH, HS, stride, d, /*interleaved=*/false, theta, 1.0f);
      RotaryTable r = rotary_table(T, d, theta);
      rotary_forward(x.data(), r, T, NH, HS, stride);
      int differ = 0;
      for (std::size_t i = 0; i < x.size(); ++i) differ += x[i] != engine[i];
      EXPECT_EQ(differ, 0) << "d " << d << " theta " << theta;
    }
}

TEST(RotaryBackward, MatchesFiniteDifferences) {
  const int T = 9, NH = 2, HS = 8, stride = 3 * NH * HS;
  for (int d : {8, 4}) {
    RotaryTable r = rotary_table(T, d, 10000.0f);
    auto x = random_vector(std::size_t(T) * stride, 3);
    auto w = random_vector(x.size(), 4);  // loss = sum(rotated x * w): dloss/drotated = w
    auto loss = [&] {
      std::vector<float> y = x;
      rotary_forward(y.data(), r, T, NH, HS, stride);
      return headlab::testing::weighted_sum(y.data(), w.data(), y.size());
    };
    std::vector<float> dx = w;
    rotary_backward(dx.data(), r, T, NH, HS, stride);
    EXPECT_TRUE(headlab::testing::gradcheck("rotary dx (d " + std::to_string(d) + ")", loss, x.data(), x.size(),
                                            dx.data()));
  }
}

// A rotation's transpose is its inverse: turning by the negative angle gives x back.
TEST(RotaryBackward, TurnsTheForwardBack) {
  const int T = 64, NH = 4, HS = 32, stride = NH * HS;
  RotaryTable r = rotary_table(T, HS, 10000.0f);
  auto x = random_vector(std::size_t(T) * stride, 5);
  auto y = x;
  rotary_forward(y.data(), r, T, NH, HS, stride);
  rotary_backward(y.data(), r, T, NH, HS, stride);
  double max_diff = 0.0;
  for (std::size_t i = 0; i < x.size(); ++i) max_diff = std::max(max_diff, double(std::fabs(x[i] - y[i])));
  EXPECT_LT(max_diff, 1e-5);
}

// Why rotary exists: the same q and k placed at (t, s) and at (t + 5, s + 5) give the same q.k.
TEST(RotaryForward, ScoresDependOnTheOffsetOnly) {
  const int T = 48, HS = 16;
  RotaryTable r = rotary_table(T, HS, 10000.0f);
  auto q = random_vector(HS, 1), k = random_vector(HS, 2);
  auto score = [&](int t, int s) {
    std::vector<float> qs(std::size_t(T) * HS), ks(std::size_t(T) * HS);
    std::copy(q.begin(), q.end(), qs.begin() + std::size_t(t) * HS);
    std::copy(k.begin(), k.end(), ks.begin() + std::size_t(s) * HS);
    rotary_forward(qs.data(), r, T, 1, HS, HS);
    rotary_forward(ks.data(), r, T, 1, HS, HS);
    double dot = 0.0;
    for (int i = 0; i < HS; ++i) dot += double(qs[std::size_t(t) * HS + i]) * ks[std::size_t(s) * HS + i];
    return dot;
  };
  for (int offset : {0, 1, 7, 20}) EXPECT_NEAR(score(offset + 3, 3), score(offset + 25, 25), 1e-4) << offset;
  EXPECT_GT(std::fabs(score(10, 3) - score(10, 4)), 1e-3);  // a different offset, a different score
}
