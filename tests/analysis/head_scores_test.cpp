#include "analysis/head_scores.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

using namespace headlab::analysis;

namespace {
// A (T, T) pattern where each query q puts all its weight on key target(q).
template <class F>
std::vector<float> one_hot_pattern(int T, F target) {
  std::vector<float> p(T * T, 0.0f);
  for (int q = 0; q < T; ++q) p[q * T + target(q)] = 1.0f;
  return p;
}
std::vector<float> uniform_pattern(int T) {
  std::vector<float> p(T * T, 0.0f);
  for (int q = 0; q < T; ++q)
    for (int k = 0; k <= q; ++k) p[q * T + k] = 1.0f / (q + 1);
  return p;
}
}  // namespace

TEST(PreviousTokenScore, IsOneForAPreviousTokenHead) {
  auto p = one_hot_pattern(10, [](int q) { return std::max(0, q - 1); });
  Scored s = previous_token_score({p.data(), 10});
  EXPECT_DOUBLE_EQ(s.score, 1.0);
  EXPECT_GT(s.chance, 0.0);
  EXPECT_LT(s.chance, 0.3);
  EXPECT_NEAR(first_token_score({p.data(), 10}).score, 1.0 / 9, 1e-9);  // only q = 1 looks at 0
}

TEST(HeadScores, UniformHeadScoresItsChance) {
  auto p = uniform_pattern(12);
  PatternView v{p.data(), 12};
  for (Scored s : {previous_token_score(v), current_token_score(v), first_token_score(v), induction_score(v, 5),
                   duplicate_token_score(v, 5), entropy_score(v)})
    EXPECT_NEAR(s.score, s.chance, 1e-6);
}

TEST(InductionScore, CountsOnlyQueriesOfTheSecondCopy) {
  // BOS + 4 tokens + the same 4: queries 5..8 have targets q - 4 + 1
  const int R = 4, T = 2 * R + 1;
  auto p = one_hot_pattern(T, [&](int q) { return q > R ? q - R + 1 : 0; });
  EXPECT_DOUBLE_EQ(induction_score({p.data(), T}, R).score, 1.0);
  EXPECT_DOUBLE_EQ(duplicate_token_score({p.data(), T}, R).score, 0.0);
  auto d = one_hot_pattern(T, [&](int q) { return q > R ? q - R : 0; });
  EXPECT_DOUBLE_EQ(duplicate_token_score({d.data(), T}, R).score, 1.0);
}

TEST(PrefixMatchingScore, SumsOverEveryEarlierMatch) {
  // tokens: BOS a b a b a b ; query 5 (a) has matches at keys 2 and 4 (after earlier a's)
  std::vector<int> tokens = {9, 1, 2, 1, 2, 1, 2};
  const int T = 7;
  std::vector<float> p(T * T, 0.0f);
  for (int q = 0; q < T; ++q) {
    std::vector<int> keys;
    for (int k = 1; k <= q; ++k)
      if (tokens[k - 1] == tokens[q]) keys.push_back(k);
    if (keys.empty()) p[q * T] = 1.0f;
    for (int k : keys) p[q * T + k] = 1.0f / keys.size();
  }
  Scored s = prefix_matching_score({p.data(), T}, tokens);
  EXPECT_NEAR(s.score, 1.0, 1e-6);
  EXPECT_LT(s.chance, 0.5);
}

TEST(EntropyScore, IsZeroForOneKeyAndOneForUniform) {
  auto sharp = one_hot_pattern(8, [](int) { return 0; });
  EXPECT_NEAR(entropy_score({sharp.data(), 8}).score, 0.0, 1e-9);
  auto flat = uniform_pattern(8);
  EXPECT_NEAR(entropy_score({flat.data(), 8}).score, 1.0, 1e-6);
}

TEST(PunctuationScore, ComparesWithTheShareOfPunctuationKeys) {
  std::vector<bool> punct = {false, false, true, false, true, false};
  auto p = one_hot_pattern(6, [&](int q) { return q >= 4 ? 4 : q >= 2 ? 2 : 0; });
  Scored s = punctuation_score({p.data(), 6}, punct);
  EXPECT_NEAR(s.score, 4.0 / 5, 1e-9);  // queries 2..5 look at a mark, query 1 does not
  EXPECT_LT(s.chance, 0.4);
}

TEST(Eigenvalues, FindsComplexPairOfARotation) {
  std::vector<double> re, im;
  ASSERT_TRUE(eigenvalues({0, -1, 1, 0}, 2, re, im));
  std::sort(im.begin(), im.end());
  EXPECT_NEAR(re[0], 0.0, 1e-12);
  EXPECT_NEAR(im[0], -1.0, 1e-12);
  EXPECT_NEAR(im[1], 1.0, 1e-12);
}

TEST(Eigenvalues, SumToTraceAndMultiplyToDeterminant) {
  // a 5x5 non-symmetric matrix
  const int n = 5;
  std::vector<double> a(n * n);
  for (int i = 0; i < n * n; ++i) a[i] = std::sin(1.3 * i + 0.2) + (i % (n + 1) == 0 ? 2.0 : 0.0);
  std::vector<double> re, im;
  ASSERT_TRUE(eigenvalues(a, n, re, im));
  double trace = 0, sum = 0;
  for (int i = 0; i < n; ++i) trace += a[i * n + i], sum += re[i];
  EXPECT_NEAR(sum, trace, 1e-9);
  double im_sum = 0;
  for (double v : im) im_sum += v;
  EXPECT_NEAR(im_sum, 0.0, 1e-9);  // complex eigenvalues come in conjugate pairs
  // determinant by Gaussian elimination vs the product of the eigenvalues
  std::vector<double> m = a;
  double det = 1;
  for (int c = 0; c < n; ++c) {
    int piv = c;
    for (int r = c + 1; r < n; ++r)
      if (std::fabs(m[r * n + c]) > std::fabs(m[piv * n + c])) piv = r;
    if (piv != c) {
      for (int k = 0; k < n; ++k) std::swap(m[c * n + k], m[piv * n + k]);
      det = -det;
    }
    det *= m[c * n + c];
    for (int r = c + 1; r < n; ++r) {
      double f = m[r * n + c] / m[c * n + c];
      for (int k = c; k < n; ++k) m[r * n + k] -= f * m[c * n + k];
    }
  }
  double pr = 1, pi = 0;
  for (int i = 0; i < n; ++i) {
    double r2 = pr * re[i] - pi * im[i], i2 = pr * im[i] + pi * re[i];
    pr = r2, pi = i2;
  }
  EXPECT_NEAR(pr, det, 1e-8 * std::max(1.0, std::fabs(det)));
  EXPECT_NEAR(pi, 0.0, 1e-8 * std::max(1.0, std::fabs(det)));
}

TEST(CopyingScore, IsOneForIdentityAndMinusOneForNegation) {
  EXPECT_DOUBLE_EQ(copying_score_from_eigenvalues({1, 2, 3}, {0, 0, 0}), 1.0);
  EXPECT_DOUBLE_EQ(copying_score_from_eigenvalues({-1, -2}, {0, 0}), -1.0);
  EXPECT_DOUBLE_EQ(copying_score_from_eigenvalues({0, 0}, {1, -1}), 0.0);  // a rotation neither copies nor suppresses
}
