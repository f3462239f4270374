// Tests for the logit lens (research/lens.h): its last entry is the model's own output, its
// first entry matches a hand computation, and bad requests are refused by name.
#include <gtest/gtest.h>

#include <cmath>

#include "formats/model_files.h"
#include "model/forward.h"
#include "model/hooks.h"
#include "model/next_token.h"
#include "research/lens.h"
#include "research/text_measures.h"
#include "testing/model_fixtures.h"

using namespace headlab;
using namespace headlab::model;
using headlab::testing::load_fixture;

namespace {

const char* kLensModels[] = {"gpt2_tiny",       "families/pythia", "families/llama",  "families/mistral_window",
                         "families/qwen2", "families/qwen3",  "families/gemma2", "families/gemma3"};

std::vector<int> lens_ids(const Parameters& p, int T) {
  std::vector<int> ids(std::size_t(T), 0);
  for (int t = 0; t < T; t++) ids[std::size_t(t)] = (7 * t + 3) % p.config.vocab_size;
  return ids;
}

}  // namespace

TEST(LogitLens, TheLastEntryIsTheModelsOwnDistributionOnEveryFamily) {
  for (const char* name : kLensModels) {
    SCOPED_TRACE(name);
    Parameters p = load_fixture(name, "model.safetensors");
    const std::vector<int> ids = lens_ids(p, 6);
    Workspace ws;
    research::LensRequest rq;
    rq.top_k = 3;
    rq.answers = {5};
    auto r = research::logit_lens(p, ids, rq, ws);
    ASSERT_TRUE(r) << r.error().message;
    ASSERT_EQ(r->entries, p.config.n_layer + 1);
    EXPECT_EQ(r->labels.front(), "0_pre");
    EXPECT_EQ(r->labels.back(), "final_post");
    ForwardOptions opt;
    ForwardOutput out;
    ASSERT_TRUE(forward(p, ids, opt, out, ws));
    const int V = p.config.vocab_size;
    for (int t = 0; t < out.T; t++) {
      const research::LensCell& c = r->cell(r->entries - 1, t);
      EXPECT_NEAR(c.kl_final, 0.0f, 1e-6);
      const std::vector<TokenChance> best = top_next(out.logits.data() + std::size_t(t) * V, V, 3);
      ASSERT_EQ(c.top.size(), 3u);
      for (int i = 0; i < 3; i++) {
        EXPECT_EQ(c.top[i].id, best[i].id);
        EXPECT_NEAR(c.top[i].prob, best[i].prob, 1e-6);
      }
      const double lp = -token_loss(out.logits.data() + std::size_t(t) * V, V, 5);
      EXPECT_NEAR(c.answers[0].logprob, lp, 1e-5);
    }
    // the earlier entries are distributions too: KL >= 0, entropy in [0, log V]
    for (int e = 0; e < r->entries; e++)
      for (int t = 0; t < r->T; t++) {
        EXPECT_GE(r->cell(e, t).kl_final, 0.0f);
        EXPECT_GE(r->cell(e, t).entropy, -1e-6f);
        EXPECT_LE(r->cell(e, t).entropy, std::log(double(V)) + 1e-4);
      }
  }
}

// Entry 0 of gpt2_tiny by hand: x = wte[id] + wpe[t], LayerNorm with ln_f's weights, x . wte
// (tied), softmax; its probability of token 5, its entropy and its rank.
TEST(LogitLens, TheFirstEntryIsTheEmbeddingThroughLnFinalComputedByHand) {
  Parameters p = load_fixture("gpt2_tiny", "model.safetensors", {.rows = true});
  const ModelConfig& c = p.config;
  const int C = c.n_embd, V = c.vocab_size;
  const std::vector<int> ids = {3, 10, 17, 24};
  Workspace ws;
  research::LensRequest rq;
  rq.top_k = 1;
  rq.answers = {5};
  auto r = research::logit_lens(p, ids, rq, ws);
  ASSERT_TRUE(r) << r.error().message;
  for (int t = 0; t < 4; t++) {
    std::vector<double> x(C);
    double mean = 0, var = 0;
    for (int i = 0; i < C; i++) x[i] = double(p.t.wte[ids[t] * C + i]) + p.t.wpe[t * C + i], mean += x[i] / C;
    for (int i = 0; i < C; i++) var += (x[i] - mean) * (x[i] - mean) / C;
    std::vector<double> logits(V);
    for (int v = 0; v < V; v++) {
      double s = 0;
      for (int i = 0; i < C; i++)
        s += ((x[i] - mean) / std::sqrt(var + c.layer_norm_eps) * p.t.lnfw[i] + p.t.lnfb[i]) * p.t.wte[v * C + i];
      logits[v] = s;
    }
    double mx = logits[0], z = 0;
    for (double l : logits) mx = std::max(mx, l);
    for (double l : logits) z += std::exp(l - mx);
    double entropy = 0;
    int rank = 0;
    for (int v = 0; v < V; v++) {
      const double pv = std::exp(logits[v] - mx) / z;
      entropy -= pv * std::log(pv);
      if (logits[v] > logits[5]) rank++;
    }
    const research::LensCell& cell = r->cell(0, t);
    EXPECT_NEAR(cell.answers[0].prob, std::exp(logits[5] - mx) / z, 1e-5);
    EXPECT_EQ(cell.answers[0].rank, rank);
    EXPECT_NEAR(cell.entropy, entropy, 1e-4);
  }
}

TEST(LogitLens, TheBuiltInModelsFinalEntryPredictsTheRepeatAndTheFirstDoesNot) {
  auto p = model_load(std::string(HEADLAB_SOURCE_DIR) + "/models/headlab-tiny");
  ASSERT_TRUE(p) << p.error().message;
  // a random sequence twice: the induction head completes the second copy
  std::vector<int> ids = {4095};
  const std::vector<int> seq = {812, 1999, 77, 3021, 540, 2210, 1403, 96};
  for (int rep = 0; rep < 2; rep++) ids.insert(ids.end(), seq.begin(), seq.end());
  ids.pop_back();  // the model should now predict seq.back()
  Workspace ws;
  research::LensRequest rq;
  rq.answers = {seq.back()};
  auto r = research::logit_lens(*p, ids, rq, ws);
  ASSERT_TRUE(r) << r.error().message;
  const int last = r->T - 1;
  EXPECT_EQ(r->cell(r->entries - 1, last).answers[0].rank, 0);
  EXPECT_GT(r->cell(0, last).answers[0].rank, 10);
  EXPECT_GT(r->cell(0, last).kl_final, r->cell(r->entries - 1, last).kl_final + 1.0f);
}

TEST(LogitLens, BadRequestsAreRefusedByName) {
  Parameters p = load_fixture("gpt2_tiny", "model.safetensors");
  Workspace ws;
  research::LensRequest rq;
  rq.answers = {64};
  auto r = research::logit_lens(p, std::vector<int>{1, 2}, rq, ws);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("answer token 64 is outside the vocabulary"), std::string::npos);
  rq.answers = {};
  rq.top_k = 1001;
  r = research::logit_lens(p, std::vector<int>{1, 2}, rq, ws);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("top_k"), std::string::npos);
  rq.top_k = 5;
  r = research::logit_lens(p, std::vector<int>{}, rq, ws);
  ASSERT_FALSE(r);
  r = research::logit_lens(p, std::vector<int>{1, 99}, rq, ws);
  ASSERT_FALSE(r);
}

TEST(LogitLens, AnInputOverTheWorkLimitIsRefusedWithItsCostAndHowManyTokensFit) {
  auto p = model_load(std::string(HEADLAB_SOURCE_DIR) + "/models/headlab-tiny");
  ASSERT_TRUE(p) << p.error().message;
  research::LensTextRequest rq;
  rq.prompt.ids = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  rq.max_work = 1e7;  // (L + 1) C V = 3 * 128 * 4096 = 1.57e6 per token: 6 fit
  Workspace ws;
  auto r = research::logit_lens_text(*p, nullptr, rq, ws);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::too_long);
  EXPECT_NE(r.error().message.find("the logit lens of 10 tokens costs 1.6e+07"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("send at most 6 tokens"), std::string::npos) << r.error().message;
  rq.prompt.ids.resize(6);
  EXPECT_TRUE(research::logit_lens_text(*p, nullptr, rq, ws));
}

// TL's incl_mid: each block's resid_mid after its resid_pre, read through the same last step.
TEST(LogitLens, WithMidEachBlocksResidMidFollowsItsResidPre) {
  Parameters p = load_fixture("gpt2_tiny", "model.safetensors");
  const std::vector<int> ids = {3, 10, 17, 24};
  Workspace ws;
  research::LensRequest rq;
  rq.top_k = 1;
  rq.answers = {5};
  auto plain = research::logit_lens(p, ids, rq, ws);
  rq.incl_mid = true;
  auto mid = research::logit_lens(p, ids, rq, ws);
  ASSERT_TRUE(plain && mid);
  EXPECT_EQ(mid->labels, (std::vector<std::string>{"0_pre", "0_mid", "1_pre", "1_mid", "final_post"}));
  for (int t = 0; t < 4; t++) {  // the pre entries and the final one are the plain lens's
    EXPECT_EQ(mid->cell(0, t).entropy, plain->cell(0, t).entropy);
    EXPECT_EQ(mid->cell(2, t).entropy, plain->cell(1, t).entropy);
    EXPECT_EQ(mid->cell(4, t).entropy, plain->cell(2, t).entropy);
  }
  // 0_mid = resid_pre + attn_out of block 0: its lens by hand through the forward's last step
  ForwardHooks hooks(p.config.n_layer);
  hooks.want(HookPoint::resid_mid, 0);
  std::vector<float> resid_mid;
  hooks.at = [&](HookPoint, int, const HookView& v) {
    resid_mid.resize(v.size());
    v.copy_to(resid_mid.data());
  };
  ForwardOptions opt;
  opt.hooks = &hooks;
  ForwardOutput out;
  ASSERT_TRUE(forward(p, ids, opt, out, ws));
  opt = {};
  opt.start_layer = p.config.n_layer;
  opt.start_resid = resid_mid.data();
  ASSERT_TRUE(forward(p, ids, opt, out, ws));
  for (int t = 0; t < 4; t++)
    EXPECT_NEAR(mid->cell(1, t).answers[0].logprob, -token_loss(out.logits.data() + std::size_t(t) * 64, 64, 5), 1e-5);
  // a model without resid_mid says so
  Parameters tiny_attn = load_fixture("attn_only", "model.safetensors");
  auto refused = research::logit_lens(tiny_attn, ids, rq, ws);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("no resid_mid"), std::string::npos);
}
