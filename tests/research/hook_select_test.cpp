// Tests for research/hook_select.h: TransformerLens hook names and globs into the forward's
// wish list, and the refusals that say what was meant or why the model lacks it.
#include <gtest/gtest.h>

#include "research/hook_select.h"
#include "testing/model_fixtures.h"

using namespace headlab::research;
using headlab::model::HookPoint;
using headlab::testing::load_fixture;

namespace {

const headlab::model::Parameters& gpt2_tiny() {
  static const headlab::model::Parameters p = load_fixture("gpt2_tiny", "model.safetensors");
  return p;
}

std::string select_error(const headlab::model::ModelConfig& c, const char* globs) {
  auto s = hook_select(c, globs);
  return s ? std::string("(accepted)") : s.error().message;
}

}  // namespace

TEST(HookGlob, StarMatchesAnyRunOfCharactersDotsIncludedAndAGlobMatchesWholeNames) {
  EXPECT_TRUE(hook_glob_match("*", "blocks.0.attn.hook_pattern"));
  EXPECT_TRUE(hook_glob_match("blocks.*.attn.hook_pattern", "blocks.11.attn.hook_pattern"));
  EXPECT_TRUE(hook_glob_match("blocks.3.*", "blocks.3.attn.hook_q"));
  EXPECT_TRUE(hook_glob_match("*hook_scale", "ln_final.hook_scale"));
  EXPECT_TRUE(hook_glob_match("blocks.?.hook_resid_pre", "blocks.7.hook_resid_pre"));
  EXPECT_FALSE(hook_glob_match("blocks.?.hook_resid_pre", "blocks.10.hook_resid_pre"));
  EXPECT_FALSE(hook_glob_match("blocks.1.hook_resid_pre", "blocks.11.hook_resid_pre"));
  EXPECT_FALSE(hook_glob_match("hook_embed", "hook_embeddings"));
}

TEST(HookSelect, StarAloneIsEveryHookOfTheModelInTheForwardsOrder) {
  const auto& c = gpt2_tiny().config;
  auto sel = hook_select(c, "*");
  ASSERT_TRUE(sel) << sel.error().message;
  const auto all = headlab::model::model_hooks(c);
  ASSERT_EQ(sel->sites.size(), all.size());
  for (std::size_t i = 0; i < all.size(); i++) {
    EXPECT_EQ(sel->sites[i].point, all[i].point);
    EXPECT_EQ(sel->sites[i].layer, all[i].layer);
  }
}

TEST(HookSelect, GlobsAddUpEachSiteOnceInTheForwardsOrder) {
  const auto& c = gpt2_tiny().config;  // 2 layers
  auto sel = hook_select(c, " blocks.*.attn.hook_pattern , blocks.1.hook_resid_pre,hook_embed,blocks.0.attn.hook_pattern,");
  ASSERT_TRUE(sel) << sel.error().message;
  const std::vector<std::string> want = {"hook_embed", "blocks.0.attn.hook_pattern", "blocks.1.hook_resid_pre",
                                         "blocks.1.attn.hook_pattern"};
  EXPECT_EQ(sel->names(), want);
  auto hooks = sel->wish(c.n_layer);
  EXPECT_TRUE(hooks.wants(HookPoint::pattern, 0));
  EXPECT_TRUE(hooks.wants(HookPoint::resid_pre, 1));
  EXPECT_FALSE(hooks.wants(HookPoint::resid_pre, 0));
  EXPECT_TRUE(hooks.wants(HookPoint::embed, -1));
}

TEST(HookSelect, AMistypedNameIsRefusedWithTheCloseNames) {
  const auto& c = gpt2_tiny().config;
  std::string m = select_error(c, "blocks.0.attn.hook_patern");
  EXPECT_NE(m.find("is not a hook name"), std::string::npos) << m;
  EXPECT_NE(m.find("blocks.0.attn.hook_pattern"), std::string::npos) << m;
  m = select_error(c, "blocks.*.hook_resid_pr");
  EXPECT_NE(m.find("blocks.*.hook_resid_pre"), std::string::npos) << m;
  m = select_error(c, "zzzzzzzzzzzzzzzzzz");
  EXPECT_NE(m.find("TransformerLens"), std::string::npos) << m;
}

TEST(HookSelect, APointTheModelLacksIsRefusedSayingWhy) {
  auto pythia = load_fixture("families/pythia", "model.safetensors");  // parallel blocks, rotary
  std::string m = select_error(pythia.config, "blocks.0.hook_resid_mid");
  EXPECT_NE(m.find("parallel"), std::string::npos) << m;
  m = select_error(pythia.config, "blocks.*.hook_resid_mid");
  EXPECT_NE(m.find("parallel"), std::string::npos) << m;
  m = select_error(pythia.config, "hook_pos_embed");
  EXPECT_NE(m.find("rotary"), std::string::npos) << m;
  m = select_error(gpt2_tiny().config, "blocks.0.attn.hook_rot_q");
  EXPECT_NE(m.find("no rotary"), std::string::npos) << m;
  m = select_error(gpt2_tiny().config, "blocks.0.mlp.hook_pre_linear");
  EXPECT_NE(m.find("not gated"), std::string::npos) << m;
}

TEST(HookSelect, ALayerTheModelLacksIsRefusedWithItsBlocks) {
  std::string m = select_error(gpt2_tiny().config, "blocks.7.hook_resid_pre");
  EXPECT_NE(m.find("blocks.0 to blocks.1"), std::string::npos) << m;
}

TEST(HookSelect, NoNameOrAnEmptyOneBetweenCommasIsRefused) {
  for (const char* junk : {"", " ", ",", "hook_embed,,hook_pos_embed", "blocks..hook_z", "*x*y*z*"})
    EXPECT_EQ(select_error(gpt2_tiny().config, junk).find("--hooks"), 0u) << junk;
}
