// Tests for model/next_token.h: the row log-softmax, per-token loss and top-k, against
// sums written out by hand.
#include "model/next_token.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "model/forward.h"
#include "testing/model_fixtures.h"

using namespace headlab::model;
using headlab::testing::load_fixture;

TEST(RowLogSumExp, MatchesTheSumWrittenOut) {
  const float row[3] = {1.0f, 2.0f, 3.0f};
  EXPECT_NEAR(row_log_sum_exp(row, 3), std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0)), 1e-12);
}

TEST(RowLogSumExp, DoesNotOverflowOnLargeLogits) {
  const float row[2] = {1000.0f, 1000.0f};
  EXPECT_NEAR(row_log_sum_exp(row, 2), 1000.0 + std::log(2.0), 1e-9);
}

TEST(RowLogSumExp, AVocabularyLongRowMatchesThePlainDoubleLoopWithMinusInfinitiesAndALeftover) {
  // the vector exps (8 or 4 lanes) and their leftover, against std::exp summed in order
  for (int V : {7, 1000, 128257}) {
    std::vector<float> row(static_cast<std::size_t>(V));
    unsigned state = unsigned(V);
    for (float& v : row) v = float(int((state = state * 1103515245u + 12345u) >> 16 & 4095) - 2048) / 64.0f;
    row[std::size_t(V) / 2] = -INFINITY;
    double maxv = -INFINITY, sum = 0.0;
    for (float v : row) maxv = std::max(maxv, double(v));
    for (float v : row) sum += std::exp(double(v) - maxv);
    EXPECT_NEAR(row_log_sum_exp(row.data(), V), maxv + std::log(sum), 1e-12 * std::max(1.0, std::fabs(maxv))) << "V = " << V;
  }
}

TEST(TokenLoss, IsMinusLogSoftmaxOfTheTarget) {
  const float row[3] = {0.5f, -1.0f, 2.0f};
  const double z = std::exp(0.5) + std::exp(-1.0) + std::exp(2.0);
  EXPECT_NEAR(token_loss(row, 3, 1), -std::log(std::exp(-1.0) / z), 1e-12);
}

TEST(NextTokenLosses, ScoreEachPositionOnTheTokenThatFollows) {
  // T = 3, V = 2: position 0 predicts ids[1] = 1, position 1 predicts ids[2] = 0
  const std::vector<float> logits = {0.0f, 1.0f, 2.0f, 0.0f, 5.0f, 5.0f};
  const std::vector<int> ids = {0, 1, 0};
  std::vector<float> l = next_token_losses(logits, ids, 2);
  ASSERT_EQ(l.size(), 2u);
  EXPECT_NEAR(l[0], std::log(1.0 + std::exp(1.0)) - 1.0, 1e-6);
  EXPECT_NEAR(l[1], std::log(std::exp(2.0) + 1.0) - 2.0, 1e-6);
  EXPECT_NEAR(mean_next_token_loss(logits, ids, 2), (double(l[0]) + l[1]) / 2, 1e-6);
  EXPECT_TRUE(next_token_losses(logits, std::vector<int>{1}, 2).empty());
  EXPECT_TRUE(std::isnan(mean_next_token_loss(logits, std::vector<int>{1}, 2)));
}

TEST(TopK, ReturnsLargestFirst) {
  float row[5] = {0.1f, 3.0f, -1.0f, 3.0f, 2.0f};
  EXPECT_EQ(top_k(row, 5, 3), (std::vector<int>{1, 3, 4}));
  EXPECT_EQ(top_k(row, 5, 9).size(), 5u);
}

TEST(TopK, AgreesWithAFullSortOnARowWithManyTies) {
  // values on a coarse grid, so many tie: the smaller index goes first
  std::vector<float> row(5000);
  unsigned state = 12345;
  for (float& v : row) v = float((state = state * 1103515245u + 12345u) >> 16 & 63) / 8.0f;
  std::vector<int> all(row.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
  std::stable_sort(all.begin(), all.end(), [&](int a, int b) { return row[a] > row[b]; });
  for (int k : {0, 1, 5, 50, 300, 5000}) {
    std::vector<int> want(all.begin(), all.begin() + k);
    EXPECT_EQ(top_k(row.data(), static_cast<int>(row.size()), k), want) << "k = " << k;
  }
  // a row sorted ascending (every value beats the heap's worst) and one descending
  std::vector<float> up(300), down(300);
  for (int i = 0; i < 300; ++i) up[std::size_t(i)] = float(i), down[std::size_t(i)] = float(-i);
  EXPECT_EQ(top_k(up.data(), 300, 3), (std::vector<int>{299, 298, 297}));
  EXPECT_EQ(top_k(down.data(), 300, 3), (std::vector<int>{0, 1, 2}));
}

TEST(TopNext, GivesSoftmaxProbabilitiesMostLikelyFirst) {
  const float row[3] = {0.0f, 2.0f, 1.0f};
  const double z = 1.0 + std::exp(2.0) + std::exp(1.0);
  std::vector<TokenChance> best = top_next(row, 3, 2);
  ASSERT_EQ(best.size(), 2u);
  EXPECT_EQ(best[0].id, 1);
  EXPECT_EQ(best[0].logit, 2.0f);
  EXPECT_NEAR(best[0].prob, std::exp(2.0) / z, 1e-6);
  EXPECT_EQ(best[1].id, 2);
}

TEST(Forward, LossIsTheMeanOfTheNextTokenLosses) {
  Parameters p = load_fixture("gpt2_tiny", "model.safetensors");
  std::vector<int> ids = {4, 8, 15, 16, 23};
  ForwardOptions opt;
  opt.loss = true;
  ForwardOutput out;
  Workspace ws;
  ASSERT_TRUE(forward(p, ids, opt, out, ws));
  std::vector<float> l = next_token_losses(out.logits, ids, out.V);
  double mean = 0;
  for (float x : l) mean += x;
  EXPECT_NEAR(out.loss, mean / l.size(), 1e-6);
}
