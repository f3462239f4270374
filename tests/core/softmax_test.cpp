#include "core/softmax.h"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

using namespace headlab;
using namespace headlab::core;

TEST(Softmax, RowsSumToOne) {
  Matrix x(3, 4);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) x.at(i, j) = std::sin(i * 4 + j) * 3;
  Matrix p;
  softmax_forward(p, x);
  for (int i = 0; i < 3; ++i) {
    double sum = 0;
    for (int j = 0; j < 4; ++j) sum += p.at(i, j);
    EXPECT_NEAR(sum, 1.0, 1e-12);
  }
}

TEST(Softmax, MinusInfinityBecomesExactlyZero) {
  Matrix x(1, 3);
  x.at(0, 0) = 1;
  x.at(0, 1) = -std::numeric_limits<double>::infinity();
  x.at(0, 2) = 1;
  Matrix p;
  softmax_forward(p, x);
  EXPECT_EQ(p.at(0, 1), 0.0);
  EXPECT_DOUBLE_EQ(p.at(0, 0), 0.5);
}

TEST(Softmax, LargeScoresDoNotOverflow) {
  Matrix x(1, 2);
  x.at(0, 0) = 1000;
  x.at(0, 1) = 1000;
  Matrix p;
  softmax_forward(p, x);
  EXPECT_DOUBLE_EQ(p.at(0, 0), 0.5);
}

TEST(SoftmaxBackward, MatchesFiniteDifferences) {
  Matrix x(2, 3);
  for (int k = 0; k < 6; ++k) x.data[k] = 0.3 * k - 0.7 * (k % 2);
  Matrix dprobs(2, 3);
  for (int k = 0; k < 6; ++k) dprobs.data[k] = std::cos(k);
  // loss = sum(dprobs * softmax(x))
  auto loss = [&](const Matrix& in) {
    Matrix p;
    softmax_forward(p, in);
    double s = 0;
    for (int k = 0; k < 6; ++k) s += p.data[k] * dprobs.data[k];
    return s;
  };
  Matrix p, dx;
  softmax_forward(p, x);
  softmax_backward(dx, dprobs, p);
  double max_diff = 0;
  for (int k = 0; k < 6; ++k) {
    const double h = 1e-6;
    Matrix plus = x, minus = x;
    plus.data[k] += h;
    minus.data[k] -= h;
    double numeric = (loss(plus) - loss(minus)) / (2 * h);
    max_diff = std::max(max_diff, std::abs(numeric - dx.data[k]));
  }
  EXPECT_LT(max_diff, 1e-8) << "max abs difference " << max_diff;
}
