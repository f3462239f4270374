// Tests for analysis/position_views: the word-order lesson's engine numbers.
#include "analysis/position_views.h"

#include <gtest/gtest.h>

#include <cmath>

#include "model/parameters.h"

namespace headlab::analysis {
namespace {

model::Parameters tiny_model() {
  model::ModelConfig c;
  c.n_layer = 1;
  c.n_head = 2;
  c.n_embd = 8;
  c.n_ctx = 16;
  c.vocab_size = 20;
  c.bos_token_id = c.eos_token_id = 19;
  model::Parameters p = model::parameters_allocate(c);
  model::parameters_init_random(p, 7);
  // larger q and k weights than GPT-2's init, so the pattern is far from uniform
  for (std::size_t i = 0; i < std::size_t(3 * 8 * 8); ++i) p.t.qkvw[i] *= 40.0f;
  return p;
}

TEST(ContentOnlyPattern, RowsSumToOne) {
  model::Parameters p = tiny_model();
  auto r = content_only_pattern(p, std::vector<int>{3, 5, 7, 11}, 1);
  ASSERT_TRUE(r) << r.error().message;
  for (int a = 0; a < 4; ++a) {
    double s = 0;
    for (int b = 0; b < 4; ++b) s += (*r)[a * 4 + b];
    EXPECT_NEAR(s, 1.0, 1e-5);
  }
}

TEST(ContentOnlyPattern, PermutesWithTheTokens) {
  model::Parameters p = tiny_model();
  const std::vector<int> ids = {3, 5, 7, 11, 2};
  const std::vector<int> order = {4, 2, 0, 3, 1};  // shuffled[i] = ids[order[i]]
  std::vector<int> shuffled;
  for (int o : order) shuffled.push_back(ids[o]);
  auto a = content_only_pattern(p, ids, 0);
  auto b = content_only_pattern(p, shuffled, 0);
  ASSERT_TRUE(a && b);
  double worst = 0;
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 5; ++j) worst = std::max(worst, double(std::fabs((*b)[i * 5 + j] - (*a)[order[i] * 5 + order[j]])));
  EXPECT_LT(worst, 1e-6) << "max abs difference " << worst;
  bool differs = false;
  for (int i = 0; i < 25; ++i) differs |= std::fabs((*a)[i] - (*b)[i]) > 1e-3;
  EXPECT_TRUE(differs) << "the shuffle should move the numbers around";
}

TEST(ContentOnlyPattern, IsTheSameWhenTheMatricesArePacked) {
  model::Parameters rows = tiny_model(), packed = tiny_model();
  ASSERT_TRUE(model::parameters_pack(packed));
  auto a = content_only_pattern(rows, std::vector<int>{3, 5, 7, 11}, 1);
  auto b = content_only_pattern(packed, std::vector<int>{3, 5, 7, 11}, 1);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(*a, *b);
}

TEST(ContentOnlyPattern, RefusesAHeadThatDoesNotExist) {
  model::Parameters p = tiny_model();
  auto r = content_only_pattern(p, std::vector<int>{1, 2}, 2);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::invalid_argument);
  EXPECT_NE(r.error().message.find("heads 0 to 1"), std::string::npos);
}

TEST(ContentOnlyPattern, RefusesAnIdOutsideTheVocabulary) {
  model::Parameters p = tiny_model();
  EXPECT_FALSE(content_only_pattern(p, std::vector<int>{1, 20}, 0));
  EXPECT_FALSE(content_only_pattern(p, std::vector<int>{}, 0));
}

TEST(PositionSimilarity, IsOneOnTheDiagonalAndSymmetric) {
  const std::vector<float> pe = sinusoidal_positions(12, 16);
  const std::vector<float> s = position_similarity(pe.data(), 12, 16);
  for (int a = 0; a < 12; ++a) {
    EXPECT_NEAR(s[a * 12 + a], 1.0, 1e-5);
    for (int b = 0; b < 12; ++b) EXPECT_NEAR(s[a * 12 + b], s[b * 12 + a], 1e-6);
  }
}

TEST(SinusoidalPositions, MatchVaswaniFormula) {
  const std::vector<float> pe = sinusoidal_positions(5, 8);
  EXPECT_NEAR(pe[3 * 8 + 0], std::sin(3.0), 1e-6);
  EXPECT_NEAR(pe[3 * 8 + 1], std::cos(3.0), 1e-6);
  EXPECT_NEAR(pe[3 * 8 + 4], std::sin(3.0 / 100.0), 1e-6);  // 10000^(4/8) = 100
}

TEST(RopeDots, DependOnlyOnTheOffset) {
  std::vector<float> q(64), k(64);
  for (int i = 0; i < 64; ++i) q[i] = std::sin(0.7f * i + 1), k[i] = std::cos(0.3f * i);
  auto r = rope_dots(q, k, 10000.0f, {{5, 2}, {105, 102}, {7, 2}});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_NEAR((*r)[0].dot, (*r)[1].dot, 1e-3);
  EXPECT_GT(std::fabs((*r)[0].dot - (*r)[2].dot), 1e-2);
}

TEST(RopeDots, RotateAPairByPositionTimesFrequency) {
  // HS = 2: one pair, frequency 1; position 1 turns (1, 0) by one radian.
  auto r = rope_dots({1.0f, 0.0f}, {1.0f, 0.0f}, 10000.0f, {{1, 0}});
  ASSERT_TRUE(r);
  EXPECT_NEAR((*r)[0].q[0], std::cos(1.0), 1e-6);
  EXPECT_NEAR((*r)[0].q[1], std::sin(1.0), 1e-6);
  EXPECT_NEAR((*r)[0].dot, std::cos(1.0), 1e-6);
}

TEST(RopeDots, RefuseBadInput) {
  EXPECT_FALSE(rope_dots({1, 2, 3}, {1, 2, 3}, 10000.0f, {{0, 0}}));
  EXPECT_FALSE(rope_dots({1, 2}, {1, 2, 3, 4}, 10000.0f, {{0, 0}}));
  EXPECT_FALSE(rope_dots({1, 2}, {1, 2}, 1.0f, {{0, 0}}));
  EXPECT_FALSE(rope_dots({1, 2}, {1, 2}, 10000.0f, {}));
  EXPECT_FALSE(rope_dots({1, 2}, {1, 2}, 10000.0f, {{0, kMaxRopePosition + 1}}));
}

TEST(RopeWavelengths, FollowThetaAndHeadSize) {
  auto r = rope_wavelengths(10000.0, 64);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->size(), 32u);
  EXPECT_NEAR(r->front().wavelength, 2 * M_PI, 1e-9);
  EXPECT_NEAR(r->back().wavelength, 2 * M_PI * std::pow(10000.0, 62.0 / 64), 1e-6);
}

TEST(RopeWavelengths, SayWhatIsWrong) {
  auto odd = rope_wavelengths(10000.0, 63);
  ASSERT_FALSE(odd);
  EXPECT_NE(odd.error().message.find("even"), std::string::npos);
  auto low = rope_wavelengths(0.5, 64);
  ASSERT_FALSE(low);
  EXPECT_NE(low.error().message.find("above 1"), std::string::npos);
  EXPECT_FALSE(rope_wavelengths(NAN, 64));
  EXPECT_FALSE(rope_wavelengths(2e9, 64));
  EXPECT_FALSE(rope_wavelengths(10000.0, 2048));
}

}  // namespace
}  // namespace headlab::analysis
