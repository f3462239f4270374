// Lesson 1's detectors: which queries of the lesson sentence meet each challenge, and
// what the verdict says, in the evidence's own numbers.
#include "course/causal_mask.h"

#include <set>

#include <gtest/gtest.h>

#include "core/pattern_summary.h"
#include "core/sentence.h"

using namespace headlab;
using namespace headlab::course;
using core::AttentionPattern;
using core::HeadKind;

namespace {
using Check = Verdict (*)(const CausalMaskEvidence&);

AttentionPattern lesson_pattern(HeadKind head, bool mask) {
  return core::compute_pattern(head, *core::tokenize_sentence(core::kLessonSentence), mask);
}

// Every query of the lesson sentence that meets `check` on `head`.
std::set<int> queries_meeting(Check check, HeadKind head, bool mask) {
  AttentionPattern p = lesson_pattern(head, mask);
  std::set<int> out;
  for (int q = 0; q < p.size(); ++q)
    if (check(CausalMaskEvidence{p, q}).met) out.insert(q);
  return out;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }
}  // namespace

TEST(InductionNextWordChallenge, MetByEveryQueryWhoseFavouriteIsTheNextWord) {
  // 8: chased -> the (3), which follows the earlier "chased", and "the" comes next.
  // 2 and 5 favour the fallback key 0 ("the"): the right word, but no induction match.
  // 7 is the worked example, 6 splits, 9 has no next word.
  EXPECT_EQ(queries_meeting(check_induction_next_word, HeadKind::induction, true), (std::set<int>{8}));
}

TEST(InductionNextWordChallenge, NeedsTheInductionHeadAndTheMask) {
  EXPECT_TRUE(queries_meeting(check_induction_next_word, HeadKind::induction, false).empty());
  EXPECT_TRUE(queries_meeting(check_induction_next_word, HeadKind::previous, true).empty());
}

TEST(InductionNextWordChallenge, CountsTheSecondCatInAnotherSentence) {
  AttentionPattern p = core::compute_pattern(HeadKind::induction, *core::tokenize_sentence("a cat sat . a cat sat on it"), true);
  EXPECT_TRUE(check_induction_next_word(CausalMaskEvidence{p, 5}).met);  // cat -> sat (2)
}

TEST(InductionNextWordChallenge, ExplainsWithTheQueryTheKeyAndItsWeight) {
  AttentionPattern p = lesson_pattern(HeadKind::induction, true);
  const core::LooksMostAt l = core::looks_most_at(p, 8);
  Verdict met = check_induction_next_word(CausalMaskEvidence{p, 8});
  EXPECT_TRUE(met.met);
  EXPECT_TRUE(contains(met.explanation, "Query 8 (chased)")) << met.explanation;
  EXPECT_TRUE(contains(met.explanation, "key 3 (the)")) << met.explanation;
  EXPECT_TRUE(contains(met.explanation, std::to_string(static_cast<int>(100 * l.weight + 0.5)) + "%")) << met.explanation;

  Verdict fallback = check_induction_next_word(CausalMaskEvidence{p, 2});
  EXPECT_FALSE(fallback.met);
  EXPECT_TRUE(contains(fallback.explanation, "first token")) << fallback.explanation;
  EXPECT_TRUE(contains(check_induction_next_word(CausalMaskEvidence{p, 7}).explanation, "worked example"));
  EXPECT_TRUE(contains(check_induction_next_word(CausalMaskEvidence{p, 9}).explanation, "last token"));
}

TEST(InductionNextWordChallenge, SaysWhichHeadAndMaskTheLearnerHasOnScreen) {
  AttentionPattern p = lesson_pattern(HeadKind::previous, false);
  Verdict v = check_induction_next_word(CausalMaskEvidence{p, 8});
  EXPECT_FALSE(v.met);
  EXPECT_TRUE(contains(v.explanation, "needs the Induction head with the mask on")) << v.explanation;
  EXPECT_TRUE(contains(v.explanation, "mask off")) << v.explanation;
}

TEST(SameWordFirstCopyChallenge, MetExactlyByFirstOccurrences) {
  EXPECT_EQ(queries_meeting(check_same_word_first_copy, HeadKind::same_word, true), (std::set<int>{0, 1, 2, 4, 5}));
  EXPECT_TRUE(queries_meeting(check_same_word_first_copy, HeadKind::same_word, false).empty());
  EXPECT_TRUE(queries_meeting(check_same_word_first_copy, HeadKind::first, true).empty());
}

TEST(SameWordFirstCopyChallenge, NamesTheEarlierCopy) {
  AttentionPattern p = lesson_pattern(HeadKind::same_word, true);
  Verdict v = check_same_word_first_copy(CausalMaskEvidence{p, 6});  // the second "the"
  EXPECT_FALSE(v.met);
  EXPECT_TRUE(contains(v.explanation, "Query 6 (the) has an earlier copy at 0")) << v.explanation;
}

TEST(FutureFavouriteChallenge, MetOnlyWithTheMaskOffByQueriesLookingAhead) {
  EXPECT_TRUE(queries_meeting(check_future_favourite, HeadKind::previous, false).empty());
  EXPECT_TRUE(queries_meeting(check_future_favourite, HeadKind::first, false).empty());
  EXPECT_EQ(queries_meeting(check_future_favourite, HeadKind::same_word, false), (std::set<int>{0, 1, 2}));
  EXPECT_EQ(queries_meeting(check_future_favourite, HeadKind::induction, false), (std::set<int>{0, 1, 2}));
  EXPECT_EQ(queries_meeting(check_future_favourite, HeadKind::punctuation, false), (std::set<int>{0, 1, 2, 3, 4}));
  EXPECT_TRUE(queries_meeting(check_future_favourite, HeadKind::punctuation, true).empty());
}

TEST(FutureFavouriteChallenge, ExplainsWhereTheQueryLooks) {
  AttentionPattern p = lesson_pattern(HeadKind::same_word, false);
  Verdict v = check_future_favourite(CausalMaskEvidence{p, 0});
  EXPECT_TRUE(v.met);
  EXPECT_TRUE(contains(v.explanation, "Query 0 (the)")) << v.explanation;
  EXPECT_TRUE(contains(v.explanation, core::describe_looks_most_at(core::looks_most_at(p, 0), p.tokens))) << v.explanation;
  EXPECT_TRUE(contains(v.explanation, "after position 0")) << v.explanation;
}

TEST(CausalMaskChallenges, OutOfRangeQueryMeetsNothingAndSaysSo) {
  AttentionPattern p = lesson_pattern(HeadKind::same_word, true);
  EXPECT_TRUE(causal_mask_challenges_met(CausalMaskEvidence{p, 10}).empty());
  EXPECT_TRUE(causal_mask_challenges_met(CausalMaskEvidence{p, -1}).empty());
  EXPECT_TRUE(contains(check_same_word_first_copy(CausalMaskEvidence{p, 10}).explanation, "has 10 tokens"));
}

TEST(CausalMaskChallenges, AreThreeWithStableIds) {
  const auto& all = causal_mask_challenges();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].challenge.id, "induction-next-word");
  EXPECT_EQ(all[1].challenge.id, "same-word-first-copy");
  EXPECT_EQ(all[2].challenge.id, "future-favourite");
}

TEST(CausalMaskChallenges, MetListsTheIdsInLessonOrder) {
  AttentionPattern p = lesson_pattern(HeadKind::same_word, true);
  EXPECT_EQ(causal_mask_challenges_met(CausalMaskEvidence{p, 1}), (std::vector<std::string>{"same-word-first-copy"}));
}
