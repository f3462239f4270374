#include "train/adamw.h"

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

using namespace headlab::train;

TEST(AdamW, FirstStepMovesEachWeightByLrTimesSign) {
  // at t = 1 the bias-corrected m / sqrt(v) is g / |g| = sign(g)
  std::vector<float> p = {1.0f, -2.0f}, m(2, 0.0f), v(2, 0.0f), g = {0.5f, -3.0f};
  AdamWOptions o;
  adamw_update(p.data(), m.data(), v.data(), g.data(), 2, 0.1f, 0.0f, 1, o);
  EXPECT_NEAR(p[0], 0.9f, 1e-6);
  EXPECT_NEAR(p[1], -1.9f, 1e-6);
}

TEST(AdamW, WeightDecayIsDecoupled) {
  std::vector<float> p = {2.0f}, m(1, 0.0f), v(1, 0.0f), g = {0.0f};
  AdamWOptions o;
  adamw_update(p.data(), m.data(), v.data(), g.data(), 1, 0.1f, 0.5f, 1, o);
  EXPECT_NEAR(p[0], 2.0f - 0.1f * 0.5f * 2.0f, 1e-6);  // zero gradient: only the decay
}

TEST(AdamW, SecondStepMatchesHandComputation) {
  std::vector<float> p = {1.0f}, m(1, 0.0f), v(1, 0.0f);
  AdamWOptions o;  // b1 0.9, b2 0.95, eps 1e-8
  std::vector<float> g1 = {1.0f}, g2 = {-2.0f};
  adamw_update(p.data(), m.data(), v.data(), g1.data(), 1, 0.01f, 0.1f, 1, o);
  adamw_update(p.data(), m.data(), v.data(), g2.data(), 1, 0.01f, 0.1f, 2, o);
  double pe = 1.0;
  pe -= 0.01 * (1.0 / (1.0 + 1e-8) + 0.1 * pe);
  double me = 0.9 * 0.1 + 0.1 * -2.0, ve = 0.95 * 0.05 + 0.05 * 4.0;
  double mh = me / (1 - 0.81), vh = ve / (1 - 0.9025);
  pe -= 0.01 * (mh / (std::sqrt(vh) + 1e-8) + 0.1 * pe);
  EXPECT_NEAR(p[0], pe, 1e-6);
}

TEST(GradClip, ScalesOnlyAboveTheThreshold) {
  std::vector<float> g = {3.0f, 4.0f};
  EXPECT_NEAR(grad_norm(g.data(), 2), 5.0, 1e-12);
  EXPECT_NEAR(clip_factor(5.0, 1.0f), 1.0f / 5.0f, 1e-6);
  EXPECT_EQ(clip_factor(0.5, 1.0f), 1.0f);
  EXPECT_EQ(clip_factor(100.0, 0.0f), 1.0f);  // 0 turns clipping off
}
