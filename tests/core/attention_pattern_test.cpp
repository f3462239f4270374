#include "core/attention_pattern.h"

#include <cmath>

#include <gtest/gtest.h>

#include "core/sentence.h"

using namespace headlab;
using namespace headlab::core;

namespace {
AttentionPattern lesson(HeadKind head, bool mask) {
  return compute_pattern(head, *tokenize_sentence(kLessonSentence), mask);
}
constexpr double M = -1;  // masked in the original table
}  // namespace

// The Induction head's table exactly as the original lesson printed it (2 decimals).
TEST(InductionHead, ReproducesTheOriginalLessonTable) {
  const double want[10][10] = {
      {1.00, M, M, M, M, M, M, M, M, M},
      {0.88, 0.12, M, M, M, M, M, M, M, M},
      {0.79, 0.11, 0.11, M, M, M, M, M, M, M},
      {0.05, 0.94, 0.01, 0.01, M, M, M, M, M, M},
      {0.65, 0.09, 0.09, 0.09, 0.09, M, M, M, M, M},
      {0.60, 0.08, 0.08, 0.08, 0.08, 0.08, M, M, M, M},
      {0.02, 0.48, 0.00, 0.00, 0.48, 0.00, 0.00, M, M, M},
      {0.05, 0.01, 0.92, 0.01, 0.01, 0.01, 0.01, 0.01, M, M},
      {0.05, 0.01, 0.01, 0.91, 0.01, 0.01, 0.01, 0.01, 0.01, M},
      {0.02, 0.32, 0.00, 0.00, 0.32, 0.00, 0.00, 0.32, 0.00, 0.00},
  };
  AttentionPattern p = lesson(HeadKind::induction, true);
  for (int i = 0; i < 10; ++i)
    for (int j = 0; j < 10; ++j) {
      if (want[i][j] == M) {
        EXPECT_TRUE(p.is_masked(i, j)) << i << "," << j;
        EXPECT_EQ(p.weights.at(i, j), 0.0);
      } else {
        EXPECT_FALSE(p.is_masked(i, j)) << i << "," << j;
        EXPECT_EQ(std::round(p.weights.at(i, j) * 100) / 100, want[i][j]) << i << "," << j;
      }
    }
}

TEST(AttentionPattern, EveryRowOfEveryHeadSumsToOneWithMaskOnOrOff) {
  for (const HeadInfo& h : constructed_heads())
    for (bool mask : {true, false}) {
      AttentionPattern p = lesson(h.kind, mask);
      for (int i = 0; i < p.size(); ++i) {
        double sum = 0;
        for (int j = 0; j < p.size(); ++j) sum += p.weights.at(i, j);
        EXPECT_NEAR(sum, 1.0, 1e-12) << h.name << " row " << i;
      }
    }
}

TEST(AttentionPattern, MaskedCellsAreExactlyZeroAndOnlyAboveTheDiagonal) {
  for (const HeadInfo& h : constructed_heads()) {
    AttentionPattern p = lesson(h.kind, true);
    for (int i = 0; i < p.size(); ++i)
      for (int j = 0; j < p.size(); ++j) {
        EXPECT_EQ(p.is_masked(i, j), j > i);
        if (j > i) EXPECT_EQ(p.weights.at(i, j), 0.0);
      }
  }
}

TEST(AttentionPattern, WithoutTheMaskNothingIsMaskedAndTheFutureGetsWeight) {
  AttentionPattern p = lesson(HeadKind::same_word, false);
  for (int i = 0; i < p.size(); ++i)
    for (int j = 0; j < p.size(); ++j) EXPECT_FALSE(p.is_masked(i, j));
  EXPECT_GT(p.weights.at(0, 9), 0.2);  // the(0) sees the later copies of "the"
}

TEST(AttentionPattern, MaskBarelyChangesThePreviousAndFirstTokenHeads) {
  for (HeadKind k : {HeadKind::previous, HeadKind::first}) {
    AttentionPattern on = lesson(k, true), off = lesson(k, false);
    double future = 0;
    for (int i = 0; i < 10; ++i)
      for (int j = i + 1; j < 10; ++j) future += off.weights.at(i, j);
    // Only a sliver of each row reaches the future when the mask is off.
    EXPECT_LT(future / 10, 0.06);
  }
}
