// Lesson 3's checks: each is met only by the learner's own evidence, and says why in numbers.
#include "course/word_order.h"

#include <gtest/gtest.h>

#include "analysis/position_views.h"

namespace headlab::course {
namespace {

// T = 4 tokens; each token looks most at the token "b".
ShuffleEvidence shuffle_evidence(std::vector<int> order, int query, int key) {
  ShuffleEvidence e;
  e.tokens = {"a", " b", " c", " d"};
  e.order = order;
  auto row_for = [](const std::string& t) { return t == " b" ? 1 : 0; };
  e.before.assign(16, 0.1f);
  for (int q = 0; q < 4; ++q) e.before[q * 4 + 1] = 0.7f;
  e.after.assign(16, 0.1f);
  for (int q = 0; q < 4; ++q)
    for (int k = 0; k < 4; ++k)
      if (row_for(e.tokens[order[k]])) e.after[q * 4 + k] = 0.7f;
  e.query = query;
  e.key = key;
  return e;
}

TEST(ShuffleFollows, IsMetWhenThePickFollowsTheWord) {
  // " b" moved from position 1 to position 3
  Verdict v = check_shuffle_follows(shuffle_evidence({2, 0, 3, 1}, 0, 3));
  EXPECT_TRUE(v.met) << v.explanation;
  EXPECT_NE(v.explanation.find("70%"), std::string::npos) << v.explanation;
}

TEST(ShuffleFollows, DrawsALeadingSpaceAsTheDotThePageDraws) {
  Verdict v = check_shuffle_follows(shuffle_evidence({2, 0, 3, 1}, 0, 3));
  EXPECT_NE(v.explanation.find("\u201c\u00b7b\u201d"), std::string::npos) << v.explanation;
  EXPECT_EQ(v.explanation.find("\u201c b\u201d"), std::string::npos) << v.explanation;
}

TEST(ShuffleFollows, IsNotMetWhenThePickStaysAtTheOldPlace) {
  Verdict v = check_shuffle_follows(shuffle_evidence({2, 0, 3, 1}, 0, 1));
  EXPECT_FALSE(v.met);
  EXPECT_NE(v.explanation.find("Follow the word"), std::string::npos) << v.explanation;
}

TEST(ShuffleFollows, IsNeverMetWithoutAShuffle) {
  Verdict v = check_shuffle_follows(shuffle_evidence({0, 1, 2, 3}, 0, 1));
  EXPECT_FALSE(v.met);
  EXPECT_NE(v.explanation.find("nothing was shuffled"), std::string::npos) << v.explanation;
}

TEST(ShuffleFollows, NeedsFourTokens) {
  ShuffleEvidence e;
  e.tokens = {"a", "b"};
  e.order = {1, 0};
  EXPECT_FALSE(check_shuffle_follows(e).met);
}

TEST(WpeNeighbour, IsMetByTheMostSimilarOtherPosition) {
  NeighbourEvidence e{1, 2, 3, {1.0f, 0.5f, 0.1f, 0.5f, 1.0f, 0.8f, 0.1f, 0.8f, 1.0f}};
  Verdict v = check_wpe_neighbour(e);
  EXPECT_TRUE(v.met) << v.explanation;
  EXPECT_NE(v.explanation.find("0.80"), std::string::npos) << v.explanation;
  e.guess = 0;
  v = check_wpe_neighbour(e);
  EXPECT_FALSE(v.met);
  EXPECT_NE(v.explanation.find("0.50"), std::string::npos) << v.explanation;
}

TEST(WpeNeighbour, ThePositionItselfDoesNotCount) {
  NeighbourEvidence e{1, 1, 3, {1.0f, 0.5f, 0.1f, 0.5f, 1.0f, 0.8f, 0.1f, 0.8f, 1.0f}};
  EXPECT_FALSE(check_wpe_neighbour(e).met);
}

TEST(PreviousTokenShares, BandsAre2To7And8To31AndTheRestOfTheContext) {
  using Bands = std::vector<std::pair<int, int>>;
  EXPECT_EQ(previous_token_bands(64), (Bands{{2, 8}, {8, 32}, {32, 64}}));
  EXPECT_EQ(previous_token_bands(20), (Bands{{2, 8}, {8, 20}}));
  EXPECT_EQ(previous_token_bands(5), (Bands{{2, 5}}));
}

TEST(PreviousTokenShares, AverageTheWeightOneStepBackBesideAnEvenSpread) {
  // T = 6: a head that puts 0.5 one step back from query 2 on, and spreads the rest
  const int T = 6;
  std::vector<float> p(T * T, 0.0f);
  for (int q = 0; q < T; ++q)
    for (int k = 0; k <= q; ++k) p[q * T + k] = q < 2 ? 1.0f / (q + 1) : (k == q - 1 ? 0.5f : 0.5f / q);
  std::vector<float> even(T * T, 0.0f);
  for (int q = 0; q < T; ++q)
    for (int k = 0; k <= q; ++k) even[q * T + k] = 1.0f / (q + 1);
  const auto s = previous_token_shares({{p.data(), T}, {even.data(), T}}, {{2, 4}, {4, 64}});
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].queries, 4);  // queries 2 and 3 of both patterns
  EXPECT_NEAR(s[0].share, (0.5 + 0.5 + 1.0 / 3 + 1.0 / 4) / 4, 1e-6);
  EXPECT_NEAR(s[0].chance, (1.0 / 3 + 1.0 / 4) / 2, 1e-9);
  EXPECT_EQ(s[1].from, 4);
  EXPECT_EQ(s[1].queries, 4);  // queries 4 and 5: the band stops at T
  EXPECT_NEAR(s[1].chance, (1.0 / 5 + 1.0 / 6) / 2, 1e-9);
}

TEST(PreviousTokenShares, NeverCountTheFirstTwoQueriesAndAreZeroWithoutAny) {
  const int T = 3;
  std::vector<float> p = {1, 0, 0, 0, 1, 0, 0, 1, 0};
  const auto s = previous_token_shares({{p.data(), T}}, {{0, 2}, {0, 3}});
  EXPECT_EQ(s[0].from, 2);
  EXPECT_EQ(s[0].queries, 0);
  EXPECT_EQ(s[0].share, 0.0);
  EXPECT_EQ(s[1].queries, 1);
  EXPECT_EQ(s[1].share, 1.0);
}

TEST(OffsetOnly, IsMetByTheSameOffsetFarApartWithTheEnginesNumbers) {
  Answer a;
  a.challenge = "offset-only";
  a.positions = {5, 2, 105, 102};
  auto v = check_word_order_answer(a, nullptr);
  ASSERT_TRUE(v) << v.error().message;
  EXPECT_TRUE(v->met) << v->explanation;
  EXPECT_NE(v->explanation.find("offsets 3 and 3"), std::string::npos) << v->explanation;
}

TEST(OffsetOnly, IsNotMetByTheLessonsStartingPairs) {
  Answer a;
  a.challenge = "offset-only";
  a.positions = {5, 2, 9, 3};  // the page's defaults
  auto v = check_word_order_answer(a, nullptr);
  ASSERT_TRUE(v);
  EXPECT_FALSE(v->met) << v->explanation;
}

TEST(OffsetOnly, IsNotMetByPairsThatSitTogether) {
  Answer a;
  a.challenge = "offset-only";
  a.positions = {5, 2, 5, 2};
  auto v = check_word_order_answer(a, nullptr);
  ASSERT_TRUE(v);
  EXPECT_FALSE(v->met);
  EXPECT_NE(v->explanation.find("at least 10"), std::string::npos) << v->explanation;
}

TEST(OffsetOnly, EarnsNoCreditWhenRevealed) {
  Answer a;
  a.challenge = "offset-only";
  a.positions = {5, 2, 105, 102};
  a.revealed = true;
  auto v = check_word_order_answer(a, nullptr);
  ASSERT_TRUE(v);
  EXPECT_FALSE(v->met);
  EXPECT_NE(v->explanation.find("no credit"), std::string::npos);
}

// A model whose tokens are the characters of the text and whose content-only head is the
// real one of a small random model.
class FakeModel final : public LessonModel {
 public:
  FakeModel() {
    model::ModelConfig c;
    c.n_layer = 1, c.n_head = 2, c.n_embd = 8, c.n_ctx = 16, c.vocab_size = 128, c.bos_token_id = c.eos_token_id = 127;
    p_ = model::parameters_allocate(c);
    model::parameters_init_random(p_, 3);
    for (std::size_t i = 0; i < std::size_t(3 * 8 * 8); ++i) p_.t.qkvw[i] *= 40.0f;
  }
  int n_layer() const override { return 1; }
  int n_head() const override { return 2; }
  Result<analysis::ScanReport> scan_report() override { return analysis::ScanReport{}; }
  Result<std::vector<float>> head_ablation_deltas(const std::string&) override { return std::vector<float>{}; }
  Result<HeadOnText> head_on_text(const std::string&, int, int) override { return HeadOnText{}; }
  Result<TokensOfText> tokens_of_text(const std::string& text) override {
    TokensOfText t;
    for (char ch : text) t.ids.push_back(ch & 127), t.texts.push_back(std::string(1, ch));
    return t;
  }
  Result<std::vector<float>> content_only_pattern(const std::vector<int>& ids, int head) override {
    return analysis::content_only_pattern(p_, ids, head);
  }
  Result<PositionSimilarity> learned_position_similarity() override {
    return PositionSimilarity{p_.config.n_ctx, analysis::position_similarity(p_.t.wpe, p_.config.n_ctx, p_.config.n_embd)};
  }

 private:
  model::Parameters p_;
};

TEST(WordOrderAnswer, ShuffleIsCheckedOnTheModelsOwnPatterns) {
  FakeModel m;
  const std::string text = "abcde";
  auto toks = m.tokens_of_text(text);
  const std::vector<int> order = {4, 3, 2, 1, 0};
  std::vector<int> shuffled;
  for (int o : order) shuffled.push_back(toks->ids[o]);
  auto after = m.content_only_pattern(shuffled, 1);
  ASSERT_TRUE(after);
  int best = 0;
  for (int k = 1; k < 5; ++k)
    if ((*after)[k] > (*after)[best]) best = k;
  Answer a;
  a.challenge = "shuffle-follows";
  a.text = text;
  a.head = 1;
  a.order = order;
  a.positions = {0, best};
  auto v = check_word_order_answer(a, &m);
  ASSERT_TRUE(v) << v.error().message;
  EXPECT_TRUE(v->met) << v->explanation;
  a.positions = {0, (best + 1) % 5};
  v = check_word_order_answer(a, &m);
  ASSERT_TRUE(v);
  EXPECT_FALSE(v->met) << v->explanation;
}

TEST(WordOrderAnswer, RefusesAnOrderThatIsNotAPermutation) {
  FakeModel m;
  Answer a;
  a.challenge = "shuffle-follows";
  a.text = "abcde";
  a.head = 0;
  a.order = {0, 0, 1, 2, 3};
  a.positions = {0, 1};
  auto v = check_word_order_answer(a, &m);
  ASSERT_FALSE(v);
  EXPECT_EQ(v.error().code, ErrorCode::invalid_argument);
  EXPECT_NE(v.error().message.find("each of the text's 5 tokens once"), std::string::npos);
}

TEST(WordOrderAnswer, RefusesUnknownChallengesAndMissingFields) {
  FakeModel m;
  Answer a;
  a.challenge = "nope";
  EXPECT_EQ(check_word_order_answer(a, &m).error().code, ErrorCode::invalid_argument);
  a.challenge = "wpe-neighbour";
  EXPECT_EQ(check_word_order_answer(a, &m).error().code, ErrorCode::invalid_argument);
  a.positions = {3, 99};
  EXPECT_EQ(check_word_order_answer(a, &m).error().code, ErrorCode::invalid_argument);
  EXPECT_EQ(check_word_order_answer(a, nullptr).error().code, ErrorCode::unavailable);
  a.challenge = "offset-only";
  EXPECT_EQ(check_word_order_answer(a, nullptr).error().code, ErrorCode::invalid_argument);
}

}  // namespace
// The evidence a verdict spoke about, which the server keeps so that only the first answer
// on it earns credit: the position asked about; for a shuffle its answer (the word followed,
// its favourite and where that went), so another pick, a word added to the text or another
// order with the same move is the same guess, and a shuffle sending the favourite elsewhere a
// new one. A verdict that showed nothing (no shuffle, the position itself) names none.
TEST(WordOrderGuess, NamesThePositionOrTheShufflesAnswerAVerdictSpokeAbout) {
  const std::vector<float> cosine = {1.0f, 0.5f, 0.1f, 0.5f, 1.0f, 0.8f, 0.1f, 0.8f, 1.0f};
  EXPECT_EQ(check_wpe_neighbour({1, 2, 3, cosine}).guess, "position#1");
  EXPECT_EQ(check_wpe_neighbour({1, 0, 3, cosine}).guess, "position#1");  // wrong: told how far off
  EXPECT_EQ(check_wpe_neighbour({1, 1, 3, cosine}).guess, "");          // the position itself: nothing shown
  const Verdict right = check_shuffle_follows(shuffle_evidence({2, 0, 3, 1}, 0, 3));
  const Verdict wrong = check_shuffle_follows(shuffle_evidence({2, 0, 3, 1}, 0, 1));
  ASSERT_TRUE(right.met) << right.explanation;
  EXPECT_EQ(right.guess.rfind("shuffle#", 0), 0u) << right.guess;
  EXPECT_LE(right.guess.size(), 200u);
  EXPECT_EQ(wrong.guess, right.guess);  // another pick on the same shuffle
  // another order that puts " b" at the same place: the same answer, the same guess
  EXPECT_EQ(check_shuffle_follows(shuffle_evidence({2, 3, 0, 1}, 0, 3)).guess, right.guess);
  // " b" sent elsewhere: a new guess
  const Verdict elsewhere = check_shuffle_follows(shuffle_evidence({2, 0, 1, 3}, 0, 2));
  EXPECT_TRUE(elsewhere.met) << elsewhere.explanation;
  EXPECT_FALSE(elsewhere.guess.empty());
  EXPECT_NE(elsewhere.guess, right.guess);
  ShuffleEvidence other_head = shuffle_evidence({2, 0, 3, 1}, 0, 3);
  other_head.head = 1;
  EXPECT_NE(check_shuffle_follows(other_head).guess, right.guess);
  EXPECT_EQ(check_shuffle_follows(shuffle_evidence({0, 1, 2, 3}, 0, 1)).guess, "");  // nothing shuffled
}

}  // namespace headlab::course
