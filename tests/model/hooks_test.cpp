// Tests for the forward's hook points (model/hooks.h): TransformerLens's names, the views'
// identities on every family, writes that change the run, start_layer and logit_tokens.
// (The values against the PyTorch reference: tests/research/.)
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>

#include "model/forward.h"
#include "model/hooks.h"
#include "testing/model_fixtures.h"

using namespace headlab::model;
using headlab::testing::load_fixture;

namespace {

const char* kModels[] = {"gpt2_tiny",       "families/pythia", "families/llama",  "families/mistral_window",
                         "families/qwen2", "families/qwen3",  "families/gemma2", "families/gemma3"};

std::vector<int> ids_for(const Parameters& p, int T) {
  std::vector<int> ids(std::size_t(T), 0);
  for (int t = 0; t < T; t++) ids[std::size_t(t)] = (7 * t + 3) % p.config.vocab_size;
  return ids;
}

// Every hook of the model, kept densely under its TransformerLens name.
using Cache = std::map<std::string, std::vector<float>>;
Cache run_with_cache(const Parameters& p, const std::vector<int>& ids, ForwardOutput& out) {
  ForwardHooks hooks(p.config.n_layer);
  for (const NamedHook& h : model_hooks(p.config)) hooks.want(h.point, h.layer);
  Cache cache;
  hooks.at = [&](HookPoint pt, int layer, const HookView& v) {
    std::vector<float>& dst = cache[hook_name(pt, layer)];
    dst.resize(v.size());
    v.copy_to(dst.data());
  };
  ForwardOptions opt;
  opt.hooks = &hooks;
  Workspace ws;
  EXPECT_TRUE(forward(p, ids, opt, out, ws));
  return cache;
}

double max_abs(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double m = 0;
  for (std::size_t i = 0; i < a.size() && i < b.size(); i++) m = std::max(m, std::fabs(double(a[i]) - b[i]));
  return m;
}

}  // namespace

TEST(HookNames, EveryPointOfEveryModelHasATransformerLensNameThatParsesBack) {
  for (const char* name : kModels) {
    Parameters p = load_fixture(name, "model.safetensors");
    for (const NamedHook& h : model_hooks(p.config)) {
      std::string n = hook_name(h.point, h.layer);
      auto back = parse_hook_name(n);
      ASSERT_TRUE(back.has_value()) << n;
      EXPECT_EQ(back->point, h.point) << n;
      EXPECT_EQ(back->layer, h.layer) << n;
    }
  }
  EXPECT_EQ(hook_name(HookPoint::pattern, 3), "blocks.3.attn.hook_pattern");
  EXPECT_EQ(hook_name(HookPoint::ln_final_scale, -1), "ln_final.hook_scale");
}

TEST(HookNames, JunkIsNotAName) {
  for (const char* junk : {"", "blocks.", "blocks.x.hook_resid_pre", "blocks.-1.hook_resid_pre", "blocks.03.hook_resid_pre",
                           "blocks.1.hook_embed", "hook_resid_pre", "blocks.1.attn.hook_nothing", "blocks.1",
                           "blocks.99999999999999999999.hook_resid_pre", "Blocks.1.hook_resid_pre"})
    EXPECT_FALSE(parse_hook_name(junk).has_value()) << junk;
}

TEST(HookPoints, AModelHasTheNamesTransformerLensGivesItsFamily) {
  Parameters neox = load_fixture("families/pythia", "model.safetensors");  // parallel block, rotary
  EXPECT_FALSE(hook_exists(neox.config, HookPoint::resid_mid));
  EXPECT_FALSE(hook_exists(neox.config, HookPoint::pos_embed));
  EXPECT_TRUE(hook_exists(neox.config, HookPoint::rot_q));
  Parameters gpt2 = load_fixture("gpt2_tiny", "model.safetensors");
  EXPECT_TRUE(hook_exists(gpt2.config, HookPoint::pos_embed));
  EXPECT_FALSE(hook_exists(gpt2.config, HookPoint::rot_k));
  EXPECT_FALSE(hook_exists(gpt2.config, HookPoint::mlp_pre_linear));
  Parameters llama = load_fixture("families/llama", "model.safetensors");
  EXPECT_TRUE(hook_exists(llama.config, HookPoint::mlp_pre_linear));
  EXPECT_EQ(hook_shape(llama.config, HookPoint::k, 5), (std::vector<int>{5, 2, 16}));  // the KV heads, as TL
  Parameters gemma = load_fixture("families/gemma2", "model.safetensors");
  EXPECT_TRUE(hook_exists(gemma.config, HookPoint::ln2_post_scale));
}

TEST(Hooks, LookingChangesNothing) {
  for (const char* name : kModels) {
    Parameters p = load_fixture(name, "model.safetensors");
    auto ids = ids_for(p, 12);
    ForwardOutput plain, hooked;
    Workspace ws;
    ASSERT_TRUE(forward(p, ids, {}, plain, ws));
    run_with_cache(p, ids, hooked);
    EXPECT_EQ(plain.logits, hooked.logits) << name;  // bit for bit
  }
}

TEST(Hooks, TheCacheAddsUpAsTheBlockDoes) {
  for (const char* name : kModels) {
    Parameters p = load_fixture(name, "model.safetensors");
    const ModelConfig& c = p.config;
    auto ids = ids_for(p, 12);
    ForwardOutput out;
    Cache cache = run_with_cache(p, ids, out);
    const int T = 12, C = c.n_embd, NH = c.n_head;
    for (int l = 0; l < c.n_layer; l++) {
      auto at = [&](const char* s) { return cache.at("blocks." + std::to_string(l) + "." + s); };
      std::vector<float> sum = at("hook_resid_pre");
      for (std::size_t i = 0; i < sum.size(); i++) sum[i] += at("hook_attn_out")[i];
      if (hook_exists(c, HookPoint::resid_mid)) {
        EXPECT_LT(max_abs(sum, at("hook_resid_mid")), 1e-5) << name << " layer " << l;
      }
      if (c.mlp)
        for (std::size_t i = 0; i < sum.size(); i++) sum[i] += at("hook_mlp_out")[i];
      EXPECT_LT(max_abs(sum, at("hook_resid_post")), 1e-4) << name << " layer " << l;
      if (l + 1 < c.n_layer) {
        EXPECT_EQ(at("hook_resid_post"), cache.at("blocks." + std::to_string(l + 1) + ".hook_resid_pre"));
      }
      // the heads' results add up to the attention output (its bias aside), before Gemma's norm
      if (!c.sandwich_norm) {
        std::vector<float> heads(std::size_t(T) * C, 0.0f);
        const auto& result = at("attn.hook_result");  // (T, NH, C)
        for (int t = 0; t < T; t++)
          for (int h = 0; h < NH; h++)
            for (int i = 0; i < C; i++)
              heads[std::size_t(t) * C + i] += result[(std::size_t(t) * NH + h) * C + i];
        std::vector<float> out_no_bias = at("hook_attn_out");
        if (c.attn_out_bias) {
          const float* bias = p.t.attprojb + std::size_t(l) * C;  // b_O
          for (int t = 0; t < T; t++)
            for (int i = 0; i < C; i++) out_no_bias[std::size_t(t) * C + i] -= bias[i];
        }
        EXPECT_LT(max_abs(heads, out_no_bias), 1e-4) << name << " layer " << l;
      }
      // every pattern row sums to 1 and is 0 where the scores are -inf
      const auto& pattern = at("attn.hook_pattern");
      const auto& scores = at("attn.hook_attn_scores");
      for (int h = 0; h < NH; h++)
        for (int t = 0; t < T; t++) {
          double s = 0;
          for (int t2 = 0; t2 < T; t2++) {
            std::size_t i = (std::size_t(h) * T + t) * T + t2;
            s += pattern[i];
            if (std::isinf(scores[i])) {
              EXPECT_EQ(pattern[i], 0.0f);
            }
            if (t2 > t) {
              EXPECT_TRUE(std::isinf(scores[i]) && scores[i] < 0);
            }
          }
          EXPECT_NEAR(s, 1.0, 1e-5);
        }
      // ln1's output is its input over its scale, times the weight (and the bias)
      const auto& scale = at("ln1.hook_scale");
      for (float v : scale) EXPECT_GT(v, 0.0f);
    }
    EXPECT_EQ(cache.count("ln_final.hook_normalized"), 1u);
  }
}

TEST(Hooks, AWriteChangesTheRestOfTheRunAsTheSameChangeByHandWould) {
  // Zeroing head 2's z in block 1 through the hook equals the engine's own ablation.
  for (const char* name : kModels) {
    Parameters p = load_fixture(name, "model.safetensors");
    if (p.config.n_head < 3) continue;
    auto ids = ids_for(p, 10);
    ForwardHooks hooks(p.config.n_layer);
    hooks.want(HookPoint::z, 1);
    hooks.at = [&](HookPoint, int, const HookView& v) {
      for (int t = 0; t < v.shape[0]; t++)
        for (int i = 0; i < v.shape[2]; i++) v.at(t, 2, i) = 0.0f;
    };
    ForwardOptions by_hook, by_ablation;
    by_hook.hooks = &hooks;
    by_ablation.interventions.ablate.push_back({1, 2, Ablation::zero});
    ForwardOutput a, b;
    Workspace ws;
    ASSERT_TRUE(forward(p, ids, by_hook, a, ws));
    ASSERT_TRUE(forward(p, ids, by_ablation, b, ws));
    EXPECT_EQ(a.logits, b.logits) << name;
  }
}

TEST(Hooks, APatternWrittenByAHookIsTheOneTheHeadUses) {
  // Writing the uniform pattern into head 1 of block 0 equals replacing it by the engine's uniform one.
  for (const char* name : kModels) {
    Parameters p = load_fixture(name, "model.safetensors");
    auto ids = ids_for(p, 9);
    ForwardHooks hooks(p.config.n_layer);
    hooks.want(HookPoint::pattern, 0);
    hooks.at = [&](HookPoint, int, const HookView& v) {
      const int T = v.shape[1];
      for (int t = 0; t < T; t++)
        for (int t2 = 0; t2 < T; t2++) v.at(1, t, t2) = t2 <= t ? 1.0f / (t + 1) : 0.0f;
    };
    ForwardOptions by_hook, by_replace;
    by_hook.hooks = &hooks;
    by_replace.interventions.replace.push_back({0, 1, PatternReplacementKind::uniform, {}});
    ForwardOutput a, b, plain;
    Workspace ws;
    ASSERT_TRUE(forward(p, ids, by_hook, a, ws));
    ASSERT_TRUE(forward(p, ids, by_replace, b, ws));
    ASSERT_TRUE(forward(p, ids, {}, plain, ws));
    EXPECT_EQ(a.logits, b.logits) << name;
    EXPECT_NE(a.logits, plain.logits) << name;
  }
}

TEST(Hooks, PatchingEveryPositionOfAResidualGivesTheOtherRun) {
  for (const char* name : kModels) {
    Parameters p = load_fixture(name, "model.safetensors");
    auto clean = ids_for(p, 8), corrupted = clean;
    corrupted[3] = (corrupted[3] + 5) % p.config.vocab_size;
    const int l = p.config.n_layer - 1;
    // the clean resid_pre of the last block
    std::vector<float> saved;
    ForwardHooks save(p.config.n_layer);
    save.want(HookPoint::resid_pre, l);
    save.at = [&](HookPoint, int, const HookView& v) {
      saved.resize(v.size());
      v.copy_to(saved.data());
    };
    ForwardOptions o1;
    o1.hooks = &save;
    ForwardOutput clean_out, patched, started;
    Workspace ws;
    ASSERT_TRUE(forward(p, clean, o1, clean_out, ws));
    ForwardHooks patch(p.config.n_layer);
    patch.want(HookPoint::resid_pre, l);
    patch.at = [&](HookPoint, int, const HookView& v) { v.copy_from(saved.data()); };
    ForwardOptions o2;
    o2.hooks = &patch;
    ASSERT_TRUE(forward(p, corrupted, o2, patched, ws));
    EXPECT_EQ(patched.logits, clean_out.logits) << name;
    // and starting at that block from the saved residual is the same run
    ForwardOptions o3;
    o3.start_layer = l;
    o3.start_resid = saved.data();
    ASSERT_TRUE(forward(p, corrupted, o3, started, ws));
    EXPECT_EQ(started.logits, clean_out.logits) << name;
  }
}

TEST(Forward, LogitTokensAreTheFullLogitsColumns) {
  for (const char* name : kModels) {
    Parameters p = load_fixture(name, "model.safetensors");
    auto ids = ids_for(p, 7);
    ForwardOutput full, some;
    Workspace ws;
    ASSERT_TRUE(forward(p, ids, {}, full, ws));
    ForwardOptions o;
    o.logit_tokens = {5, 0, p.config.vocab_size - 1};
    ASSERT_TRUE(forward(p, ids, o, some, ws));
    ASSERT_EQ(some.logits.size(), 7u * 3);
    for (int t = 0; t < 7; t++)
      for (int j = 0; j < 3; j++)
        EXPECT_NEAR(some.logits[std::size_t(t) * 3 + j],
                    full.logits[std::size_t(t) * full.V + std::size_t(o.logit_tokens[std::size_t(j)])], 1e-4)
            << name;
  }
}

TEST(Forward, BadStartsAndLogitTokensAreRefusedByName) {
  Parameters p = load_fixture("gpt2_tiny", "model.safetensors");
  auto ids = ids_for(p, 4);
  ForwardOutput out;
  Workspace ws;
  ForwardOptions o;
  o.start_layer = 1;
  auto s = forward(p, ids, o, out, ws);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("resid_pre"), std::string::npos);
  o = {};
  o.start_layer = 99;
  EXPECT_FALSE(forward(p, ids, o, out, ws));
  o = {};
  o.logit_tokens = {p.config.vocab_size};
  s = forward(p, ids, o, out, ws);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("vocabulary"), std::string::npos);
}
