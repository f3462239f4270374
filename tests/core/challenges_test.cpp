#include "core/challenges.h"

#include <set>

#include <gtest/gtest.h>

#include "core/sentence.h"

using namespace headlab;
using namespace headlab::core;

namespace {
// Every query of the lesson sentence that meets challenge `id` on `head`.
std::set<int> queries_meeting(ChallengeId id, HeadKind head, bool mask) {
  AttentionPattern p = compute_pattern(head, *tokenize_sentence(kLessonSentence), mask);
  std::set<int> out;
  for (int q = 0; q < p.size(); ++q)
    if (challenge_met(id, LessonView{p, q})) out.insert(q);
  return out;
}
}  // namespace

TEST(InductionNextWordChallenge, MetByEveryQueryWhoseFavouriteIsTheNextWord) {
  // 8: chased -> the (3), which follows the earlier "chased", and "the" comes next.
  // 2 and 5 favour the fallback key 0 ("the"): the right word, but no induction match.
  // 7 is the worked example, 6 splits, 9 has no next word.
  EXPECT_EQ(queries_meeting(ChallengeId::induction_next_word, HeadKind::induction, true), (std::set<int>{8}));
}

TEST(InductionNextWordChallenge, NeedsTheInductionHeadAndTheMask) {
  EXPECT_TRUE(queries_meeting(ChallengeId::induction_next_word, HeadKind::induction, false).empty());
  EXPECT_TRUE(queries_meeting(ChallengeId::induction_next_word, HeadKind::previous, true).empty());
}

TEST(InductionNextWordChallenge, CountsTheSecondCatInAnotherSentence) {
  AttentionPattern p = compute_pattern(HeadKind::induction, *tokenize_sentence("a cat sat . a cat sat on it"), true);
  EXPECT_TRUE(challenge_met(ChallengeId::induction_next_word, LessonView{p, 5}));  // cat -> sat (2)
}

TEST(SameWordFirstCopyChallenge, MetExactlyByFirstOccurrences) {
  EXPECT_EQ(queries_meeting(ChallengeId::same_word_first_copy, HeadKind::same_word, true),
            (std::set<int>{0, 1, 2, 4, 5}));
  EXPECT_TRUE(queries_meeting(ChallengeId::same_word_first_copy, HeadKind::same_word, false).empty());
  EXPECT_TRUE(queries_meeting(ChallengeId::same_word_first_copy, HeadKind::first, true).empty());
}

TEST(FutureFavouriteChallenge, MetOnlyWithTheMaskOffByQueriesLookingAhead) {
  EXPECT_TRUE(queries_meeting(ChallengeId::future_favourite, HeadKind::previous, false).empty());
  EXPECT_TRUE(queries_meeting(ChallengeId::future_favourite, HeadKind::first, false).empty());
  EXPECT_EQ(queries_meeting(ChallengeId::future_favourite, HeadKind::same_word, false), (std::set<int>{0, 1, 2}));
  EXPECT_EQ(queries_meeting(ChallengeId::future_favourite, HeadKind::induction, false), (std::set<int>{0, 1, 2}));
  EXPECT_EQ(queries_meeting(ChallengeId::future_favourite, HeadKind::punctuation, false),
            (std::set<int>{0, 1, 2, 3, 4}));
  EXPECT_TRUE(queries_meeting(ChallengeId::future_favourite, HeadKind::punctuation, true).empty());
}

TEST(Challenges, OutOfRangeQueryMeetsNothing) {
  AttentionPattern p = compute_pattern(HeadKind::same_word, *tokenize_sentence(kLessonSentence), true);
  EXPECT_TRUE(challenges_met(LessonView{p, 10}).empty());
  EXPECT_TRUE(challenges_met(LessonView{p, -1}).empty());
}

TEST(Challenges, AreThreeWithStableIds) {
  const auto& all = causal_mask_challenges();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].name, "induction-next-word");
  EXPECT_EQ(all[1].name, "same-word-first-copy");
  EXPECT_EQ(all[2].name, "future-favourite");
}
