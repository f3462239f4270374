// Tests for research/steering.h and research/intervene.h: a steering is exactly "add coef * v
// to resid_pre" (checked against a hand-written hook and against a run started from the
// changed resid_pre), ActAdd's rows are the two prompts' difference, bad vectors are refused.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <unistd.h>

#include "research/intervene.h"
#include "research/steering.h"
#include "testing/model_fixtures.h"

using namespace headlab::research;
using namespace headlab::model;
using headlab::testing::load_fixture;

namespace {

std::vector<int> steer_ids(const Parameters& p, int T, int salt = 0) {
  std::vector<int> ids;
  for (int t = 0; t < T; t++) ids.push_back((5 * t + 1 + salt) % p.config.vocab_size);
  return ids;
}

std::vector<float> steer_vector(int C, float scale) {
  std::vector<float> v;
  for (int i = 0; i < C; i++) v.push_back(scale * std::sin(0.7f * float(i) + 0.3f));
  return v;
}

std::vector<float> logits_of(const Parameters& p, const std::vector<int>& ids, const ForwardOptions& opt) {
  ForwardOutput out;
  Workspace ws;
  EXPECT_TRUE(forward(p, ids, opt, out, ws));
  return out.logits;
}

}  // namespace

TEST(Steering, AZeroVectorChangesNothing) {
  Parameters p = load_fixture("families/llama", "model.safetensors");
  const auto ids = steer_ids(p, 6);
  Steering s{.layer = 1, .coef = 3.0f, .vector = std::vector<float>(std::size_t(p.config.n_embd), 0.0f)};
  ASSERT_TRUE(steering_check(p.config, s));
  auto hooks = steering_hooks(p.config, {&s, 1});
  ForwardOptions with;
  with.hooks = &hooks;
  EXPECT_EQ(logits_of(p, ids, with), logits_of(p, ids, ForwardOptions{}));
}

TEST(Steering, IsTheVectorAddedToResidPreByHandAndARunStartedThere) {
  for (const char* name : {"gpt2_tiny", "families/pythia", "families/gemma2"}) {
    SCOPED_TRACE(name);
    Parameters p = load_fixture(name, "model.safetensors");
    const int C = p.config.n_embd, T = 5, L = 1;
    const auto ids = steer_ids(p, T);
    Steering s{.layer = L, .coef = 2.5f, .vector = steer_vector(C, 0.4f)};
    auto hooks = steering_hooks(p.config, {&s, 1});
    ForwardOptions steered;
    steered.hooks = &hooks;
    const std::vector<float> got = logits_of(p, ids, steered);

    // by hand: a hook of our own adds 2.5 v to every row of blocks.1.hook_resid_pre
    ForwardHooks mine(p.config.n_layer);
    mine.want(HookPoint::resid_pre, L);
    std::vector<float> changed;  // (T, C) the changed resid_pre, kept for the second check
    mine.at = [&](HookPoint, int, const HookView& v) {
      for (int t = 0; t < T; t++)
        for (int i = 0; i < C; i++) v.at(t, i) += 2.5f * s.vector[std::size_t(i)];
      changed.resize(v.size());
      v.copy_to(changed.data());
    };
    ForwardOptions by_hand;
    by_hand.hooks = &mine;
    EXPECT_EQ(got, logits_of(p, ids, by_hand));

    // and the forward started at block 1 from the changed resid_pre
    ForwardOptions started;
    started.start_layer = L;
    started.start_resid = changed.data();
    EXPECT_EQ(got, logits_of(p, ids, started));
    EXPECT_NE(got, logits_of(p, ids, ForwardOptions{}));
  }
}

TEST(Steering, FromAPositionLeavesTheEarlierPositionsAsTheyWere) {
  Parameters p = load_fixture("gpt2_tiny", "model.safetensors");
  const int T = 6, V = p.config.vocab_size;
  const auto ids = steer_ids(p, T);
  Steering s{.layer = 0, .coef = 4.0f, .from = 3, .vector = steer_vector(p.config.n_embd, 1.0f)};
  auto hooks = steering_hooks(p.config, {&s, 1});
  ForwardOptions with;
  with.hooks = &hooks;
  const auto a = logits_of(p, ids, with), b = logits_of(p, ids, ForwardOptions{});
  for (int t = 0; t < T; t++) {
    const bool same = std::equal(a.begin() + t * V, a.begin() + (t + 1) * V, b.begin() + t * V);
    EXPECT_EQ(same, t < 3) << "position " << t;
  }
}

TEST(Steering, OneStartingPastTheLastPositionIsRefusedRatherThanRunAsIfItSteered) {
  Parameters p = load_fixture("gpt2_tiny", "model.safetensors");
  const auto ids = steer_ids(p, 6);
  Workspace ws;
  InterveneRequest rq;
  rq.steering.push_back({.layer = 0, .coef = 4.0f, .from = 6, .vector = steer_vector(p.config.n_embd, 1.0f)});
  auto past = intervene_run(p, nullptr, ids, rq, ws);
  ASSERT_FALSE(past);
  EXPECT_EQ(past.error().code, headlab::ErrorCode::invalid_argument);
  EXPECT_NE(past.error().message.find("starts at position 6, but the text has 6 tokens (positions 0 to 5)"),
            std::string::npos)
      << past.error().message;
  rq.steering[0].from = 4;  // within: position 4's prediction of token 5 is steered
  auto last = intervene_run(p, nullptr, ids, rq, ws);
  ASSERT_TRUE(last) << last.error().message;
  EXPECT_NE(last->intervened.loss, last->baseline.loss);
  EXPECT_FALSE(steering_reaches(rq.steering[0], 1).has_value());
}

TEST(Steering, ActAddIsThePromptsDifferenceAtTheShortersPositionsAddedRowByRow) {
  Parameters p = load_fixture("families/llama", "model.safetensors");
  const int C = p.config.n_embd, L = 1;
  const auto plus = steer_ids(p, 4, 2), minus = steer_ids(p, 6, 9), run = steer_ids(p, 7);
  Workspace ws;
  auto s = steering_from_prompts(p, plus, minus, L, 2.0f, ws);
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->rows, 4);
  ASSERT_EQ(s->vector.size(), std::size_t(4 * C));
  auto resid = [&](const std::vector<int>& ids) {
    ForwardHooks h(p.config.n_layer);
    h.want(HookPoint::resid_pre, L);
    std::vector<float> r;
    h.at = [&](HookPoint, int, const HookView& v) {
      r.resize(v.size());
      v.copy_to(r.data());
    };
    ForwardOptions o;
    o.hooks = &h;
    logits_of(p, ids, o);
    return r;
  };
  const auto rp = resid(plus), rm = resid(minus), rr = resid(run);
  for (int i = 0; i < 4 * C; i++) ASSERT_EQ(s->vector[std::size_t(i)], rp[std::size_t(i)] - rm[std::size_t(i)]) << i;
  // added at positions 0..3 of the run, positions 4..6 untouched
  std::vector<float> changed = rr;
  for (int i = 0; i < 4 * C; i++) changed[std::size_t(i)] += 2.0f * s->vector[std::size_t(i)];
  ForwardOptions started;
  started.start_layer = L;
  started.start_resid = changed.data();
  auto hooks = steering_hooks(p.config, {&*s, 1});
  ForwardOptions with;
  with.hooks = &hooks;
  EXPECT_EQ(logits_of(p, run, with), logits_of(p, run, started));
}

// A steering up to the bound on coef * v still gives a run of numbers: every logit finite,
// on a vector that swings from -bound to +bound (the norms square its deviations).
TEST(Steering, AddingUpToTheBoundKeepsEveryLogitFinite) {
  Parameters p = load_fixture("gpt2_tiny", "model.safetensors");
  const int C = p.config.n_embd;
  Steering s{.layer = 1, .coef = 1.0f, .vector = steer_vector(C, float(kMaxSteeringAdd))};
  ASSERT_TRUE(steering_check(p.config, s));
  ForwardHooks hooks = steering_hooks(p.config, {&s, 1});
  ForwardOptions opt;
  opt.hooks = &hooks;
  for (float x : logits_of(p, steer_ids(p, 6), opt)) ASSERT_TRUE(std::isfinite(x)) << x;
}

TEST(Steering, BadVectorsAndLayersAreRefusedByName) {
  Parameters p = load_fixture("gpt2_tiny", "model.safetensors");
  const int C = p.config.n_embd;
  auto refused = [&](Steering s, const char* says) {
    auto st = steering_check(p.config, s);
    ASSERT_FALSE(st) << says;
    EXPECT_NE(st.error().message.find(says), std::string::npos) << st.error().message;
  };
  std::vector<float> nan = steer_vector(C, 1.0f), inf = nan;
  nan[3] = NAN;
  inf[0] = INFINITY;
  refused({.layer = 0, .vector = nan}, "value 3 is NaN");
  refused({.layer = 0, .vector = inf}, "value 0 is infinite");
  refused({.layer = 0, .vector = steer_vector(C + 1, 1.0f)}, "n_embd");
  refused({.layer = 2, .vector = steer_vector(C, 1.0f)}, "0 to 1");
  refused({.layer = 0, .coef = NAN, .vector = steer_vector(C, 1.0f)}, "coefficient");
  refused({.layer = 0, .from = -1, .vector = steer_vector(C, 1.0f)}, "position");
  std::vector<float> huge = steer_vector(C, 1.0f);
  huge[5] = 1e20f;
  refused({.layer = 0, .vector = huge}, "value 5");
  refused({.layer = 0, .coef = 1e3f, .vector = steer_vector(C, 1e37f)}, "at most 1e+15");

  EXPECT_FALSE(steering_vector_parse_json("[1, 2]", C, "--steer"));
  EXPECT_FALSE(steering_vector_parse_json("{\"a\": 1}", C, "--steer"));
  EXPECT_FALSE(steering_vector_parse_json("[1, \"x\"]", C, "--steer"));
  EXPECT_FALSE(steering_vector_parse_json("not json", C, "--steer"));
  std::string big = "[1e39";
  for (int i = 1; i < C; i++) big += ", 0";
  auto overflow = steering_vector_parse_json(big + "]", C, "--steer");
  ASSERT_FALSE(overflow);
  EXPECT_NE(overflow.error().message.find("infinite"), std::string::npos);

  const std::string file = std::string(HEADLAB_BINARY_DIR) + "/tmp_steer_" + std::to_string(::getpid()) + ".f32";
  const std::vector<float> v = steer_vector(C, 1.0f);
  std::ofstream(file, std::ios::binary).write(reinterpret_cast<const char*>(v.data()), std::streamsize(4 * C));
  auto back = steering_vector_read(file, C);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back, v);
  auto wrong = steering_vector_read(file, C + 2);
  ASSERT_FALSE(wrong);
  EXPECT_NE(wrong.error().message.find("float32"), std::string::npos);
  std::remove(file.c_str());
  EXPECT_EQ(steering_vector_read(file, C).error().code, headlab::ErrorCode::not_found);
}

TEST(Intervene, NothingToChangeGivesTheBaselineTwiceAndAnAblationChangesTheLoss) {
  Parameters p = load_fixture("gpt2_tiny", "model.safetensors");
  const auto ids = steer_ids(p, 8);
  Workspace ws;
  auto same = intervene_run(p, nullptr, ids, InterveneRequest{}, ws);
  ASSERT_TRUE(same) << same.error().message;
  EXPECT_EQ(same->baseline.loss, same->intervened.loss);
  InterveneRequest rq;
  rq.interventions.ablate.push_back({1, 0, Ablation::zero});
  rq.steering.push_back({.layer = 1, .coef = 3.0f, .vector = steer_vector(p.config.n_embd, 1.0f)});
  auto changed = intervene_run(p, nullptr, ids, rq, ws);
  ASSERT_TRUE(changed) << changed.error().message;
  EXPECT_EQ(changed->baseline.loss, same->baseline.loss);
  EXPECT_NE(changed->intervened.loss, changed->baseline.loss);
  rq.steering[0].vector[0] = NAN;
  EXPECT_FALSE(intervene_run(p, nullptr, ids, rq, ws));
}
