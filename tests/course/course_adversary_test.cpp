// Issue 26: a challenge ticks only on the learner's own evidence. Each of lesson 2's checks
// is fed generated junk — degenerate texts (one token, one token repeated, two alternating,
// punctuation-like runs, the longest allowed), every kind of head on them (previous-token,
// current-token, first-token, even, random), answers after a reveal — and must give no
// credit; the honest paths must still earn it.
#include <gtest/gtest.h>

#include <random>

#include "course/trained_heads.h"

using namespace headlab;
using namespace headlab::course;

namespace {

// Token ids, BOS (0) first.
std::vector<int> with_bos(std::vector<int> body) {
  body.insert(body.begin(), 0);
  return body;
}

std::vector<std::vector<int>> degenerate_texts() {
  std::vector<std::vector<int>> out;
  out.push_back(with_bos({}));                    // empty
  out.push_back(with_bos({7}));                   // one token
  out.push_back(with_bos({7, 7}));                // two of one
  out.push_back(with_bos(std::vector<int>(12, 7)));   // "x x x ... x": one token repeated
  out.push_back(with_bos(std::vector<int>(127, 9)));  // the longest allowed, one token
  std::vector<int> ab, abc_punct, long_ab;
  for (int i = 0; i < 12; ++i) ab.push_back(i % 2 ? 8 : 7);  // "a b a b ..."
  for (int i = 0; i < 127; ++i) long_ab.push_back(i % 2 ? 8 : 7);
  for (int i = 0; i < 16; ++i) abc_punct.push_back(i % 3 == 2 ? 5 : 6);  // ". . , . . ," runs
  out.push_back(with_bos(ab));
  out.push_back(with_bos(long_ab));
  out.push_back(with_bos(abc_punct));
  return out;
}

// Every kind of head on a text of T tokens (BOS first): rows sum to 1 over keys 0..q.
std::vector<std::vector<float>> heads_on(int T, std::mt19937& rng) {
  std::vector<std::vector<float>> out;
  auto make = [&](auto row) {
    std::vector<float> p(std::size_t(T) * T, 0.0f);
    for (int q = 0; q < T; ++q) row(q, &p[std::size_t(q) * T]);
    out.push_back(std::move(p));
  };
  make([](int q, float* r) { r[q > 0 ? q - 1 : 0] = 1; });  // previous token
  make([](int q, float* r) { r[q] = 1; });                  // current token
  make([](int, float* r) { r[0] = 1; });                    // first token
  make([](int q, float* r) {                                // even
    for (int k = 0; k <= q; ++k) r[k] = 1.0f / (q + 1);
  });
  make([](int q, float* r) {  // half previous, half current
    r[q] += 0.5f, r[q > 0 ? q - 1 : 0] += 0.5f;
  });
  for (int i = 0; i < 20; ++i)
    make([&](int q, float* r) {  // random rows
      float sum = 0;
      for (int k = 0; k <= q; ++k) sum += (r[k] = std::uniform_real_distribution<float>(0, 1)(rng));
      for (int k = 0; k <= q; ++k) r[k] /= sum;
    });
  return out;
}

// An honest induction head on the repeated text a b c d e a b c d e: each token of the second
// copy looks at the token after its earlier copy.
InductionEvidence honest_induction() {
  InductionEvidence e{1, 1, with_bos({11, 12, 13, 14, 15, 11, 12, 13, 14, 15}), {}};
  const int T = 11;
  e.pattern.assign(T * T, 0.0f);
  for (int q = 0; q < T; ++q) e.pattern[q * T + (q >= 7 ? q - 4 : q)] = 1.0f;
  return e;
}

}  // namespace

TEST(CourseAdversary, FindInductionGivesNoCreditForAnyHeadOnADegenerateText) {
  std::mt19937 rng(1);
  for (const std::vector<int>& ids : degenerate_texts()) {
    const int T = static_cast<int>(ids.size());
    for (const std::vector<float>& p : heads_on(T, rng)) {
      Verdict v = check_find_induction({0, 0, ids, p});
      EXPECT_FALSE(v.met) << "T=" << T << ": " << v.explanation;
      EXPECT_FALSE(v.explanation.empty());
    }
  }
}

TEST(CourseAdversary, FindInductionNeverPassesAPreviousTokenOrBelowChanceHeadOnARepeatedText) {
  std::mt19937 rng(2);
  InductionEvidence honest = honest_induction();
  const int T = static_cast<int>(honest.ids.size());
  auto kinds = heads_on(T, rng);
  for (std::size_t i = 0; i < 5; ++i) {  // the named kinds: none is an induction head
    Verdict v = check_find_induction({0, 0, honest.ids, kinds[i]});
    EXPECT_FALSE(v.met) << "kind " << i << ": " << v.explanation;
  }
  // Random heads pass only when their numbers do: at least the bar and more than the
  // previous token; the explanation quotes both.
  for (std::size_t i = 5; i < kinds.size(); ++i) {
    Verdict v = check_find_induction({0, 0, honest.ids, kinds[i]});
    EXPECT_FALSE(v.met) << "a random head: " << v.explanation;
  }
  Verdict yes = check_find_induction(honest);
  EXPECT_TRUE(yes.met) << yes.explanation;
}

TEST(CourseAdversary, FindInductionPrefersThePreviousTokenExplanationWhenItIsAsStrong) {
  InductionEvidence e = honest_induction();
  const int T = static_cast<int>(e.ids.size());
  for (int q = 7; q < T; ++q) {  // half to the earlier copy's next token, half to the previous token
    std::fill_n(&e.pattern[std::size_t(q) * T], T, 0.0f);
    e.pattern[std::size_t(q) * T + q - 4] = 0.45f;
    e.pattern[std::size_t(q) * T + q - 1] = 0.55f;
  }
  Verdict v = check_find_induction(e);
  EXPECT_FALSE(v.met) << v.explanation;
  EXPECT_NE(v.explanation.find("previous-token head"), std::string::npos) << v.explanation;
}

TEST(CourseAdversary, FindSinkGivesNoCreditOnATextTooShortToTellTheFirstTokenFromThePreviousOne) {
  std::mt19937 rng(3);
  for (int T : {1, 2, 3, 4}) {  // BOS + up to 3 tokens
    std::vector<float> first(std::size_t(T) * T, 0.0f);
    for (int q = 0; q < T; ++q) first[std::size_t(q) * T] = 1.0f;
    for (const std::string& choice : first_token_choices()) {
      Verdict v = check_find_sink({0, 0, choice, T, first, first});
      EXPECT_FALSE(v.met) << "T=" << T << ": " << v.explanation;
      std::vector<float> vw(std::size_t(T) * T, 0.0f);
      for (int q = 0; q < T; ++q) vw[std::size_t(q) * T + q] = 1.0f;
      EXPECT_FALSE(check_find_sink({0, 0, choice, T, first, vw}).met) << "T=" << T;
    }
  }
  // The one-word text "x": BOS + x, every head parks on BOS: no credit, and the text says why.
  std::vector<float> p = {1, 0, 1, 0};
  Verdict v = check_find_sink({0, 0, "sink", 2, p, {1, 0, 0.1f, 0.9f}});
  EXPECT_FALSE(v.met);
  EXPECT_NE(v.explanation.find("1 token."), std::string::npos) << v.explanation;
}

TEST(CourseAdversary, FindSinkGivesNoCreditToAHeadThatDoesNotParkOnTheFirstToken) {
  std::mt19937 rng(4);
  const int T = 9;
  auto kinds = heads_on(T, rng);
  for (std::size_t i = 0; i < kinds.size(); ++i) {
    if (i == 2) continue;  // the first-token head: the honest path below
    for (const std::string& choice : first_token_choices()) {
      Verdict v = check_find_sink({0, 0, choice, T, kinds[i], kinds[i]});
      EXPECT_FALSE(v.met) << "kind " << i << ", " << choice << ": " << v.explanation;
    }
  }
  std::vector<float> vw(std::size_t(T) * T, 0.0f);
  for (int q = 0; q < T; ++q) vw[std::size_t(q) * T + q] = 1.0f;
  EXPECT_TRUE(check_find_sink({0, 0, "sink", T, kinds[2], vw}).met) << "a sink, named rightly";
  EXPECT_FALSE(check_find_sink({0, 0, "reads-first", T, kinds[2], vw}).met);
}

TEST(CourseAdversary, AblationMattersGivesNoCreditOnATextWithoutARepeat) {
  const std::vector<float> d = {0.05f, 0.01f, 0.12f, 0.20f};
  for (const std::vector<int>& ids : {with_bos({}), with_bos({7}), with_bos({11, 12, 13, 14, 15}), with_bos({7, 7, 7})}) {
    Verdict v = check_ablation_matters({1, 1, 2, d, ids});
    EXPECT_FALSE(v.met) << v.explanation;
    EXPECT_NE(v.explanation.find("repeats no span"), std::string::npos) << v.explanation;
  }
  // No head hurts: no credit, even for the "largest" of the negative changes.
  const std::vector<int> repeated = honest_induction().ids;
  EXPECT_FALSE(check_ablation_matters({0, 1, 2, {-0.3f, -0.01f, -0.2f, -0.1f}, repeated}).met);
  EXPECT_FALSE(check_ablation_matters({0, 0, 2, {0.0f, 0.0f, 0.0f, 0.0f}, repeated}).met);
  EXPECT_TRUE(check_ablation_matters({1, 1, 2, d, repeated}).met);
}

TEST(CourseAdversary, AnAnswerSentAfterARevealIsNeverCreditedWhateverTheEvidence) {
  class Model final : public LessonModel {
   public:
    int n_layer() const override { return 2; }
    int n_head() const override { return 2; }
    Result<analysis::ScanReport> scan_report() override { return analysis::ScanReport{}; }
    Result<std::vector<float>> head_ablation_deltas(const std::string&) override {
      return std::vector<float>{0.05f, 0.01f, 0.12f, 0.20f};
    }
    Result<HeadOnText> head_on_text(const std::string&, int, int) override {
      InductionEvidence e = honest_induction();
      return HeadOnText{static_cast<int>(e.ids.size()), e.ids, e.pattern, e.pattern};
    }
  } model;
  for (const char* challenge : {"pattern-quiz", "find-induction", "ablation-matters"}) {
    Answer a;
    a.challenge = challenge;
    a.layer = 1, a.head = 1, a.text = "a b c d e a b c d e", a.choice = "below-diagonal";
    auto honest = check_trained_heads_answer(a, &model);
    ASSERT_TRUE(honest) << honest.error().message;
    EXPECT_TRUE(honest->met) << challenge << ": the honest path earns it: " << honest->explanation;
    a.revealed = true;
    auto after = check_trained_heads_answer(a, &model);
    ASSERT_TRUE(after) << after.error().message;
    EXPECT_FALSE(after->met) << challenge;
  }
}
