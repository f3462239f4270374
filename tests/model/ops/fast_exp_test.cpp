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
