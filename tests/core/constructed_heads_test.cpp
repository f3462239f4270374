#include "core/constructed_heads.h"

#include <gtest/gtest.h>

#include "core/sentence.h"

using namespace headlab;
using namespace headlab::core;

namespace {
std::vector<std::string> lesson_tokens() { return *tokenize_sentence(kLessonSentence); }
}  // namespace

TEST(ConstructedHeads, AreFiveInTeachingOrderWithCitations) {
  const auto& heads = constructed_heads();
  ASSERT_EQ(heads.size(), 5u);
  EXPECT_EQ(heads[0].name, "previous");
  EXPECT_EQ(heads[2].name, "same-word");
  for (const auto& h : heads) EXPECT_FALSE(h.citations.empty()) << h.name;
  const auto& induction = head_info(HeadKind::induction);
  ASSERT_EQ(induction.citations.size(), 2u);
  EXPECT_EQ(induction.citations[0].authors_year, "Elhage et al. 2021");
  EXPECT_EQ(induction.citations[1].authors_year, "Olsson et al. 2022");
  EXPECT_EQ(head_info(HeadKind::punctuation).citations[0].authors_year, "Clark et al. 2019");
}

TEST(ConstructedHeads, UnknownNameListsTheAllowedOnes) {
  auto k = head_kind_from_name("inductoin");
  ASSERT_FALSE(k);
  EXPECT_EQ(k.error().code, ErrorCode::invalid_argument);
  EXPECT_NE(k.error().message.find("previous, first, same-word, induction, punctuation"), std::string::npos);
  EXPECT_EQ(*head_kind_from_name("same-word"), HeadKind::same_word);
}

TEST(PreviousTokenHead, ScoresTheKeyJustBeforeAndPositionZeroForItself) {
  Matrix s = constructed_head_scores(HeadKind::previous, lesson_tokens());
  for (int i = 0; i < 10; ++i)
    for (int j = 0; j < 10; ++j) {
      double want = (j == i - 1 || (i == 0 && j == 0)) ? 5 : 0;
      EXPECT_EQ(s.at(i, j), want) << i << "," << j;
    }
}

TEST(FirstTokenHead, ScoresOnlyPositionZero) {
  Matrix s = constructed_head_scores(HeadKind::first, lesson_tokens());
  for (int i = 0; i < 10; ++i)
    for (int j = 0; j < 10; ++j) EXPECT_EQ(s.at(i, j), j == 0 ? 5 : 0);
}

TEST(SameWordHead, ScoresOtherCopiesButNotItself) {
  auto t = lesson_tokens();
  Matrix s = constructed_head_scores(HeadKind::same_word, t);
  EXPECT_EQ(s.at(3, 0), 5);   // the -> the
  EXPECT_EQ(s.at(3, 3), 0);   // not itself
  EXPECT_EQ(s.at(7, 1), 5);   // cat -> cat
  EXPECT_EQ(s.at(4, 1), 0);   // dog -> cat
  EXPECT_EQ(s.at(0, 9), 5);   // the -> later the (only the mask hides it)
}

TEST(InductionHead, ScoresTheTokenAfterAnEarlierCopy) {
  auto t = lesson_tokens();
  Matrix s = constructed_head_scores(HeadKind::induction, t);
  EXPECT_EQ(s.at(7, 2), 5);   // cat(7): token 1 is cat, so key 2 (chased)
  EXPECT_EQ(s.at(7, 8), 0);   // j - 1 == i is excluded
  EXPECT_EQ(s.at(7, 0), 2);   // fallback on position 0
  EXPECT_EQ(s.at(9, 1), 5);
  EXPECT_EQ(s.at(9, 4), 5);
  EXPECT_EQ(s.at(9, 7), 5);
  EXPECT_EQ(s.at(4, 3), 0);
}

TEST(PunctuationHead, ScoresMarksAndFallsBackToPositionZero) {
  auto t = lesson_tokens();
  Matrix s = constructed_head_scores(HeadKind::punctuation, t);
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(s.at(i, 5), 5);
    EXPECT_EQ(s.at(i, 0), 2);
    EXPECT_EQ(s.at(i, 3), 0);
  }
}

TEST(ConstructedHeadClause, NamesTheRuleThatGaveEachScore) {
  auto t = lesson_tokens();
  EXPECT_EQ(constructed_head_clause(HeadKind::induction, t, 7, 2), "comes right after an earlier \u201ccat\u201d");
  EXPECT_EQ(constructed_head_clause(HeadKind::induction, t, 7, 8), "comes after the query itself");
  EXPECT_EQ(constructed_head_clause(HeadKind::induction, t, 7, 0), "position 0, the fallback");
  EXPECT_EQ(constructed_head_clause(HeadKind::previous, t, 0, 0),
            "the first token has no token before it, so it scores itself");
  EXPECT_EQ(constructed_head_clause(HeadKind::previous, t, 3, 2), "the token just before \u201cthe\u201d");
  EXPECT_EQ(constructed_head_clause(HeadKind::same_word, t, 3, 3), "the query itself does not count");
  EXPECT_EQ(constructed_head_clause(HeadKind::punctuation, t, 9, 5), "a punctuation mark");
}

TEST(ConstructedHeadClause, AMatchingClauseExactlyWhereTheScoreIsFive) {
  auto t = lesson_tokens();
  const std::vector<std::string> no_match_starts = {"not ", "a different", "the query itself", "comes after ", "no token", "position 0, the fallback"};
  for (const HeadInfo& h : constructed_heads()) {
    Matrix s = constructed_head_scores(h.kind, t);
    for (int i = 0; i < s.rows; ++i)
      for (int j = 0; j < s.cols; ++j) {
        std::string c = constructed_head_clause(h.kind, t, i, j);
        bool says_match = true;
        for (const auto& p : no_match_starts)
          if (c.rfind(p, 0) == 0) says_match = false;
        EXPECT_EQ(says_match, s.at(i, j) == 5) << h.name << " (" << i << ", " << j << "): " << c;
      }
  }
}
