// Tests for model/ops/fast_exp.h.
#include "model/ops/fast_exp.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

using headlab::model::exp_shifted_inplace;

TEST(FastExp, MatchesStdExpToFloatPrecision) {
  std::vector<float> x;
  for (float v = -90.0f; v <= 0.0f; v += 0.0137f) x.push_back(v);
  std::vector<float> e = x;
  float sum = 0;
  exp_shifted_inplace(e.data(), static_cast<int>(e.size()), 0.0f, &sum);
  double max_rel = 0, exact_sum = 0;
  for (std::size_t i = 0; i < x.size(); i++) {
    double ref = std::exp(double(x[i]));
    exact_sum += x[i] < -87.0f ? 0.0 : ref;
    if (x[i] >= -87.0f) max_rel = std::max(max_rel, std::fabs(e[i] - ref) / ref);
    else EXPECT_EQ(e[i], 0.0f);
  }
  std::printf("fast exp: max relative error %.3g\n", max_rel);
  EXPECT_LT(max_rel, 5e-7);
  EXPECT_NEAR(sum, exact_sum, 1e-5 * exact_sum);
}

TEST(FastExp, MinusInfinityGivesZero) {
  float row[3] = {-std::numeric_limits<float>::infinity(), 1.0f, 2.0f};
  float sum = 0;
  exp_shifted_inplace(row, 3, 2.0f, &sum);
  EXPECT_EQ(row[0], 0.0f);
  EXPECT_NEAR(row[1], std::exp(-1.0f), 1e-7f);
  EXPECT_FLOAT_EQ(row[2], 1.0f);
}

TEST(FastExp, TanhMatchesStdTanh) {
  double max_abs = 0;
  for (float x = -30.0f; x <= 30.0f; x += 0.001f)
    max_abs = std::max(max_abs, std::fabs(double(headlab::model::fast_tanh(x)) - std::tanh(double(x))));
  std::printf("fast tanh: max abs error %.3g\n", max_abs);
  EXPECT_LT(max_abs, 2e-7);
}

TEST(FastExp, ExpOfPositiveArgumentsAndSaturation) {
  double max_rel = 0;
  for (float x = -80.0f; x <= 88.0f; x += 0.01f)
    max_rel = std::max(max_rel, std::fabs(headlab::model::fast_exp(x) - std::exp(double(x))) / std::exp(double(x)));
  EXPECT_LT(max_rel, 3e-7);
  EXPECT_TRUE(std::isfinite(headlab::model::fast_exp(1000.0f)));
  EXPECT_EQ(headlab::model::fast_exp(-1000.0f), 0.0f);
}

// A diverged run feeds NaN through a softmax: the answer is NaN, and no float-to-int cast of
// it is made on the way (undefined behaviour, which UBSan stopped the trainer's test on).
TEST(FastExp, NaNGivesNaN) {
  EXPECT_TRUE(std::isnan(headlab::model::fast_exp(std::nanf(""))));
  EXPECT_TRUE(std::isnan(headlab::model::fast_exp(-std::nanf(""))));
  EXPECT_TRUE(std::isnan(headlab::model::fast_tanh(std::nanf(""))));
}
