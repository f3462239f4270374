// Issue 26: lesson 3's challenges tick only on the learner's own evidence. Each check is fed
// generated junk — the page's defaults, degenerate texts (empty, one token, one token
// repeated, two alternating, the longest allowed), even and tied rows, random answers,
// answers retyped after a wrong one, answers after a reveal — and must give no credit; a
// wrong answer never names the answer it could then be credited for; the honest paths
// still earn it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <regex>
#include <set>

#include "course/word_order.h"

using namespace headlab;
using namespace headlab::course;

namespace {

// A content-only head over token texts: each key gets exp(score(query token, key token)),
// so the row moves with its words when they are shuffled, as a head without positions does.
struct ContentHead {
  std::vector<std::vector<float>> score;  // (V, V) by token index into `vocab`
  std::vector<std::string> vocab;
  std::vector<float> pattern(const std::vector<std::string>& tokens) const {
    const int T = static_cast<int>(tokens.size());
    std::vector<float> p(std::size_t(T) * T);
    auto id = [&](const std::string& t) { return std::find(vocab.begin(), vocab.end(), t) - vocab.begin(); };
    for (int q = 0; q < T; ++q) {
      double sum = 0;
      for (int k = 0; k < T; ++k) sum += p[std::size_t(q) * T + k] = std::exp(score[id(tokens[q])][id(tokens[k])]);
      for (int k = 0; k < T; ++k) p[std::size_t(q) * T + k] = static_cast<float>(p[std::size_t(q) * T + k] / sum);
    }
    return p;
  }
};

ContentHead random_head(const std::vector<std::string>& vocab, double spread, std::mt19937& rng) {
  ContentHead h{{}, vocab};
  std::normal_distribution<double> n(0.0, spread);
  for (std::size_t i = 0; i < vocab.size(); ++i) {
    h.score.emplace_back();
    for (std::size_t j = 0; j < vocab.size(); ++j) h.score.back().push_back(static_cast<float>(n(rng)));
  }
  return h;
}

std::vector<int> random_order(int T, std::mt19937& rng) {
  std::vector<int> o(T);
  std::iota(o.begin(), o.end(), 0);
  std::shuffle(o.begin(), o.end(), rng);
  return o;
}

ShuffleEvidence shuffle_of(const ContentHead& h, const std::vector<std::string>& tokens, const std::vector<int>& order, int query,
                           int key) {
  std::vector<std::string> shuffled;
  for (int o : order) shuffled.push_back(tokens[o]);
  return {0, tokens, order, h.pattern(tokens), h.pattern(shuffled), query, key};
}

// Whole numbers written in a text, decimals and shares left out ("cosine 0.81", "12%" give none).
std::set<int> whole_numbers(const std::string& s) {
  std::set<int> out;
  static const std::regex number(R"((\d+(?:\.\d+)?)(%?))");  // a share ("12%") is no position either
  for (auto it = std::sregex_iterator(s.begin(), s.end(), number); it != std::sregex_iterator(); ++it)
    if (it->str(1).find('.') == std::string::npos && it->str(2).empty()) out.insert(std::stoi(it->str(1)));
  return out;
}

const std::vector<std::string> kWords = {"the", " man", " sent", " his", " men", " to", " mill", " by", " river", ",", ".", " the"};

}  // namespace

TEST(WordOrderAdversary, ShuffleGivesNoCreditForAnyPickOnADegenerateText) {
  std::mt19937 rng(1);
  std::vector<std::vector<std::string>> texts = {
      {}, {"x"}, {"x", " y"}, {"x", " y", " z"},              // empty, one token, shorter than a shuffle needs
      std::vector<std::string>(12, " x"),                      // "x x x ... x": one token repeated
      std::vector<std::string>(128, " x"),                     // the longest the view shows, one token
  };
  for (int T : {4, 12, 128}) {  // two alternating tokens
    texts.emplace_back();
    for (int i = 0; i < T; ++i) texts.back().push_back(i % 2 ? " b" : " a");
  }
  const std::vector<std::string> vocab = {" a", " b", " x", "x", " y", " z"};
  const ContentHead flat{std::vector<std::vector<float>>(6, std::vector<float>(6, 0.0f)), vocab};  // every key alike
  for (const auto& tokens : texts) {
    const int T = static_cast<int>(tokens.size());
    if (T == 0) {
      EXPECT_FALSE(check_shuffle_follows({0, {}, {}, {}, {}, 0, 0}).met);
      continue;
    }
    for (const ContentHead& head : {flat, random_head(vocab, 0.3, rng), random_head(vocab, 3.0, rng)}) {
      for (int trial = 0; trial < 3; ++trial) {
        const std::vector<int> order = random_order(T, rng);
        for (int query : {0, T / 2, T - 1})
          for (int key = 0; key < T; key += std::max(1, T / 16)) {
            Verdict v = check_shuffle_follows(shuffle_of(head, tokens, order, query, key));
            const bool two_words = std::set<std::string>(tokens.begin(), tokens.end()).size() == 2;
            // Two alternating words can be followed honestly: only the favourite word earns it.
            if (two_words && v.met) {
              const auto p = head.pattern(tokens);
              const int was = order[query];
              const int fav = int(std::max_element(p.begin() + std::size_t(was) * T, p.begin() + std::size_t(was + 1) * T) -
                                  (p.begin() + std::size_t(was) * T));
              EXPECT_EQ(tokens[order[key]], tokens[fav]) << v.explanation;
            } else {
              EXPECT_FALSE(v.met) << "T=" << T << ": " << v.explanation;
            }
            EXPECT_FALSE(v.explanation.empty());
          }
      }
    }
  }
}

TEST(WordOrderAdversary, ShuffleGivesNoCreditOnARowWithoutAClearFavouriteWord) {
  const std::vector<std::string> tokens(kWords.begin(), kWords.end());
  const int T = static_cast<int>(tokens.size());
  ContentHead even{std::vector<std::vector<float>>(T, std::vector<float>(T, 0.0f)), tokens};
  ContentHead two{even};  // " mill" and " river" share the first place
  for (auto& row : two.score) row[6] = row[8] = 2.0f;
  std::mt19937 rng(2);
  for (const ContentHead& h : {even, two})
    for (int trial = 0; trial < 20; ++trial) {
      const std::vector<int> order = random_order(T, rng);
      for (int key = 0; key < T; ++key) {
        Verdict v = check_shuffle_follows(shuffle_of(h, tokens, order, 0, key));
        EXPECT_FALSE(v.met) << v.explanation;
        if (v.explanation.find("nothing was shuffled") == std::string::npos) {
          EXPECT_NE(v.explanation.find("no clear favourite"), std::string::npos) << v.explanation;
        }
      }
    }
}

TEST(WordOrderAdversary, ShuffleCreditsOnlyTheFollowedWordNeverTheOldPlaceOrARandomPick) {
  const std::vector<std::string> tokens(kWords.begin(), kWords.end());
  const int T = static_cast<int>(tokens.size());
  std::mt19937 rng(3);
  int honest = 0;
  for (int trial = 0; trial < 200; ++trial) {
    const ContentHead h = random_head(tokens, 2.0, rng);
    const std::vector<int> order = random_order(T, rng);
    const int query = std::uniform_int_distribution<int>(0, T - 1)(rng);
    const int was = order[query];
    const auto p = h.pattern(tokens);
    const int fav = int(std::max_element(p.begin() + std::size_t(was) * T, p.begin() + std::size_t(was + 1) * T) -
                        (p.begin() + std::size_t(was) * T));
    const int now = int(std::find(order.begin(), order.end(), fav) - order.begin());
    for (int key = 0; key < T; ++key) {
      Verdict v = check_shuffle_follows(shuffle_of(h, tokens, order, query, key));
      if (key != now) {
        EXPECT_FALSE(v.met) << "a pick that is not the word: " << v.explanation;
        if (key == fav && now != fav) {
          EXPECT_FALSE(v.met) << "the old place";
        }
      }
      honest += v.met;
    }
  }
  EXPECT_GT(honest, 100) << "the honest pick earns it on most shuffles of clear rows";
}

TEST(WordOrderAdversary, AWrongShufflePickIsNeverToldWhereTheWordNowSits) {
  const std::vector<std::string> tokens = {"alpha", " bravo", " charlie", " delta", " echo", " foxtrot", " golf", " hotel"};
  const int T = static_cast<int>(tokens.size());
  std::mt19937 rng(4);
  int checked = 0;
  for (int trial = 0; trial < 100; ++trial) {
    const ContentHead h = random_head(tokens, 2.5, rng);
    const std::vector<int> order = random_order(T, rng);
    const int query = trial % T;
    const auto p = h.pattern(tokens);
    const int was = order[query];
    const int fav = int(std::max_element(p.begin() + std::size_t(was) * T, p.begin() + std::size_t(was + 1) * T) -
                        (p.begin() + std::size_t(was) * T));
    const int now = int(std::find(order.begin(), order.end(), fav) - order.begin());
    if (fav == was) continue;  // a row that looks most at itself names its own word by asking
    for (int key = 0; key < T; ++key) {
      if (key == now) continue;
      Verdict v = check_shuffle_follows(shuffle_of(h, tokens, order, query, key));
      ASSERT_FALSE(v.met);
      if (v.explanation.find("You picked") == std::string::npos) continue;  // refused before any pick: says nothing of it
      ++checked;
      const std::string word = tokens[fav].substr(tokens[fav].find_first_not_of(' '));  // drawn with or without its space
      EXPECT_EQ(v.explanation.find(word), std::string::npos) << "names the word: " << v.explanation;
      if (now != key && now != query && now != was) {
        EXPECT_FALSE(whole_numbers(v.explanation).count(now)) << v.explanation;
      }
    }
  }
  EXPECT_GT(checked, 100);
}

TEST(WordOrderAdversary, NeighbourCreditsOnlyTheMostAlikeOtherPositionAndAWrongGuessNeverNamesIt) {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 30; ++trial) {
    const int N = 2 + trial * 4;
    // Random vectors of 8 numbers: their cosine matrix, (N, N).
    std::vector<std::vector<double>> w(N, std::vector<double>(8));
    for (auto& r : w)
      for (double& x : r) x = std::normal_distribution<double>()(rng);
    std::vector<float> cosine(std::size_t(N) * N);
    for (int a = 0; a < N; ++a)
      for (int b = 0; b < N; ++b) {
        double d = 0, na = 0, nb = 0;
        for (int i = 0; i < 8; ++i) d += w[a][i] * w[b][i], na += w[a][i] * w[a][i], nb += w[b][i] * w[b][i];
        cosine[std::size_t(a) * N + b] = static_cast<float>(d / std::sqrt(na * nb));
      }
    for (int position = 0; position < N; position += 3) {
      int best = -1;
      for (int j = 0; j < N; ++j)
        if (j != position && (best < 0 || cosine[std::size_t(position) * N + j] > cosine[std::size_t(position) * N + best])) best = j;
      int tied = 0;  // a near-tie has no single answer: never met (NeighbourGivesNoCreditOnATie...)
      for (int j = 0; j < N; ++j)
        tied += j != position && cosine[std::size_t(position) * N + j] >= cosine[std::size_t(position) * N + best] - kNeighbourTie;
      if (tied > 1) {
        for (int guess = 0; guess < N; ++guess) EXPECT_FALSE(check_wpe_neighbour({position, guess, N, cosine}).met);
        continue;
      }
      for (int guess = 0; guess < N; ++guess) {
        Verdict v = check_wpe_neighbour({position, guess, N, cosine});
        EXPECT_EQ(v.met, guess == best) << "N=" << N << " p=" << position << " guess " << guess << ": " << v.explanation;
        if (!v.met && guess != position) {
          std::set<int> said = whole_numbers(v.explanation);
          said.erase(guess), said.erase(position), said.erase(N);
          int closer = 0;
          for (int j = 0; j < N; ++j) closer += j != position && cosine[std::size_t(position) * N + j] > cosine[std::size_t(position) * N + guess];
          if (best != closer) {
            EXPECT_FALSE(said.count(best)) << "names the answer " << best << ": " << v.explanation;
          }
        }
      }
      // Asked to be shown (a reveal): the answer, never credit.
      Verdict shown = check_wpe_neighbour({position, -1, N, cosine});
      EXPECT_FALSE(shown.met);
      EXPECT_NE(shown.explanation.find(" is " + std::to_string(best) + " "), std::string::npos) << shown.explanation;
    }
  }
}

TEST(WordOrderAdversary, NeighbourGivesNoCreditOnATieOrADegenerateTable) {
  // Every vector alike (a model whose wpe never trained): every guess ties.
  const int N = 16;
  std::vector<float> same(std::size_t(N) * N, 1.0f), zero(std::size_t(N) * N, 0.0f);
  for (int i = 0; i < N; ++i) zero[std::size_t(i) * N + i] = 1.0f;
  for (const auto& cosine : {same, zero})
    for (int position = 0; position < N; ++position)
      for (int guess = 0; guess < N; ++guess) {
        Verdict v = check_wpe_neighbour({position, guess, N, cosine});
        EXPECT_FALSE(v.met) << v.explanation;
      }
  Verdict tie = check_wpe_neighbour({3, 2, N, same});
  EXPECT_NE(tie.explanation.find("15 positions are equally like position 3"), std::string::npos) << tie.explanation;
  EXPECT_FALSE(check_wpe_neighbour({0, 0, 1, {1.0f}}).met);
}

TEST(WordOrderAdversary, NeighbourInterpretsANearestPositionThatIsNotANeighbour) {
  // Position 2 is most like 0, not 1 or 3: the verdict says so and what a cosine does not tell.
  const int N = 5;
  std::vector<float> c(N * N, 0.1f);
  for (int i = 0; i < N; ++i) c[i * N + i] = 1.0f;
  c[2 * N + 0] = c[0 * N + 2] = 0.9f;
  c[2 * N + 1] = 0.3f, c[2 * N + 3] = 0.2f;
  Verdict v = check_wpe_neighbour({2, 0, N, c});
  EXPECT_TRUE(v.met) << v.explanation;
  EXPECT_NE(v.explanation.find("It is not a neighbour (position 1 0.30 and position 3 0.20)"), std::string::npos) << v.explanation;
  c[2 * N + 3] = 0.95f;
  v = check_wpe_neighbour({2, 3, N, c});
  EXPECT_TRUE(v.met);
  EXPECT_NE(v.explanation.find("It is a neighbour"), std::string::npos) << v.explanation;
}

TEST(WordOrderAdversary, OffsetGivesNoCreditToRandomPairsDefaultsOrPairsSittingTogether) {
  std::mt19937 rng(6);
  std::uniform_int_distribution<int> pos(0, 1000);
  int refused = 0;
  for (int trial = 0; trial < 1000; ++trial) {
    Answer a;
    a.challenge = "offset-only";
    a.positions = {pos(rng), pos(rng), pos(rng), pos(rng)};
    if (a.positions[0] - a.positions[1] == a.positions[2] - a.positions[3]) continue;
    auto v = check_word_order_answer(a, nullptr);
    ASSERT_TRUE(v) << v.error().message;
    EXPECT_FALSE(v->met) << v->explanation;
    refused += !v->met;
  }
  EXPECT_GT(refused, 950);
  for (std::vector<int> p : {std::vector<int>{5, 2, 9, 3}, {0, 0, 0, 0}, {5, 2, 5, 2}, {5, 2, 14, 11}, {8192, 8192, 8192, 8192}}) {
    Answer a;
    a.challenge = "offset-only";
    a.positions = p;
    auto v = check_word_order_answer(a, nullptr);
    if (v) {
      EXPECT_FALSE(v->met) << v->explanation;
    }
  }
  for (std::vector<int> p : {std::vector<int>{}, {1, 2, 3}, {1, 2, 3, 4, 5}, {9000, 0, 1, 0}}) {
    Answer a;
    a.challenge = "offset-only";
    a.positions = p;
    EXPECT_FALSE(check_word_order_answer(a, nullptr)) << "refused: " << p.size() << " numbers";
  }
}

TEST(WordOrderAdversary, OffsetCreditsTheSameOffsetFarApartWhereverItSits) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> pos(0, 4000), off(-50, 50);
  for (int trial = 0; trial < 60; ++trial) {
    const int m1 = pos(rng) + 60, d = off(rng), m2 = m1 + 10 + pos(rng);
    Answer a;
    a.challenge = "offset-only";
    a.positions = {m1, m1 - d, m2, m2 - d};
    auto v = check_word_order_answer(a, nullptr);
    ASSERT_TRUE(v) << v.error().message;
    EXPECT_TRUE(v->met) << v->explanation;
    a.revealed = true;  // after a reveal: the same evidence earns nothing
    v = check_word_order_answer(a, nullptr);
    ASSERT_TRUE(v);
    EXPECT_FALSE(v->met);
  }
}

TEST(WordOrderAdversary, AnAnswerSentAfterARevealIsNeverCreditedAndIsToldTheAnswer) {
  // A model whose tokens are the words of the text and whose content-only head is a ContentHead.
  class Model final : public LessonModel {
   public:
    int n_layer() const override { return 1; }
    int n_head() const override { return 1; }
    Result<analysis::ScanReport> scan_report() override { return analysis::ScanReport{}; }
    Result<std::vector<float>> head_ablation_deltas(const std::string&) override { return std::vector<float>{}; }
    Result<HeadOnText> head_on_text(const std::string&, int, int) override { return HeadOnText{}; }
    Result<TokensOfText> tokens_of_text(const std::string& text) override {
      TokensOfText t;
      std::size_t at = 0;
      while (at < text.size()) {
        std::size_t end = text.find(' ', at + 1);
        if (end == std::string::npos) end = text.size();
        t.texts.push_back(text.substr(at, end - at));
        t.ids.push_back(static_cast<int>(std::find(kWords.begin(), kWords.end(), t.texts.back()) - kWords.begin()));
        at = end;
      }
      return t;
    }
    Result<std::vector<float>> content_only_pattern(const std::vector<int>& ids, int) override {
      std::vector<std::string> tokens;
      for (int id : ids) tokens.push_back(kWords[id]);
      return head.pattern(tokens);
    }
    Result<PositionSimilarity> learned_position_similarity() override {
      const int N = 8;
      PositionSimilarity s{N, std::vector<float>(N * N, 0.0f)};
      for (int a = 0; a < N; ++a)
        for (int b = 0; b < N; ++b) s.cosine[a * N + b] = 1.0f / (1.0f + std::abs(a - b) + 0.1f * b);
      return s;
    }
    ContentHead head{std::vector<std::vector<float>>(kWords.size(), std::vector<float>(kWords.size(), 0.0f)), kWords};
  } model;
  for (auto& row : model.head.score) row[6] = 3.0f;  // every word looks most at " mill"
  const std::string text = "the man sent his men to the mill";  // " mill" is token 7
  const std::vector<int> order = {7, 1, 2, 3, 4, 5, 6, 0};      // " mill" now first, "the" last
  Answer shuffle;
  shuffle.challenge = "shuffle-follows", shuffle.text = text, shuffle.head = 0, shuffle.order = order, shuffle.positions = {3, 0};
  Answer neighbour;
  neighbour.challenge = "wpe-neighbour", neighbour.positions = {4, 3};
  Answer offset;
  offset.challenge = "offset-only", offset.positions = {5, 2, 105, 102};
  for (Answer a : {shuffle, neighbour, offset}) {
    auto honest = check_word_order_answer(a, &model);
    ASSERT_TRUE(honest) << honest.error().message;
    EXPECT_TRUE(honest->met) << a.challenge << ": the honest path earns it: " << honest->explanation;
    a.revealed = true;
    auto after = check_word_order_answer(a, &model);
    ASSERT_TRUE(after) << after.error().message;
    EXPECT_FALSE(after->met) << a.challenge;
    EXPECT_NE(after->explanation.find("no credit"), std::string::npos) << after->explanation;
  }
  // A reveal without a pick shows the answer.
  shuffle.revealed = true, shuffle.positions = {3};
  auto shown = check_word_order_answer(shuffle, &model);
  ASSERT_TRUE(shown) << shown.error().message;
  EXPECT_FALSE(shown->met);
  EXPECT_NE(shown->explanation.find("now at position 0"), std::string::npos) << shown->explanation;
  neighbour.revealed = true, neighbour.positions = {4};
  shown = check_word_order_answer(neighbour, &model);
  ASSERT_TRUE(shown) << shown.error().message;
  EXPECT_FALSE(shown->met);
  EXPECT_NE(shown->explanation.find("position 4 is 3 "), std::string::npos) << shown->explanation;
  // Without a reveal, one number is not an answer.
  neighbour.revealed = false;
  EXPECT_FALSE(check_word_order_answer(neighbour, &model));
}
