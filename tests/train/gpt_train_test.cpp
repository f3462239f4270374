#include "train/gpt_train.h"

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "testing/gradcheck.h"

using namespace headlab;
using namespace headlab::train;

namespace {

model::ModelConfig tiny_config(bool mlp, bool tied) {
  model::ModelConfig c;
  c.n_layer = 2;
  c.n_head = 2;
  c.n_embd = 8;
  c.n_ctx = 8;
  c.vocab_size = 11;
  c.mlp = mlp;
  c.tied = tied;
  c.bos_token_id = c.eos_token_id = 10;
  return c;
}

using Positions = model::ModelConfig::Positions;

// Every parameter tensor's gradient against finite differences of the mean loss.
void check_all_gradients(bool mlp, bool tied, Positions positions = Positions::learned, int rotary_dim = 0) {
  const int B = 2, T = 5;
  auto config = tiny_config(mlp, tied);
  config.positions = positions;
  config.rotary_dim = rotary_dim;
  auto m = train_model_create(config, B, T);
  ASSERT_TRUE(m) << m.error().message;
  model::parameters_init_random(m->params, 3);
  // larger weights than GPT-2's init so every path carries a visible gradient
  for (float& w : m->params.memory) w *= 3.0f;
  std::vector<int> inputs = {10, 1, 2, 3, 1, 10, 4, 4, 5, 9};
  std::vector<int> targets = {1, 2, 3, 1, -1, 4, 4, 5, 9, 0};
  train_forward(*m, inputs.data(), targets.data());
  train_zero_grad(*m);
  train_backward(*m);
  auto loss = [&] { return double(train_forward(*m, inputs.data(), targets.data())); };
  auto sizes = model::parameters_sizes(m->config);
  auto params = model::parameters_list(m->params.t);
  auto grads = model::parameters_list(m->grads);
  for (int i = 0; i < model::kNumParameterTensors; ++i) {
    if (sizes[i] == 0) continue;
    headlab::testing::GradcheckOptions o;
    o.eps = 1e-3;
    std::string name = "d";
    name += model::parameters_name(i);
    EXPECT_TRUE(headlab::testing::gradcheck(name, loss, params[i], sizes[i], grads[i], o));
  }
}

}  // namespace

TEST(TrainBackward, AttentionOnlyMatchesFiniteDifferences) { check_all_gradients(false, true); }
TEST(TrainBackward, WithMlpUntiedMatchesFiniteDifferences) { check_all_gradients(true, false); }
TEST(TrainBackward, RotaryPositionsMatchFiniteDifferences) { check_all_gradients(false, false, Positions::rotary); }
TEST(TrainBackward, PartialRotaryWithMlpMatchesFiniteDifferences) {
  check_all_gradients(true, true, Positions::rotary, /*rotary_dim=*/2);  // half of each head of 4
}
TEST(TrainBackward, NoPositionsMatchFiniteDifferences) { check_all_gradients(false, false, Positions::none); }

// Rotary and no positions have no wpe: the model holds one fewer tensor, and none is trained.
TEST(TrainModelCreate, RotaryAndNoPositionsHaveNoPositionEmbedding) {
  for (Positions pos : {Positions::rotary, Positions::none}) {
    auto c = tiny_config(false, true);
    c.positions = pos;
    auto m = train_model_create(c, 1, 4);
    ASSERT_TRUE(m) << m.error().message;
    EXPECT_EQ(model::parameters_sizes(c)[1], 0u);
  }
}

// The backward turns NeoX halves by position only: GPT-J's pairs and rope scaling are
// refused by name rather than trained as something else.
TEST(TrainModelCreate, RefusesRotaryVariantsItsBackwardDoesNotHonourByName) {
  auto c = tiny_config(false, true);
  c.positions = Positions::rotary;
  c.rotary_interleaved = true;
  auto m = train_model_create(c, 1, 4);
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().code, ErrorCode::unsupported);
  EXPECT_NE(m.error().message.find("rotary_interleaved"), std::string::npos) << m.error().message;
  c.rotary_interleaved = false;
  c.rope_linear_factor = 2.0f;
  m = train_model_create(c, 1, 4);
  ASSERT_FALSE(m);
  EXPECT_NE(m.error().message.find("rope_scaling"), std::string::npos) << m.error().message;
}

namespace {

// The backward writes or zeroes every activation gradient before it reads it, so whatever
// the buffers hold from an earlier step (here: garbage) does not leak into the gradients.
void check_backward_ignores_earlier_contents(bool mlp, bool tied) {
  const int B = 2, T = 5;
  std::vector<int> inputs = {10, 1, 2, 3, 1, 10, 4, 4, 5, 9};
  std::vector<int> targets = {1, 2, 3, 1, -1, 4, 4, 5, 9, 0};
  auto fresh = train_model_create(tiny_config(mlp, tied), B, T);
  auto used = train_model_create(tiny_config(mlp, tied), B, T);
  ASSERT_TRUE(fresh && used);
  model::parameters_init_random(fresh->params, 3);
  model::parameters_init_random(used->params, 3);
  train_forward(*fresh, inputs.data(), targets.data());
  train_zero_grad(*fresh);
  train_backward(*fresh);
  for (float& x : used->dacts_memory) x = 7.0f;
  used->attention_scratch.assign(1 << 12, -3.0f);
  train_forward(*used, inputs.data(), targets.data());
  train_zero_grad(*used);
  train_backward(*used);
  ASSERT_EQ(fresh->grads_memory.size(), used->grads_memory.size());
  for (std::size_t i = 0; i < fresh->grads_memory.size(); ++i)
    ASSERT_EQ(fresh->grads_memory[i], used->grads_memory[i]) << "gradient " << i;
}

}  // namespace

TEST(TrainBackward, AttentionOnlyGradientsDoNotDependOnWhatTheBuffersHeldBefore) {
  check_backward_ignores_earlier_contents(false, true);
}
TEST(TrainBackward, WithMlpGradientsDoNotDependOnWhatTheBuffersHeldBefore) {
  check_backward_ignores_earlier_contents(true, false);
}

TEST(TrainForward, RandomModelLossIsNearLogV) {
  auto m = train_model_create(tiny_config(true, true), 1, 4);
  ASSERT_TRUE(m);
  model::parameters_init_random(m->params, 1);
  std::vector<int> in = {10, 1, 2, 3}, tg = {1, 2, 3, 4};
  EXPECT_NEAR(train_forward(*m, in.data(), tg.data()), std::log(11.0f), 0.1);
  EXPECT_EQ(m->n_targets, 4);
}

TEST(TrainModelCreate, RefusesAConfigThatDoesNotFitInMemory) {
  auto c = tiny_config(true, true);
  c.vocab_size = 50257;
  c.n_embd = 768;
  c.n_head = 12;
  c.n_ctx = 1024;
  c.bos_token_id = c.eos_token_id = 50256;
  auto m = train_model_create(c, 64, 1024, std::size_t(1) << 30);
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().code, ErrorCode::too_long);
  EXPECT_NE(m.error().message.find("MiB"), std::string::npos);
}

TEST(TrainModelCreate, RefusesContextLongerThanNCtx) {
  auto m = train_model_create(tiny_config(false, true), 1, 9);
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().code, ErrorCode::invalid_argument);
}

// The backward scales the scores by 1/sqrt(HS) only: a config.json that asks otherwise is
// refused by the name of its switch rather than trained as something else.
TEST(TrainModelCreate, RefusesAttentionScalesItsBackwardDoesNotHonourByName) {
  auto c = tiny_config(false, true);
  c.scale_attn_by_inverse_layer_idx = true;
  auto m = train_model_create(c, 1, 4);
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().code, ErrorCode::unsupported);
  EXPECT_NE(m.error().message.find("scale_attn_by_inverse_layer_idx: true"), std::string::npos) << m.error().message;
  c = tiny_config(false, true);
  c.scale_attn_weights = false;
  m = train_model_create(c, 1, 4);
  ASSERT_FALSE(m);
  EXPECT_NE(m.error().message.find("scale_attn_weights: false"), std::string::npos) << m.error().message;
  c = tiny_config(false, true);
  c.reorder_and_upcast_attn = true;  // what the trainer does anyway
  EXPECT_TRUE(train_model_create(c, 1, 4));
}

// The backward is GPT-2's block: a Llama-style config (RMSNorm, rotary, SwiGLU, GQA) is
// refused by its family's name rather than trained as something else.
TEST(TrainModelCreate, RefusesFamiliesOtherThanGpt2ByName) {
  auto c = tiny_config(true, true);
  c.family = "llama";
  c.norm = model::ModelConfig::Norm::rmsnorm;
  c.positions = model::ModelConfig::Positions::rotary;
  c.mlp_kind = model::ModelConfig::Mlp::swiglu;
  auto m = train_model_create(c, 1, 4);
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().code, ErrorCode::unsupported);
  EXPECT_NE(m.error().message.find("model_type \"llama\""), std::string::npos) << m.error().message;
}
