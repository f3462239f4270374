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

class FakeModel final : public LessonModel {
 public:
  int n_layer() const override { return 2; }
  int n_head() const override { return 2; }
  Result<analysis::ScanReport> scan_report() override { return fake_scan(); }
  Result<std::vector<float>> head_ablation_deltas(const std::string& text) override {
    last_text = text;
    return std::vector<float>{0.05f, 0.01f, 0.12f, 0.20f};
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

TEST(FindInductionCheck, MetByAHeadTheScannerLabelsInductionWithItsScoreAndChance) {
  const analysis::ScanReport scan = fake_scan();
  Verdict yes = check_find_induction(scan.heads[3]);
  EXPECT_TRUE(yes.met);
  EXPECT_TRUE(contains(yes.explanation, "Head 1.1 has induction score 0.81 (chance 0.02)")) << yes.explanation;
  Verdict no = check_find_induction(scan.heads[2]);
  EXPECT_FALSE(no.met);
  EXPECT_TRUE(contains(no.explanation, "induction score 0.07")) << no.explanation;
}

TEST(FindSinkCheck, MetBySinkOrFirstTokenLabelsWithTheShareOnTheFirstToken) {
  const analysis::ScanReport scan = fake_scan();
  Verdict sink = check_find_sink(scan.heads[1]);
  EXPECT_TRUE(sink.met);
  EXPECT_TRUE(contains(sink.explanation, "Head 0.1 puts 87% of its attention on the first token")) << sink.explanation;
  EXPECT_TRUE(check_find_sink(head(0, 0, {"first_token"})).met);
  Verdict no = check_find_sink(scan.heads[2]);
  EXPECT_FALSE(no.met);
  EXPECT_TRUE(contains(no.explanation, "31%")) << no.explanation;
}

TEST(AblationMattersCheck, MetFromHalfTheLargestLossIncrease) {
  const std::vector<float> d = {0.05f, 0.01f, 0.12f, 0.20f};
  EXPECT_TRUE(check_ablation_matters({1, 1, 2, d}).met);
  EXPECT_TRUE(check_ablation_matters({1, 0, 2, d}).met);   // 0.12 >= 0.10
  EXPECT_FALSE(check_ablation_matters({0, 0, 2, d}).met);  // 0.05 < 0.10
  Verdict v = check_ablation_matters({1, 0, 2, d});
  EXPECT_TRUE(contains(v.explanation, "0.120 nats")) << v.explanation;
  EXPECT_TRUE(contains(v.explanation, "0.200 nats")) << v.explanation;
  EXPECT_TRUE(contains(v.explanation, "60% of that")) << v.explanation;
}

TEST(AblationMattersCheck, NoHeadMattersWhenNoAblationRaisesTheLoss) {
  EXPECT_FALSE(check_ablation_matters({0, 0, 2, {-0.1f, -0.2f, 0.0f, -0.3f}}).met);
}

TEST(TrainedHeadsAnswer, GathersTheEvidenceFromTheModel) {
  FakeModel m;
  auto induction = check_trained_heads_answer(answer("find-induction", 1, 1), &m);
  ASSERT_TRUE(induction) << induction.error().message;
  EXPECT_TRUE(induction->met);
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
  expect_error(answer("find-induction", 0, 0), nullptr, ErrorCode::unavailable, "--model");
}

TEST(TrainedHeadsLesson, HasFourChallengesWithStableIdsAndAnAnswerCheck) {
  Lesson l = trained_heads_lesson();
  EXPECT_EQ(l.id, "trained-heads");
  ASSERT_EQ(l.challenges.size(), 4u);
  EXPECT_EQ(l.challenges[0].id, "pattern-quiz");
  EXPECT_EQ(l.challenges[3].id, "ablation-matters");
  EXPECT_EQ(l.check_answer, &check_trained_heads_answer);
}
