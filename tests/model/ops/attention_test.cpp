// Tests for model/ops/attention.h.
#include "model/ops/attention.h"

#include <gtest/gtest.h>

#include <cmath>

#include "testing/gradcheck.h"

using headlab::model::attention_backward;
using headlab::model::attention_causal_scratch_size;
using headlab::model::attention_forward;
using headlab::model::attention_forward_causal;
using headlab::model::AttentionHeadHooks;
using headlab::testing::gradcheck;
using headlab::testing::random_vector;
using headlab::testing::weighted_sum;

TEST(AttentionForward, PatternRowsSumToOneAndHideTheFuture) {
  const int B = 1, T = 6, C = 8, NH = 2;
  auto inp = random_vector(B * T * 3 * C, 1);
  std::vector<float> out(B * T * C), preatt(B * NH * T * T), att(B * NH * T * T);
  attention_forward(out.data(), preatt.data(), att.data(), inp.data(), B, T, C, NH);
  for (int h = 0; h < NH; h++)
    for (int t = 0; t < T; t++) {
      double sum = 0;
      for (int t2 = 0; t2 < T; t2++) {
        float p = att[(h * T + t) * T + t2];
        if (t2 > t) {
          EXPECT_EQ(p, 0.0f);
        }
        sum += p;
      }
      EXPECT_NEAR(sum, 1.0, 1e-6);
    }
  // the first query sees only itself: z_0 = v_0
  for (int i = 0; i < C; i++) EXPECT_NEAR(out[i], inp[2 * C + i], 1e-6f);
}

TEST(AttentionBackward, MatchesFiniteDifferences) {
  const int B = 2, T = 5, C = 8, NH = 2;
  auto inp = random_vector(B * T * 3 * C, 1);
  auto dout = random_vector(B * T * C, 2);
  std::vector<float> out(B * T * C), preatt(B * NH * T * T), att(B * NH * T * T);
  auto loss = [&] {
    attention_forward(out.data(), preatt.data(), att.data(), inp.data(), B, T, C, NH);
    return weighted_sum(out.data(), dout.data(), out.size());
  };
  loss();
  std::vector<float> dinp(inp.size(), 0.0f), dpreatt(att.size()), datt(att.size());
  attention_backward(dinp.data(), dpreatt.data(), datt.data(), dout.data(), inp.data(), att.data(), B, T, C, NH);
  EXPECT_TRUE(gradcheck("attention dinp", loss, inp.data(), inp.size(), dinp.data()));
}

TEST(AttentionForwardCausal, MatchesTheTrainingKernel) {
  // T = 150 spans three query blocks of the causal kernel.
  const int T = 150, C = 48, NH = 4, HS = C / NH;
  auto inp = random_vector(T * 3 * C, 1);
  std::vector<float> out(T * C), preatt(NH * T * T), att(NH * T * T);
  attention_forward(out.data(), preatt.data(), att.data(), inp.data(), 1, T, C, NH);
  const std::size_t packed = std::size_t(T) * (T + 1) / 2;
  std::vector<float> fast(T * C), scores(NH * packed), pattern(NH * packed);
  std::vector<float> scratch(attention_causal_scratch_size(T));
  AttentionHeadHooks hooks;
  hooks.scores_out = scores.data();
  hooks.pattern_out = pattern.data();
  attention_forward_causal(fast.data(), inp.data(), T, C, NH, 1.0f / std::sqrt(float(C / NH)), hooks, scratch.data());
  float max_out = 0, max_p = 0, max_s = 0;
  for (int i = 0; i < T * C; i++) max_out = std::max(max_out, std::fabs(out[i] - fast[i]));
  for (int h = 0; h < NH; h++)
    for (int t = 0; t < T; t++)
      for (int t2 = 0; t2 <= t; t2++) {
        std::size_t p = h * packed + std::size_t(t) * (t + 1) / 2 + t2;
        max_p = std::max(max_p, std::fabs(att[(h * T + t) * T + t2] - pattern[p]));
        max_s = std::max(max_s, std::fabs(preatt[(h * T + t) * T + t2] - scores[p]));
      }
  std::printf("causal kernel vs training kernel: max diff out %.3g pattern %.3g scores %.3g\n", max_out, max_p,
              max_s);
  EXPECT_LT(max_out, 1e-5f);
  EXPECT_LT(max_p, 1e-6f);
  EXPECT_LT(max_s, 1e-5f);
  (void)HS;
}

TEST(AttentionForwardCausal, BlockedKeyGetsNoAttention) {
  const int T = 5, C = 4, NH = 2;
  auto inp = random_vector(T * 3 * C, 1);
  const std::size_t packed = std::size_t(T) * (T + 1) / 2;
  std::vector<float> out(T * C), pattern(NH * packed), scratch(attention_causal_scratch_size(T));
  unsigned char block0[T] = {0, 0, 1, 0, 0};  // head 0 may not look at key 2
  const unsigned char* blocks[NH] = {block0, nullptr};
  AttentionHeadHooks hooks;
  hooks.block_key = blocks;
  hooks.pattern_out = pattern.data();
  attention_forward_causal(out.data(), inp.data(), T, C, NH, 1.0f / std::sqrt(float(C / NH)), hooks, scratch.data());
  for (int t = 2; t < T; t++) {
    EXPECT_EQ(pattern[std::size_t(t) * (t + 1) / 2 + 2], 0.0f) << "query " << t;
    EXPECT_GT(pattern[packed + std::size_t(t) * (t + 1) / 2 + 2], 0.0f) << "head 1 untouched, query " << t;
  }
}

TEST(AttentionForwardCausal, ReplacedPatternIsUsedAsGiven) {
  const int T = 4, C = 4, NH = 1;
  auto inp = random_vector(T * 3 * C, 1);
  std::vector<float> uniform(T * T, 0.0f);
  for (int t = 0; t < T; t++)
    for (int t2 = 0; t2 <= t; t2++) uniform[t * T + t2] = 1.0f / (t + 1);
  const float* replace[1] = {uniform.data()};
  std::vector<float> out(T * C), scratch(attention_causal_scratch_size(T));
  AttentionHeadHooks hooks;
  hooks.replace_pattern = replace;
  attention_forward_causal(out.data(), inp.data(), T, C, NH, 1.0f / std::sqrt(float(C / NH)), hooks, scratch.data());
  // last query: the mean of all values
  for (int i = 0; i < C; i++) {
    float mean = 0;
    for (int t2 = 0; t2 < T; t2++) mean += inp[t2 * 3 * C + 2 * C + i] / T;
    EXPECT_NEAR(out[(T - 1) * C + i], mean, 1e-6f);
  }
}

// The training step's per-head kernels (sgemm by blocks of 64 queries) against the loops,
// over two blocks of queries and two sequences.
TEST(AttentionHeadKernels, ForwardAndBackwardMatchTheLoopsHeadByHead) {
  const int B = 2, T = 70, C = 16, NH = 2;
  const std::size_t tt = std::size_t(T) * T;
  auto inp = random_vector(B * T * 3 * C, 5);
  auto dout = random_vector(B * T * C, 6);
  std::vector<float> out_ref(B * T * C), preatt_ref(B * NH * tt), att_ref(B * NH * tt);
  attention_forward(out_ref.data(), preatt_ref.data(), att_ref.data(), inp.data(), B, T, C, NH);
  std::vector<float> dinp_ref(B * T * 3 * C, 0.0f), dpreatt_ref(B * NH * tt), datt_ref(B * NH * tt);
  attention_backward(dinp_ref.data(), dpreatt_ref.data(), datt_ref.data(), dout.data(), inp.data(), att_ref.data(),
                     B, T, C, NH);

  std::vector<float> out(B * T * C), att(B * NH * tt, 7.0f);
  std::vector<float> dinp(B * T * 3 * C, 0.0f), scratch(headlab::model::attention_causal_scratch_size(T), 7.0f);
  for (int b = 0; b < B; b++)
    for (int h = 0; h < NH; h++) {
      const std::size_t head = (std::size_t(b) * NH + h) * tt;
      headlab::model::attention_head_forward(out.data() + b * T * C, att.data() + head, inp.data() + b * T * 3 * C, T,
                                             C, NH, h);
      headlab::model::attention_head_backward(dinp.data() + b * T * 3 * C, dout.data() + b * T * C,
                                              inp.data() + b * T * 3 * C, att.data() + head, T, C, NH, h,
                                              scratch.data());
    }
  auto expect_close = [](const std::vector<float>& a, const std::vector<float>& b, const char* what) {
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t i = 0; i < a.size(); i++) ASSERT_NEAR(a[i], b[i], 1e-5f + 1e-4f * std::fabs(b[i])) << what << " [" << i << "]";
  };
  expect_close(out, out_ref, "z");
  expect_close(dinp, dinp_ref, "dqkv");
  // the pattern: its causal half (the kernel never writes the part right of its block)
  for (int bh = 0; bh < B * NH; bh++)
    for (int t = 0; t < T; t++)
      for (int t2 = 0; t2 <= t; t2++) {
        const std::size_t i = bh * tt + std::size_t(t) * T + t2;
        ASSERT_NEAR(att[i], att_ref[i], 1e-5f + 1e-4f * std::fabs(att_ref[i])) << "pattern [" << bh << "," << t << "," << t2 << "]";
      }
}

// The inference attention's backward, through the scale, Gemma 2's soft-cap and a sliding
// window, against central differences of attention_forward_causal.
TEST(AttentionBackwardCausal, MatchesFiniteDifferencesWithScaleSoftcapAndWindow) {
  const int T = 5, C = 8, NH = 2;
  struct Case { float scale; int window; float softcap; const char* name; };
  for (const Case k : {Case{0.5f, 0, 0.0f, "attention causal dinp"}, Case{0.3f, 3, 2.0f, "attention window+softcap dinp"}}) {
    std::vector<float> inp = random_vector(T * 3 * C, 61), dout = random_vector(T * C, 62), out(T * C);
    std::vector<float> scratch(std::size_t(attention_causal_scratch_size(T)));
    AttentionHeadHooks hooks;
    hooks.window = k.window;
    hooks.softcap = k.softcap;
    auto loss = [&] {
      attention_forward_causal(out.data(), inp.data(), T, C, NH, k.scale, hooks, scratch.data());
      return weighted_sum(out.data(), dout.data(), out.size());
    };
    std::vector<float> dinp(T * 3 * C, 0.0f);
    headlab::model::attention_backward_causal(dinp.data(), dout.data(), inp.data(), T, C, NH, k.scale, k.window, k.softcap);
    EXPECT_TRUE(gradcheck(k.name, loss, inp.data(), inp.size(), dinp.data()));
  }
}
