#include "train/data.h"

#include <algorithm>
#include <set>

#include <gtest/gtest.h>

using namespace headlab;
using namespace headlab::train;

TEST(BatchFill, EveryWindowStartsWithBosAndTargetsAreShiftedInputs) {
  std::vector<int> stream(500);
  for (int i = 0; i < 500; ++i) stream[i] = i % 97;
  Batch b = batch_allocate(8, 32);
  Rng rng(7);
  DataMix mix{.copied_span = 0.3, .repeated_random = 0.3};
  batch_fill(b, stream, mix, 100, 99, rng);
  for (int r = 0; r < 8; ++r) {
    EXPECT_EQ(b.inputs[r * 32], 99);
    for (int t = 0; t + 1 < 32; ++t) EXPECT_EQ(b.targets[r * 32 + t], b.inputs[r * 32 + t + 1]);
  }
}

TEST(BatchFill, IsRepeatableFromTheSeed) {
  std::vector<int> stream(300, 5);
  DataMix mix{.copied_span = 0.5, .repeated_random = 0.2};
  Batch a = batch_allocate(4, 16), b = batch_allocate(4, 16);
  Rng ra(3), rb(3);
  batch_fill(a, stream, mix, 50, 49, ra);
  batch_fill(b, stream, mix, 50, 49, rb);
  EXPECT_EQ(a.inputs, b.inputs);
  EXPECT_EQ(ra.state, rb.state);
}

TEST(WindowRepeatedRandom, RepeatsOneRandomSpanToTheEndAndNeverUsesBos) {
  std::vector<int> w(65);
  Rng rng(11);
  window_repeated_random(w.data(), 64, 1000, 999, 8, 8, rng);
  EXPECT_EQ(w[0], 999);
  // the first position from which the window is periodic with period 8
  int periodic_from = 64;
  while (periodic_from - 1 >= 9 && w[periodic_from - 1] == w[periodic_from - 1 - 8]) --periodic_from;
  EXPECT_GE(periodic_from, 9);    // the first copy lies wholly inside the window
  EXPECT_LE(periodic_from, 57);   // and at least one whole copy follows it
  for (int i = periodic_from; i <= 64; ++i) EXPECT_EQ(w[i], w[i - 8]);
  for (int i = 1; i <= 64; ++i) {
    EXPECT_NE(w[i], 999);
    EXPECT_GE(w[i], 0);
  }
}

TEST(WindowCopySpan, CopiesASpanLaterWithoutOverlap) {
  const int T = 40;
  std::vector<int> w(T + 1);
  for (int i = 0; i <= T; ++i) w[i] = 1000 + i;  // all distinct
  Rng rng(5);
  window_copy_span(w.data(), T, 6, 6, rng);
  // exactly 6 positions now repeat an earlier value, in one contiguous run
  int repeats = 0;
  std::set<int> seen;
  for (int i = 0; i <= T; ++i)
    if (!seen.insert(w[i]).second) ++repeats;
  EXPECT_EQ(repeats, 6);
  EXPECT_EQ(w[0], 1000);
}

TEST(WindowPreviousToken, EveryTokenFollowsFromTheOneTwoBackByOnePermutation) {
  const int V = 300, bos = 299, T = 40;
  // the successor is a permutation of the ids other than BOS
  std::vector<int> seen(V, 0);
  for (int id = 0; id < V; ++id) {
    if (id == bos) continue;
    const int s = previous_token_successor(id, V, bos);
    ASSERT_GE(s, 0);
    ASSERT_LT(s, V);
    ASSERT_NE(s, bos);
    seen[s]++;
  }
  for (int id = 0; id < V; ++id) EXPECT_EQ(seen[id], id == bos ? 0 : 1) << id;
  std::vector<int> w(T + 1);
  Rng rng(4);
  window_previous_token(w.data(), T, V, bos, rng);
  EXPECT_EQ(w[0], bos);
  for (int i = 3; i <= T; ++i) EXPECT_EQ(w[i], previous_token_successor(w[i - 2], V, bos)) << i;
}

TEST(WindowMarkov, WalksOnAFewDistinctIdsOtherThanBosWithinTheStateRange) {
  const int V = 500, bos = 499, T = 200;
  Rng rng(9);
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<int> w(T + 1);
    window_markov(w.data(), T, V, bos, 4, 8, 0.3, rng);
    EXPECT_EQ(w[0], bos);
    std::set<int> ids(w.begin() + 1, w.end());
    EXPECT_LE(ids.size(), 8u);
    EXPECT_EQ(ids.count(bos), 0u);
    for (int id : ids) {
      EXPECT_GE(id, 0);
      EXPECT_LT(id, V);
    }
  }
}

TEST(WindowMarkov, ASmallAlphaMakesWhatFollowedATokenBeforeAGoodGuessOfWhatFollowsItNext) {
  // the statistic an induction head reads: how often the next token equals the token
  // that followed the current token's previous occurrence (chance is about 1/k)
  const int V = 1000, bos = 999, T = 128;
  auto agreement = [&](double alpha) {
    Rng rng(5);
    int same = 0, total = 0;
    for (int trial = 0; trial < 200; ++trial) {
      std::vector<int> w(T + 1);
      window_markov(w.data(), T, V, bos, 8, 8, alpha, rng);
      for (int i = 2; i < T; ++i)
        for (int j = i - 1; j >= 1; --j)
          if (w[j] == w[i]) {
            same += w[j + 1] == w[i + 1];
            ++total;
            break;
          }
    }
    return static_cast<double>(same) / total;
  };
  const double peaked = agreement(0.1), flat = agreement(100.0);
  EXPECT_GT(peaked, 0.6);
  EXPECT_LT(flat, 0.2);  // near 1/8
}

TEST(RngGamma, HasTheMeanOfItsShape) {
  Rng rng(2);
  for (double shape : {0.3, 1.0, 4.0}) {
    double sum = 0.0;
    const int n = 20000;
    for (int i = 0; i < n; ++i) sum += rng.gamma(shape);
    EXPECT_NEAR(sum / n, shape, 0.05 * shape + 0.02) << shape;
  }
}

TEST(DataMixAtStep, BeforeTextFromStepOnlySyntheticWindowsFillTheBatchInProportion) {
  DataMix mix{.copied_span = 0.2, .repeated_random = 0.3, .markov = 0.1, .text_from_step = 100};
  const DataMix early = data_mix_at_step(mix, 99);
  EXPECT_DOUBLE_EQ(early.copied_span, 0.0);
  EXPECT_DOUBLE_EQ(early.repeated_random, 0.75);
  EXPECT_DOUBLE_EQ(early.markov, 0.25);
  EXPECT_DOUBLE_EQ(early.repeated_random + early.previous_token + early.markov, 1.0);
  const DataMix later = data_mix_at_step(mix, 100);
  EXPECT_DOUBLE_EQ(later.repeated_random, 0.3);
  EXPECT_DOUBLE_EQ(later.copied_span, 0.2);
  // an early batch holds no text window: every row is a walk on few ids or a repeat
  std::vector<int> stream(1000, 7);  // text would be all 7s
  Batch b = batch_allocate(16, 32);
  Rng rng(1);
  batch_fill(b, stream, early, 500, 499, rng);
  for (int r = 0; r < 16; ++r) {
    int sevens = 0;
    for (int t = 1; t < 32; ++t) sevens += b.inputs[r * 32 + t] == 7;
    EXPECT_LT(sevens, 31) << "row " << r << " is a text window";
  }
}

TEST(WindowMarkov, AnAlphaSoSmallThatEveryGammaUnderflowsStillWalksOnTheStates) {
  const int V = 100, bos = 99, T = 50;
  std::vector<int> w(T + 1);
  Rng rng(3);
  window_markov(w.data(), T, V, bos, 4, 4, 1e-300, rng);
  std::set<int> ids(w.begin() + 1, w.end());
  EXPECT_LE(ids.size(), 4u);
  for (int id : ids) {
    EXPECT_GE(id, 0);
    EXPECT_NE(id, bos);
    EXPECT_LT(id, V);
  }
}
