// Lesson 2's answer checks, on evidence made by hand: a scan report and ablation losses of
// a fake model, so each verdict and its numbers can be read off the test.
#include "course/trained_heads.h"

#include <gtest/gtest.h>

using namespace headlab;
using namespace headlab::course;

namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

analysis::HeadReport head(int layer, int head, std::vector<std::string> labels) {
  analysis::HeadReport h;
  h.layer = layer;
  h.head = head;
  h.name = std::to_string(layer) + "." + std::to_string(head);
  for (auto& l : labels) h.labels.push_back({l, 0.9, 0.5});
  return h;
}

// Two layers of two heads: 1.1 is an induction head, 0.1 a sink, 0.0 a previous-token head.
analysis::ScanReport fake_scan() {
  analysis::ScanReport r;
  r.heads = {head(0, 0, {"previous_token"}), head(0, 1, {"sink"}), head(1, 0, {}), head(1, 1, {"induction"})};
  r.heads[0].scores.previous_token = {0.93, 0.1};
  r.heads[0].scores.current_token = {0.02, 0.1};
  r.heads[1].scores.first_token = {0.87, 0.2};
  r.heads[2].scores.first_token = {0.31, 0.2};
  r.heads[2].scores.current_token = {0.44, 0.1};
  r.heads[2].scores.induction = {0.07, 0.02};
  r.heads[3].scores.induction = {0.81, 0.02};
  return r;
}

InductionEvidence repeated(bool induction);

class FakeModel final : public LessonModel {
 public:
  int n_layer() const override { return 2; }
  int n_head() const override { return 2; }
  Result<analysis::ScanReport> scan_report() override { return fake_scan(); }
  Result<std::vector<float>> head_ablation_deltas(const std::string& text) override {
    last_text = text;
    return std::vector<float>{0.05f, 0.01f, 0.12f, 0.20f};
  }
  Result<HeadOnText> head_on_text(const std::string& text, int, int) override {
    last_text = text;
    InductionEvidence r = repeated(true);
    HeadOnText out{11, r.ids, r.pattern, r.pattern};
    return out;
  }
  std::string last_text;
};

Answer answer(std::string challenge, int layer = -1, int head = -1, std::string text = "") {
  Answer a;
  a.challenge = std::move(challenge);
  a.layer = layer;
  a.head = head;
  a.text = std::move(text);
  return a;
}

Answer choice(std::string c) {
  Answer a = answer("pattern-quiz");
  a.choice = std::move(c);
  return a;
}

}  // namespace

TEST(PatternQuizCheck, AcceptsOnlyBelowDiagonal) {
  for (const std::string& c : pattern_quiz_choices())
    EXPECT_EQ(check_pattern_quiz({c, nullptr}).met, c == "below-diagonal") << c;
  EXPECT_FALSE(check_pattern_quiz({"stripes", nullptr}).met);
}

TEST(PatternQuizCheck, WrongChoiceExplainsWhatItsPictureMeans) {
  Verdict v = check_pattern_quiz({"diagonal", nullptr});
  EXPECT_TRUE(contains(v.explanation, "itself")) << v.explanation;
}

TEST(PatternQuizCheck, NamesTheModelsBestHeadForTheChosenPatternWithItsScore) {
  const analysis::ScanReport scan = fake_scan();
  Verdict right = check_pattern_quiz({"below-diagonal", &scan});
  EXPECT_TRUE(right.met);
  EXPECT_TRUE(contains(right.explanation, "head 0.0 does it best (previous-token score 0.93)")) << right.explanation;
  Verdict wrong = check_pattern_quiz({"diagonal", &scan});
  EXPECT_FALSE(wrong.met);
  EXPECT_TRUE(contains(wrong.explanation, "1.0 (current-token score 0.44)")) << wrong.explanation;
}

namespace {

// BOS + "a b c d e" + "a b c d e": a head that looks from each token of the second copy
// at the token after its earlier copy (k = q - 4), or only at itself.
InductionEvidence repeated(bool induction) {
  InductionEvidence e{1, 1, {0, 11, 12, 13, 14, 15, 11, 12, 13, 14, 15}, {}};
  const int T = 11;
  e.pattern.assign(T * T, 0.0f);
  for (int q = 0; q < T; ++q) e.pattern[q * T + (induction && q >= 7 ? q - 4 : q)] = 1.0f;
  return e;
}

}  // namespace

TEST(FindInductionCheck, MetOnTheLearnersRepeatedTextWithTheShareAndTheBar) {
  Verdict yes = check_find_induction(repeated(true));
  EXPECT_TRUE(yes.met) << yes.explanation;
  EXPECT_TRUE(contains(yes.explanation, "4 tokens sit in a repeated span")) << yes.explanation;
  EXPECT_TRUE(contains(yes.explanation, "head 1.1 gives on average 100%")) << yes.explanation;
  EXPECT_TRUE(contains(yes.explanation, "the bar is 30%")) << yes.explanation;
  Verdict no = check_find_induction(repeated(false));
  EXPECT_FALSE(no.met);
  EXPECT_TRUE(contains(no.explanation, "gives on average 0%")) << no.explanation;
}

TEST(FindInductionCheck, NeverMetOnATextWithoutARepeatedSpan) {
  InductionEvidence e{1, 1, {0, 11, 12, 13, 11, 14, 15}, {}};  // "a" twice, no pair twice
  e.pattern.assign(7 * 7, 0.0f);
  for (int q = 0; q < 7; ++q) e.pattern[q * 7 + (q == 4 ? 2 : q)] = 1.0f;  // even a perfect look-ahead
  Verdict v = check_find_induction(e);
  EXPECT_FALSE(v.met);
  EXPECT_TRUE(contains(v.explanation, "repeats no span: 0 of its tokens")) << v.explanation;
  EXPECT_TRUE(contains(v.explanation, "Repeat it")) << v.explanation;
}

namespace {

// BOS + 4 tokens: every row gives `share` to the first token, and `vw_share` once the
// values are weighed in; the rest goes to the diagonal.
FirstTokenEvidence first_token(float share, float vw_share, std::string choice) {
  FirstTokenEvidence e{0, 1, std::move(choice), 5, {}, {}};
  e.pattern.assign(25, 0.0f);
  e.value_weighted.assign(25, 0.0f);
  e.pattern[0] = e.value_weighted[0] = 1.0f;
  for (int q = 1; q < 5; ++q) {
    e.pattern[q * 5] = share, e.pattern[q * 5 + q] = 1 - share;
    e.value_weighted[q * 5] = vw_share, e.value_weighted[q * 5 + q] = 1 - vw_share;
  }
  return e;
}

}  // namespace

TEST(FindSinkCheck, TellsASinkFromAHeadThatReadsTheFirstTokenByTheValueWeightedShare) {
  Verdict sink = check_find_sink(first_token(0.8f, 0.1f, "sink"));
  EXPECT_TRUE(sink.met) << sink.explanation;
  EXPECT_TRUE(contains(sink.explanation, "head 0.1 gives 80% of its rows")) << sink.explanation;
  EXPECT_TRUE(contains(sink.explanation, "and 10% once the values")) << sink.explanation;
  EXPECT_TRUE(contains(sink.explanation, "under 40%")) << sink.explanation;
  EXPECT_FALSE(check_find_sink(first_token(0.8f, 0.1f, "reads-first")).met);
  Verdict reads = check_find_sink(first_token(0.8f, 0.6f, "reads-first"));
  EXPECT_TRUE(reads.met) << reads.explanation;
  EXPECT_TRUE(contains(reads.explanation, "not a sink")) << reads.explanation;
  Verdict wrong = check_find_sink(first_token(0.8f, 0.6f, "sink"));
  EXPECT_FALSE(wrong.met);
  EXPECT_TRUE(contains(wrong.explanation, "You said sink")) << wrong.explanation;
}

TEST(FindSinkCheck, NotMetUnderHalfOnTheFirstTokenWhateverTheAnswer) {
  for (const std::string& c : first_token_choices()) {
    Verdict v = check_find_sink(first_token(0.3f, 0.05f, c));
    EXPECT_FALSE(v.met);
    EXPECT_TRUE(contains(v.explanation, "30%")) << v.explanation;
  }
}

// A verdict that says what the head is spends the head: the server credits only the first
// choice on it (on any text: a sink is the head's habit, and a word added changes nothing).
// One that showed no kind (under half, too few tokens) spends nothing.
TEST(FindSinkCheck, NamesTheHeadAsItsGuessOnlyWhenItSaysWhatTheHeadIs) {
  EXPECT_EQ(check_find_sink(first_token(0.8f, 0.6f, "sink")).guess, "head#0.1");
  EXPECT_EQ(check_find_sink(first_token(0.8f, 0.1f, "sink")).guess, "head#0.1");
  EXPECT_EQ(check_find_sink(first_token(0.3f, 0.05f, "sink")).guess, "");
  FirstTokenEvidence short_text{0, 1, "sink", 2, {1.0f, 0.0f, 1.0f, 0.0f}, {1.0f, 0.0f, 1.0f, 0.0f}};
  EXPECT_EQ(check_find_sink(short_text).guess, "");
}

TEST(FindSinkCheck, SharesAreTheMeanOverRowsAfterTheFirst) {
  FirstTokenShares s = first_token_shares(first_token(0.6f, 0.2f, "sink"));
  EXPECT_NEAR(s.attention, 0.6, 1e-6);
  EXPECT_NEAR(s.value_weighted, 0.2, 1e-6);
  EXPECT_TRUE(s.parks());
}

const std::vector<int> kRepeatedIds = {0, 11, 12, 13, 14, 15, 11, 12, 13, 14, 15};

TEST(AblationMattersCheck, MetFromHalfTheLargestLossIncrease) {
  const std::vector<float> d = {0.05f, 0.01f, 0.12f, 0.20f};
  EXPECT_TRUE(check_ablation_matters({1, 1, 2, d, kRepeatedIds}).met);
  EXPECT_TRUE(check_ablation_matters({1, 0, 2, d, kRepeatedIds}).met);   // 0.12 >= 0.10
  EXPECT_FALSE(check_ablation_matters({0, 0, 2, d, kRepeatedIds}).met);  // 0.05 < 0.10
  Verdict v = check_ablation_matters({1, 0, 2, d, kRepeatedIds});
  EXPECT_TRUE(contains(v.explanation, "0.120 nats")) << v.explanation;
  EXPECT_TRUE(contains(v.explanation, "0.200 nats")) << v.explanation;
  EXPECT_TRUE(contains(v.explanation, "60% of that")) << v.explanation;
}

TEST(AblationMattersCheck, NoHeadMattersWhenNoAblationRaisesTheLoss) {
  EXPECT_FALSE(check_ablation_matters({0, 0, 2, {-0.1f, -0.2f, 0.0f, -0.3f}, kRepeatedIds}).met);
}

TEST(TrainedHeadsAnswer, GathersTheEvidenceFromTheModel) {
  FakeModel m;
  auto induction = check_trained_heads_answer(answer("find-induction", 1, 1, "a b c d e a b c d e"), &m);
  ASSERT_TRUE(induction) << induction.error().message;
  EXPECT_TRUE(induction->met);
  EXPECT_EQ(m.last_text, "a b c d e a b c d e");
  auto ablation = check_trained_heads_answer(answer("ablation-matters", 1, 1, "a b a b"), &m);
  ASSERT_TRUE(ablation) << ablation.error().message;
  EXPECT_TRUE(ablation->met);
  EXPECT_EQ(m.last_text, "a b a b");
  auto quiz = check_trained_heads_answer(choice("below-diagonal"), &m);
  ASSERT_TRUE(quiz);
  EXPECT_TRUE(contains(quiz->explanation, "0.93"));
}

TEST(TrainedHeadsAnswer, QuizIsCheckedWithoutAModel) {
  auto quiz = check_trained_heads_answer(choice("uniform"), nullptr);
  ASSERT_TRUE(quiz);
  EXPECT_FALSE(quiz->met);
}

TEST(TrainedHeadsAnswer, RejectsBadAnswersWithAReason) {
  FakeModel m;
  auto expect_error = [&](const Answer& a, LessonModel* model, ErrorCode code, const std::string& part) {
    auto r = check_trained_heads_answer(a, model);
    ASSERT_FALSE(r) << a.challenge;
    EXPECT_EQ(r.error().code, code) << r.error().message;
    EXPECT_TRUE(contains(r.error().message, part)) << r.error().message;
  };
  expect_error(choice("stripes"), &m, ErrorCode::invalid_argument, "below-diagonal");
  expect_error(answer("guess"), &m, ErrorCode::invalid_argument, "pattern-quiz, find-induction, find-sink, ablation-matters");
  expect_error(answer("find-sink", 5, 0), &m, ErrorCode::invalid_argument, "layer 0 to 1, head 0 to 1");
  expect_error(answer("find-sink"), &m, ErrorCode::invalid_argument, "layer 0 to 1");
  expect_error(answer("ablation-matters", 0, 0), &m, ErrorCode::invalid_argument, "'text'");
  expect_error(answer("find-induction", 0, 0), &m, ErrorCode::invalid_argument, "'text'");
  expect_error(answer("find-sink", 0, 0, "the cat"), &m, ErrorCode::invalid_argument, "sink or reads-first");
  expect_error(answer("find-induction", 0, 0), nullptr, ErrorCode::unavailable, "--model");
}

TEST(TrainedHeadsAnswer, ARevealedAnswerIsExplainedButEarnsNoCredit) {
  Answer a = choice("below-diagonal");
  a.revealed = true;
  auto v = check_trained_heads_answer(a, nullptr);
  ASSERT_TRUE(v);
  EXPECT_FALSE(v->met);
  EXPECT_TRUE(contains(v->explanation, "no credit")) << v->explanation;
}

TEST(TrainedHeadsLesson, HasFourChallengesWithStableIdsAndAnAnswerCheck) {
  Lesson l = trained_heads_lesson();
  EXPECT_EQ(l.id, "trained-heads");
  ASSERT_EQ(l.challenges.size(), 4u);
  EXPECT_EQ(l.challenges[0].id, "pattern-quiz");
  EXPECT_EQ(l.challenges[3].id, "ablation-matters");
  EXPECT_EQ(l.check_answer, &check_trained_heads_answer);
}
