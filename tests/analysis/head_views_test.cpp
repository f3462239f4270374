// Tests for analysis/head_views.h: value norms, value-weighted patterns and rollout on a
// one-layer model whose W_O is the identity, so |W_O v_k| is the length of v_k.
#include "analysis/head_views.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

using namespace headlab;
using namespace headlab::analysis;

namespace {

// One layer, one head, C = HS = 2, W_O = I; T = 3 with values v_0 = (3, 4), v_1 = (0, 0),
// v_2 = (1, 0) and a uniform pattern.
struct OneHeadRecord {
  model::Parameters params;
  model::ActivationRecord record;
  OneHeadRecord() {
    model::ModelConfig c;
    c.n_layer = 1;
    c.n_head = 1;
    c.n_embd = 2;
    c.n_ctx = 4;
    c.vocab_size = 3;
    c.bos_token_id = c.eos_token_id = 0;
    params = model::parameters_allocate(c);
    float* W = params.t.attprojw;  // (C, C)
    W[0] = 1, W[1] = 0, W[2] = 0, W[3] = 1;
    record.L = 1, record.NH = 1, record.T = 3, record.C = 2;
    record.qkv.assign(3 * 3 * 2, 0.0f);  // (L, T, 3C): v at [2C, 3C)
    const float v[3][2] = {{3, 4}, {0, 0}, {1, 0}};
    for (int k = 0; k < 3; ++k)
      for (int i = 0; i < 2; ++i) record.qkv[k * 6 + 4 + i] = v[k][i];
    record.pattern = {1.0f, 0.5f, 0.5f, 1 / 3.0f, 1 / 3.0f, 1 / 3.0f};  // packed causal half
  }
};

}  // namespace

TEST(ValueNorms, AreTheLengthOfWoTimesEachValue) {
  OneHeadRecord s;
  std::vector<double> n = value_norms(s.params, s.record, 0, 0);
  ASSERT_EQ(n.size(), 3u);
  EXPECT_NEAR(n[0], 5.0, 1e-12);
  EXPECT_NEAR(n[1], 0.0, 1e-12);
  EXPECT_NEAR(n[2], 1.0, 1e-12);
}

TEST(ValueWeightedPattern, GivesNoWeightToAKeyWithAZeroValueAndRowsSumToOne) {
  OneHeadRecord s;
  std::vector<float> w = value_weighted_pattern(s.params, s.record, 0, 0);
  ASSERT_EQ(w.size(), 6u);
  EXPECT_FLOAT_EQ(w[0], 1.0f);
  EXPECT_FLOAT_EQ(w[1], 1.0f);  // query 1: key 0 (norm 5) and key 1 (norm 0)
  EXPECT_FLOAT_EQ(w[2], 0.0f);
  EXPECT_NEAR(w[3], 5.0 / 6.0, 1e-6);  // query 2: norms 5, 0, 1 under a uniform pattern
  EXPECT_NEAR(w[4], 0.0, 1e-6);
  EXPECT_NEAR(w[5], 1.0 / 6.0, 1e-6);
}

TEST(AttentionRollout, OfOneLayerIsHalfThePatternPlusHalfTheIdentity) {
  OneHeadRecord s;
  std::vector<float> r = attention_rollout(s.record);
  ASSERT_EQ(r.size(), 6u);
  EXPECT_NEAR(r[0], 1.0, 1e-6);
  EXPECT_NEAR(r[1], 0.25, 1e-6);
  EXPECT_NEAR(r[2], 0.75, 1e-6);
  EXPECT_NEAR(r[3] + r[4] + r[5], 1.0, 1e-6);
  EXPECT_NEAR(r[5], 0.5 + 0.5 / 3, 1e-6);
}

// With grouped-query attention and HS != C / NH (a Mistral-shaped block), value_norms reads
// v and W_O at the configured widths: query 0 sees key 0 alone, so head_out at position 0
// is W_O v_0 and its length is value_norms()[0]. The same with W_O packed as a loaded model
// keeps it, in f32 and in bf16 (head_out then comes from the packed kernel's column slices).
TEST(ValueNorms, ReadTheConfiguredWidthsOfAGroupedQueryModelFromRowsOrPackedMatrices) {
  for (std::string how : {"rows", "f32", "bf16"}) {
    model::ModelConfig c;
    c.family = "mistral";
    c.n_layer = 2, c.n_head = 4, c.n_kv_head = 2, c.head_dim = 24, c.n_embd = 32, c.d_mlp = 48;
    c.n_ctx = 16, c.vocab_size = 20, c.bos_token_id = c.eos_token_id = 0;
    c.positions = model::ModelConfig::Positions::rotary;
    c.norm = model::ModelConfig::Norm::rmsnorm;
    c.mlp_kind = model::ModelConfig::Mlp::swiglu;
    c.qkv_bias = c.attn_out_bias = c.mlp_bias = false;
    c.tied = false;
    model::Parameters p = model::parameters_allocate(c);
    model::parameters_init_random(p, 3);
    if (how != "rows") ASSERT_TRUE(model::parameters_pack(p, *model::dtype_choice_parse(how)));
    std::vector<int> ids = {0, 5, 7, 9, 5};
    model::ForwardOptions opt;
    opt.record.qkv = opt.record.head_out = true;
    model::ForwardOutput out;
    model::Workspace ws;
    ASSERT_TRUE(model::forward(p, ids, opt, out, ws));
    for (int l = 0; l < 2; ++l)
      for (int h = 0; h < 4; ++h) {
        std::vector<double> n = value_norms(p, out.record, l, h);
        const float* ho = out.record.head_out.data() + (std::size_t(l) * 4 + h) * ids.size() * 32;  // (T, C), row 0
        double len = 0;
        for (int i = 0; i < 32; ++i) len += double(ho[i]) * ho[i];
        EXPECT_NEAR(n[0], std::sqrt(len), 1e-5 * (1 + n[0])) << "layer " << l << " head " << h << " " << how;
      }
  }
}
