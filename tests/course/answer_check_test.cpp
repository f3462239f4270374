// The envelope every lesson's answer check shares (course/answer_check.h): an unknown
// challenge names the lesson's challenges, a missing model says how to load one, a revealed
// answer earns no credit, numbers print one way.
#include "course/answer_check.h"

#include <gtest/gtest.h>

#include "course/trained_heads.h"
#include "course/word_order.h"

using namespace headlab;
using namespace headlab::course;

TEST(AnswerCheck, UnknownChallengeNamesTheLessonsOwnChallenges) {
  const Error e = unknown_challenge(word_order_lesson(), "find-sink").value();
  EXPECT_EQ(e.code, ErrorCode::invalid_argument);
  EXPECT_EQ(e.message, "Unknown challenge 'find-sink'. Challenges: shuffle-follows, wpe-neighbour, offset-only.");
  const Error t = unknown_challenge(trained_heads_lesson(), std::string(200, 'x')).value();
  EXPECT_NE(t.message.find("'" + std::string(64, 'x') + "'"), std::string::npos) << "the id is cut to 64 bytes";
  EXPECT_NE(t.message.find("pattern-quiz, find-induction, find-sink, ablation-matters"), std::string::npos);
}

TEST(AnswerCheck, RequireModelPassesWithAModelAndSaysHowToLoadOneWithout) {
  const Status none = require_model(nullptr);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code, ErrorCode::unavailable);
  EXPECT_NE(none.error().message.find("--model DIR"), std::string::npos);
}

TEST(AnswerCheck, ARevealedAnswerThatWouldBeMetEarnsNoCreditAndSaysHowToEarnIt) {
  const Result<Verdict> v = without_credit_if_revealed(Verdict{true, "Right."}, true, "Try again without it.");
  ASSERT_TRUE(v);
  EXPECT_FALSE(v->met);
  EXPECT_EQ(v->explanation, "Right. But you were shown this challenge\u2019s answer, so it earns no credit. Try again without it.");
}

TEST(AnswerCheck, ARevealedAnswerNotMetOnlyNotesTheReveal) {
  const Result<Verdict> v = without_credit_if_revealed(Verdict{false, "Too little."}, true, "Try again.");
  ASSERT_TRUE(v);
  EXPECT_FALSE(v->met);
  EXPECT_EQ(v->explanation, "Too little. (You were shown this challenge\u2019s answer.)");
}

TEST(AnswerCheck, AnAnswerNotRevealedAndAnErrorPassUnchanged) {
  const Result<Verdict> v = without_credit_if_revealed(Verdict{true, "Right."}, false, "Try again.");
  ASSERT_TRUE(v);
  EXPECT_TRUE(v->met);
  EXPECT_EQ(v->explanation, "Right.");
  const Result<Verdict> e = without_credit_if_revealed(make_error(ErrorCode::invalid_argument, "Send a text."), true, "x");
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().message, "Send a text.");
}

TEST(AnswerCheck, NumbersPrintWithFixedDecimalsAndPercentRounds) {
  EXPECT_EQ(fixed(0.4749), "0.47");
  EXPECT_EQ(fixed(6.1416, 3), "6.142");
  EXPECT_EQ(percent(0.473), "47%");
  EXPECT_EQ(percent(1.0), "100%");
}
