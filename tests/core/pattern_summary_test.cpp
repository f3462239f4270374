#include "core/pattern_summary.h"

#include <gtest/gtest.h>

#include "core/sentence.h"

using namespace headlab;
using namespace headlab::core;

namespace {
AttentionPattern lesson(HeadKind head, bool mask) {
  return compute_pattern(head, *tokenize_sentence(kLessonSentence), mask);
}
}  // namespace

TEST(LooksMostAt, SecondCatLooksAtChased) {
  AttentionPattern p = lesson(HeadKind::induction, true);
  LooksMostAt l = looks_most_at(p, 7);
  ASSERT_EQ(l.keys, std::vector<int>{2});
  EXPECT_EQ(describe_looks_most_at(l, p.tokens), "chased (2), 92%");
}

TEST(LooksMostAt, ReportsATwoWayTieAsASplit) {
  AttentionPattern p = lesson(HeadKind::induction, true);
  LooksMostAt l = looks_most_at(p, 6);
  EXPECT_EQ(l.keys, (std::vector<int>{1, 4}));
  EXPECT_EQ(describe_looks_most_at(l, p.tokens), "splits between cat (1) and dog (4), 48% each");
}

TEST(LooksMostAt, ReportsAThreeWayTieAsASplit) {
  AttentionPattern p = lesson(HeadKind::induction, true);
  LooksMostAt l = looks_most_at(p, 9);
  EXPECT_EQ(l.keys, (std::vector<int>{1, 4, 7}));
  EXPECT_EQ(describe_looks_most_at(l, p.tokens), "splits between cat (1), dog (4) and cat (7), 32% each");
}

TEST(LooksMostAt, UniformRowTiesEveryVisibleKeyButNoMaskedOne) {
  AttentionPattern p = lesson(HeadKind::same_word, true);
  LooksMostAt l = looks_most_at(p, 2);  // chased has no earlier copy: uniform over 0..2
  EXPECT_EQ(l.keys, (std::vector<int>{0, 1, 2}));
}

TEST(LooksMostAt, KeysJustOutsideTheToleranceDoNotTie) {
  AttentionPattern p;
  p.tokens = {"a", "b", "c"};
  p.mask = false;
  p.weights = Matrix(1, 3);
  p.weights.at(0, 0) = 0.4;
  p.weights.at(0, 1) = 0.394;  // 0.006 below: not a tie
  p.weights.at(0, 2) = 0.206;
  p.tokens.resize(3);
  LooksMostAt l = looks_most_at(p, 0);
  EXPECT_EQ(l.keys, std::vector<int>{0});
  p.weights.at(0, 1) = 0.396;  // 0.004 below: a tie
  EXPECT_EQ(looks_most_at(p, 0).keys, (std::vector<int>{0, 1}));
}
