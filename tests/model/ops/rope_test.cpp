// Tests for model/ops/rope.h: both pairings against a plain loop, partial rotary, and the
// property rotary exists for (scores depend on the distance between positions only).
#include "model/ops/rope.h"

#include <gtest/gtest.h>

#include <cmath>

#include "testing/gradcheck.h"

using headlab::model::rope_forward;
using headlab::testing::random_vector;

namespace {

// The rotation written out: pair (a, b) of channel pair i at position t turns by t * theta^(-2i/d).
std::vector<double> rope_plain(const std::vector<float>& x, int T, int NH, int HS, int d, bool interleaved, double theta,
                               double scale) {
  std::vector<double> out(x.begin(), x.end());
  for (int t = 0; t < T; t++)
    for (int h = 0; h < NH; h++)
      for (int i = 0; i < d / 2; i++) {
        const int ia = interleaved ? 2 * i : i, ib = interleaved ? 2 * i + 1 : i + d / 2;
        const double angle = t / scale * std::pow(theta, -2.0 * i / d);
        const double a = x[(t * NH + h) * HS + ia], b = x[(t * NH + h) * HS + ib];
        out[(t * NH + h) * HS + ia] = a * std::cos(angle) - b * std::sin(angle);
        out[(t * NH + h) * HS + ib] = b * std::cos(angle) + a * std::sin(angle);
      }
  return out;
}

}  // namespace

TEST(RopeForward, MatchesAPlainLoopForBothPairingsFullAndPartial) {
  const int T = 33, NH = 3, HS = 16;
  for (bool interleaved : {false, true})
    for (int d : {16, 4}) {  // full, and a quarter of the head as Pythia
      for (double scale : {1.0, 4.0}) {
        auto x = random_vector(T * NH * HS, 7);
        auto want = rope_plain(x, T, NH, HS, d, interleaved, 10000.0, scale);
        rope_forward(x.data(), T, NH, HS, NH * HS, d, interleaved, 10000.0f, float(scale));
        double worst = 0;
        for (std::size_t i = 0; i < x.size(); i++) worst = std::max(worst, std::fabs(x[i] - want[i]));
        EXPECT_LT(worst, 1e-5) << "interleaved " << interleaved << " d " << d << " scale " << scale;
      }
    }
}

TEST(RopeForward, LeavesTheChannelsPastTheRotaryDimensionAlone) {
  const int T = 5, HS = 8;
  auto x = random_vector(T * HS, 9);
  auto before = x;
  rope_forward(x.data(), T, 1, HS, HS, 4, false, 10000.0f, 1.0f);
  for (int t = 0; t < T; t++)
    for (int i = 4; i < HS; i++) EXPECT_EQ(x[t * HS + i], before[t * HS + i]);
}

TEST(RopeForward, MakesTheDotProductDependOnTheDistanceOnly) {
  // the same q at position 3 and k at position 1 give the same q.k as at 10 and 8
  const int HS = 16, T = 11;
  auto q = random_vector(HS, 1), k = random_vector(HS, 2);
  std::vector<float> qs(T * HS), ks(T * HS);
  for (int t = 0; t < T; t++)
    for (int i = 0; i < HS; i++) qs[t * HS + i] = q[i], ks[t * HS + i] = k[i];
  rope_forward(qs.data(), T, 1, HS, HS, HS, false, 10000.0f, 1.0f);
  rope_forward(ks.data(), T, 1, HS, HS, HS, false, 10000.0f, 1.0f);
  auto dot = [&](int tq, int tk) {
    double s = 0;
    for (int i = 0; i < HS; i++) s += double(qs[tq * HS + i]) * ks[tk * HS + i];
    return s;
  };
  EXPECT_NEAR(dot(3, 1), dot(10, 8), 1e-5);
  EXPECT_NEAR(dot(5, 5), dot(0, 0), 1e-5);
}

// The rotary's backward (the rotation by minus the angle) against central differences, for
// NeoX halves and GPT-J pairs, partial rotary (4 of 6 channels) and a linear scale.
TEST(RopeBackward, MatchesFiniteDifferencesForHalvesPairsAndPartialRotary) {
  const int T = 4, NH = 2, HS = 6, stride = 14, rd = 4;
  const std::vector<float> inv_freq = headlab::model::rope_frequencies(rd, 10000.0f);
  for (bool interleaved : {false, true}) {
    std::vector<float> x = random_vector(T * stride, 41), dout = random_vector(T * stride, 42), y(T * stride);
    auto loss = [&] {
      y = x;
      headlab::model::rope_forward_frequencies(y.data(), T, NH, HS, stride, rd, interleaved, inv_freq.data(), 2.0f);
      return headlab::testing::weighted_sum(y.data(), dout.data(), y.size());
    };
    std::vector<float> dx = dout;
    headlab::model::rope_backward_frequencies(dx.data(), T, NH, HS, stride, rd, interleaved, inv_freq.data(), 2.0f);
    EXPECT_TRUE(headlab::testing::gradcheck(interleaved ? "rope pairs dinp" : "rope halves dinp", loss, x.data(), x.size(),
                                            dx.data()));
  }
}
