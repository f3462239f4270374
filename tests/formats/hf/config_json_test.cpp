// Tests for model/config.h: the attention switches of config.json, Hugging Face's alias
// keys, and the keys refused by name. (The GPT-2 keys and the shape checks are tested in
// checkpoint_test.cpp.)
#include "formats/hf/config_json.h"
#include "model/config.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace headlab::model;
using headlab::ErrorCode;

namespace {

// A small valid config with `extra` keys added (extra is a JSON fragment without braces).
std::string small_json(const std::string& extra) {
  std::string j = R"({"n_layer": 3, "n_head": 2, "n_embd": 16, "n_positions": 32, "vocab_size": 40,
                      "bos_token_id": 39, "eos_token_id": 39)";
  return j + (extra.empty() ? "" : ", " + extra) + "}";
}

std::string error_of(const std::string& json) {
  auto r = config_parse(json, "config.json");
  EXPECT_FALSE(r) << json;
  return r ? std::string() : r.error().message;
}

}  // namespace

TEST(ModelConfig, AttentionScaleIsOneOverSqrtHeadSizeByDefault) {
  auto c = config_parse(small_json(""), "config.json");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_TRUE(c->scale_attn_weights);
  EXPECT_FALSE(c->scale_attn_by_inverse_layer_idx);
  EXPECT_FALSE(c->reorder_and_upcast_attn);
  for (int l = 0; l < 3; l++) EXPECT_FLOAT_EQ(c->attention_scale(l), 1.0f / std::sqrt(8.0f));
}

TEST(ModelConfig, ScaleAttnWeightsFalseDropsTheSquareRoot) {
  auto c = config_parse(small_json(R"("scale_attn_weights": false)"), "config.json");
  ASSERT_TRUE(c) << c.error().message;
  for (int l = 0; l < 3; l++) EXPECT_FLOAT_EQ(c->attention_scale(l), 1.0f);
}

TEST(ModelConfig, ScaleAttnByInverseLayerIdxDividesByLayerPlusOne) {
  auto c = config_parse(small_json(R"("scale_attn_by_inverse_layer_idx": true)"), "config.json");
  ASSERT_TRUE(c) << c.error().message;
  for (int l = 0; l < 3; l++) EXPECT_FLOAT_EQ(c->attention_scale(l), 1.0f / std::sqrt(8.0f) / float(l + 1));
  auto both = config_parse(small_json(R"("scale_attn_weights": false, "scale_attn_by_inverse_layer_idx": true)"), "c");
  ASSERT_TRUE(both);
  EXPECT_FLOAT_EQ(both->attention_scale(2), 1.0f / 3.0f);
}

TEST(ModelConfig, AttentionSwitchesRoundTripThroughConfigJson) {
  auto c = config_parse(small_json(R"("scale_attn_weights": false, "scale_attn_by_inverse_layer_idx": true,
                                      "reorder_and_upcast_attn": true)"),
                        "config.json");
  ASSERT_TRUE(c) << c.error().message;
  auto again = config_parse(config_to_json(*c), "again");
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_FALSE(again->scale_attn_weights);
  EXPECT_TRUE(again->scale_attn_by_inverse_layer_idx);
  EXPECT_TRUE(again->reorder_and_upcast_attn);
}

TEST(ModelConfig, TheTrainerIsToldWhichSwitchesItCannotHonour) {
  auto plain = config_parse(small_json(R"("reorder_and_upcast_attn": true)"), "c");
  ASSERT_TRUE(plain);
  EXPECT_EQ(config_untrainable_keys(*plain), "");
  auto c = config_parse(small_json(R"("scale_attn_weights": false, "scale_attn_by_inverse_layer_idx": true)"), "c");
  ASSERT_TRUE(c);
  EXPECT_EQ(config_untrainable_keys(*c), "scale_attn_weights: false, scale_attn_by_inverse_layer_idx: true");
}

TEST(ModelConfig, ReadsHuggingFaceAliasKeysAsGpt2Does) {
  auto c = config_parse(R"({"hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 3,
                            "max_position_embeddings": 128, "vocab_size": 100, "bos_token_id": 0,
                            "eos_token_id": 0})",
                        "config.json");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->n_embd, 64);
  EXPECT_EQ(c->n_head, 4);
  EXPECT_EQ(c->n_layer, 3);
  EXPECT_EQ(c->n_ctx, 128);
  // both spellings present and equal is fine
  auto same = config_parse(small_json(R"("hidden_size": 16, "num_hidden_layers": 3)"), "config.json");
  ASSERT_TRUE(same) << same.error().message;
  EXPECT_EQ(same->n_embd, 16);
}

TEST(ModelConfig, RejectsAnAliasThatDisagreesWithTheGpt2Key) {
  EXPECT_NE(error_of(small_json(R"("hidden_size": 32)"))
                .find("\"hidden_size\" (32) and \"n_embd\" (16) name the same setting and disagree"),
            std::string::npos);
  EXPECT_NE(error_of(small_json(R"("num_attention_heads": 4)")).find("\"num_attention_heads\" (4) and \"n_head\" (2)"),
            std::string::npos);
  EXPECT_NE(error_of(small_json(R"("num_hidden_layers": 1)")).find("\"num_hidden_layers\" (1) and \"n_layer\" (3)"),
            std::string::npos);
  EXPECT_NE(error_of(small_json(R"("max_position_embeddings": 64)"))
                .find("\"max_position_embeddings\" (64) and \"n_positions\" (32)"),
            std::string::npos);
  EXPECT_NE(error_of(small_json(R"("hidden_size": "wide")")).find("\"hidden_size\" must be a whole number"),
            std::string::npos);
}

TEST(ModelConfig, RefusesKeysThatChangeTheForwardByName) {
  EXPECT_NE(error_of(small_json(R"("add_cross_attention": true)")).find("\"add_cross_attention\": true is not supported"),
            std::string::npos);
  EXPECT_NE(error_of(small_json(R"("is_encoder_decoder": true)")).find("\"is_encoder_decoder\": true"),
            std::string::npos);
  EXPECT_NE(error_of(small_json(R"("pruned_heads": {"0": [1]})")).find("\"pruned_heads\" is not supported"),
            std::string::npos);
  EXPECT_NE(error_of(small_json(R"("activation_function": "gelu")")).find("activation_function \"gelu\""),
            std::string::npos);
  EXPECT_NE(error_of(small_json(R"("n_inner": 20)")).find("n_inner other than 4 * n_embd"), std::string::npos);
  EXPECT_NE(error_of(small_json(R"("scale_attn_weights": "no")")).find("wrong type"), std::string::npos);
  EXPECT_EQ(config_parse(small_json(R"("pruned_heads": {})"), "c").has_value(), true);
  EXPECT_EQ(config_parse(small_json(R"("add_cross_attention": false, "activation_function": "gelu_fast")"), "c")
                .has_value(),
            true);
}

TEST(ModelConfig, ATokenizerLargerThanVocabSizeIsReportedAsAMismatch) {
  auto c = config_parse(small_json(""), "config.json");  // vocab_size 40
  ASSERT_TRUE(c);
  EXPECT_TRUE(config_check_tokenizer(*c, 40, "m"));
  EXPECT_TRUE(config_check_tokenizer(*c, 32, "m")) << "a padded vocab_size is fine";
  auto r = config_check_tokenizer(*c, 41, "models/x");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::invalid_argument);
  EXPECT_NE(r.error().message.find("models/x: the tokenizer has 41 tokens but config.json's vocab_size is 40"),
            std::string::npos)
      << r.error().message;
}

// ---- the families other than GPT-2 (config_families.cpp) ----

namespace {

std::string llama_json(const std::string& extra, const std::string& model_type = "llama") {
  std::string j = R"({"model_type": ")" + model_type + R"(", "hidden_size": 64, "num_attention_heads": 4,
                      "num_key_value_heads": 2, "num_hidden_layers": 2, "intermediate_size": 96, "vocab_size": 48,
                      "max_position_embeddings": 64, "rms_norm_eps": 1e-6, "rope_theta": 500000.0,
                      "hidden_act": "silu", "bos_token_id": 1, "eos_token_id": [2, 3])";
  return j + (extra.empty() ? "" : ", " + extra) + "}";
}

}  // namespace

TEST(ModelConfig, LlamaConfigSetsTheConfiguredBlock) {
  auto c = config_parse(llama_json(""), "config.json");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->family, "llama");
  EXPECT_EQ(c->positions, ModelConfig::Positions::rotary);
  EXPECT_EQ(c->norm, ModelConfig::Norm::rmsnorm);
  EXPECT_EQ(c->mlp_kind, ModelConfig::Mlp::swiglu);
  EXPECT_EQ(c->kv_heads(), 2);
  EXPECT_EQ(c->kv_head_of(3), 1);
  EXPECT_EQ(c->head_size(), 16);
  EXPECT_EQ(c->rotary_size(), 16);
  EXPECT_EQ(c->mlp_width(), 96);
  EXPECT_EQ(c->fc_width(), 192);
  EXPECT_FALSE(c->qkv_bias);
  EXPECT_FALSE(c->tied);
  EXPECT_FLOAT_EQ(c->rope_theta, 500000.0f);
  EXPECT_EQ(c->eos_token_id, 2);  // the first of Llama 3's list
  EXPECT_EQ(config_untrainable_keys(ModelConfig{}), "");
}

// Read as GPT-2's, a Llama config without model_type used to be refused for its eos_token_id
// list (GPT-2 takes one id) or its rope_theta (GPT-2's layout reads it only with
// headlab_positions); the missing model_type is the problem, and the message says so.
TEST(ModelConfig, WithoutModelTypeAFamilysKeysNameTheMissingModelType) {
  std::string j = llama_json("");
  j.erase(j.find(R"("model_type": "llama", )"), std::string(R"("model_type": "llama", )").size());
  auto c = config_parse(j, "config.json");
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().code, headlab::ErrorCode::unsupported);
  EXPECT_NE(c.error().message.find("config.json: no \"model_type\": without it the config is read as GPT-2's, which "
                                   "has no \"intermediate_size\", \"num_key_value_heads\""),
            std::string::npos)
      << c.error().message;
  EXPECT_NE(c.error().message.find("add \"model_type\" naming the family (gpt2, gpt_neox, llama"), std::string::npos);
  EXPECT_EQ(c.error().message.find("eos_token_id"), std::string::npos) << c.error().message;
  // GPT-2's own keys and its aliases still read without model_type, as GPT2Config reads them
  auto gpt2 = config_parse(R"({"n_layer": 2, "hidden_size": 64, "n_head": 4, "vocab_size": 50, "bos_token_id": 1,
                               "eos_token_id": 1})", "config.json");
  ASSERT_TRUE(gpt2) << gpt2.error().message;
  EXPECT_EQ(gpt2->n_embd, 64);
}

// TransformerLens's default_prepend_bos: off for GPT-NeoX and Qwen 2/3, on for the others.
TEST(ModelConfig, BosGoesFirstByDefaultExceptForGptNeoxAndQwen) {
  const std::string dir = std::string(HEADLAB_SOURCE_DIR) + "/tests/fixtures/model/families/";
  for (const char* family : {"llama", "llama3", "mistral", "gemma2", "gemma3"}) {
    auto c = config_load(dir + family + "/config.json");
    ASSERT_TRUE(c) << c.error().message;
    EXPECT_TRUE(c->default_prepend_bos()) << family;
  }
  for (const char* family : {"pythia", "qwen2", "qwen3"}) {
    auto c = config_load(dir + family + "/config.json");
    ASSERT_TRUE(c) << c.error().message;
    EXPECT_FALSE(c->default_prepend_bos()) << family;
  }
  EXPECT_TRUE(ModelConfig{}.default_prepend_bos());  // GPT-2
}

TEST(ModelConfig, PythiaConfigRotatesAQuarterOfEachHeadWithTheParallelResidual) {
  auto c = config_parse(R"({"model_type": "gpt_neox", "hidden_size": 64, "num_attention_heads": 4,
                            "num_hidden_layers": 2, "intermediate_size": 256, "vocab_size": 48,
                            "max_position_embeddings": 64, "rotary_pct": 0.25, "rotary_emb_base": 10000,
                            "hidden_act": "gelu", "use_parallel_residual": true})",
                        "config.json");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->rotary_size(), 4);
  EXPECT_TRUE(c->parallel_residual);
  EXPECT_EQ(c->mlp_kind, ModelConfig::Mlp::gelu_erf);
  EXPECT_EQ(c->norm, ModelConfig::Norm::layernorm);
}

TEST(ModelConfig, QwenHasQkvBiasesAndHeadDimMayDifferFromCOverNH) {
  auto q = config_parse(llama_json("", "qwen2"), "config.json");
  ASSERT_TRUE(q) << q.error().message;
  EXPECT_TRUE(q->qkv_bias);
  EXPECT_FALSE(q->attn_out_bias);
  auto m = config_parse(llama_json(R"("head_dim": 24, "sliding_window": 4096)", "mistral"), "config.json");
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_EQ(m->head_size(), 24);
  EXPECT_EQ(m->q_width(), 96);
  EXPECT_EQ(m->sliding_window, 4096);
}

TEST(ModelConfig, FamilyKeysThatChangeTheMathsAreRefusedByName) {
  EXPECT_NE(error_of(llama_json(R"("rope_scaling": {"rope_type": "yarn", "factor": 8.0})")).find("rope_scaling\" of type \"yarn\""),
            std::string::npos);
  EXPECT_NE(error_of(llama_json(R"("rope_scaling": {"type": "dynamic", "factor": 2.0})")).find("dynamic"), std::string::npos);
  EXPECT_NE(error_of(llama_json(R"("rope_scaling": {"rope_type": "llama3", "factor": 8.0})")).find("low_freq_factor"),
            std::string::npos);
  EXPECT_NE(error_of(llama_json(R"("attn_logit_softcapping": 50.0)")).find("attn_logit_softcapping"), std::string::npos);
  EXPECT_NE(error_of(llama_json(R"("final_logit_softcapping": 30.0)")).find("final_logit_softcapping"), std::string::npos);
  EXPECT_NE(error_of(llama_json(R"("query_pre_attn_scalar": 256)")).find("query_pre_attn_scalar"), std::string::npos);
  EXPECT_NE(error_of(llama_json(R"("rope_local_base_freq": 10000)")).find("rope_local_base_freq"), std::string::npos);
  EXPECT_NE(error_of(llama_json(R"("use_sliding_window": true)", "qwen2")).find("sliding_window"), std::string::npos);
  EXPECT_NE(error_of(llama_json(R"("hidden_act": "gelu")")).find("hidden_act \"gelu\""), std::string::npos);
  EXPECT_NE(error_of(llama_json(R"("num_key_value_heads": 3)")).find("multiple of the KV heads"), std::string::npos);
  EXPECT_NE(error_of(llama_json(R"("partial_rotary_factor": 0.1)")).find("odd number"), std::string::npos);
  EXPECT_NE(error_of(R"({"model_type": "phi3"})").find("model_type \"phi3\" is not supported"), std::string::npos);
  EXPECT_NE(error_of(llama_json(R"("hidden_activation": "relu")", "gemma2")).find("hidden_activation \"relu\""),
            std::string::npos);
  EXPECT_NE(error_of(llama_json(R"("use_bidirectional_attention": true)", "gemma3_text")).find("use_bidirectional_attention"),
            std::string::npos);
  EXPECT_NE(error_of(llama_json(R"("layer_types": ["sliding_attention", "chunked_attention"])", "gemma2"))
                .find("\"chunked_attention\""),
            std::string::npos);
  EXPECT_NE(error_of(llama_json(R"("layer_types": ["sliding_attention"])", "gemma2")).find("sliding layers has 1 entries"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"model_type": "gemma3", "vision_config": {}})").find("text_config"), std::string::npos);
  auto linear = config_parse(llama_json(R"("rope_scaling": {"type": "linear", "factor": 4.0})"), "config.json");
  ASSERT_TRUE(linear) << linear.error().message;
  EXPECT_FLOAT_EQ(linear->rope_linear_factor, 4.0f);
}

TEST(ModelConfig, Llama3RopeScalingReadsItsFourNumbers) {
  auto c = config_parse(llama_json(R"("rope_scaling": {"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0,
                                       "high_freq_factor": 4.0, "original_max_position_embeddings": 8192})"),
                        "config.json");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_FLOAT_EQ(c->rope_llama3_factor, 32.0f);
  EXPECT_FLOAT_EQ(c->rope_llama3_low_freq_factor, 1.0f);
  EXPECT_FLOAT_EQ(c->rope_llama3_high_freq_factor, 4.0f);
  EXPECT_EQ(c->rope_llama3_original_max_positions, 8192);
  EXPECT_FLOAT_EQ(c->rope_linear_factor, 1.0f);
}

TEST(ModelConfig, QwenSlidingWindowCoversTheLayersFromMaxWindowLayersOn) {
  auto c = config_parse(llama_json(R"("use_sliding_window": true, "sliding_window": 8, "max_window_layers": 1, "head_dim": 32)",
                                   "qwen3"),
                        "config.json");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_TRUE(c->qk_norm);
  EXPECT_EQ(c->head_size(), 32);
  EXPECT_EQ(c->window_of(0), 0);
  EXPECT_EQ(c->window_of(1), 8);
  auto off = config_parse(llama_json(R"("use_sliding_window": false, "sliding_window": 8)", "qwen2"), "config.json");
  ASSERT_TRUE(off) << off.error().message;
  EXPECT_EQ(off->window_of(1), 0) << "sliding_window counts only with use_sliding_window";
}

TEST(ModelConfig, GemmaTakesItsConfigClassDefaultsForKeysLeftOut) {
  auto g2 = config_parse(llama_json("", "gemma2"), "config.json");
  ASSERT_TRUE(g2) << g2.error().message;
  EXPECT_EQ(g2->mlp_kind, ModelConfig::Mlp::geglu);
  EXPECT_EQ(g2->fc_width(), 192);
  EXPECT_TRUE(g2->norm_plus_one && g2->sandwich_norm && g2->embed_scale && g2->tied);
  EXPECT_FLOAT_EQ(g2->attn_softcap, 50.0f);
  EXPECT_FLOAT_EQ(g2->final_softcap, 30.0f);
  EXPECT_FLOAT_EQ(g2->attention_scale(0), 1.0f / 16.0f);  // query_pre_attn_scalar 256
  EXPECT_EQ(g2->window_of(0), 4096);
  EXPECT_EQ(g2->window_of(1), 0);
  auto g3 = config_parse(llama_json(R"("sliding_window": 512, "attn_logit_softcapping": null)", "gemma3_text"), "config.json");
  ASSERT_TRUE(g3) << g3.error().message;
  EXPECT_EQ(g3->family, "gemma3");
  EXPECT_TRUE(g3->qk_norm);
  EXPECT_FLOAT_EQ(g3->attn_softcap, 0.0f);
  EXPECT_FLOAT_EQ(g3->rope_local_theta, 10000.0f);
  auto explicit_types =
      config_parse(llama_json(R"("layer_types": ["full_attention", "sliding_attention"])", "gemma3_text"), "config.json");
  ASSERT_TRUE(explicit_types) << explicit_types.error().message;
  EXPECT_EQ(explicit_types->window_of(0), 0);
  EXPECT_EQ(explicit_types->window_of(1), 4096);
}

TEST(ModelConfig, MultimodalGemma3ReadsItsTextConfig) {
  auto c = config_parse(R"({"model_type": "gemma3", "vision_config": {"hidden_size": 1152}, "mm_tokens_per_image": 256,
                            "text_config": {"model_type": "gemma3_text", "hidden_size": 64, "num_attention_heads": 4,
                                            "num_key_value_heads": 1, "head_dim": 32, "num_hidden_layers": 2,
                                            "intermediate_size": 96, "vocab_size": 48}, "eos_token_id": [1, 106]})",
                        "config.json");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->family, "gemma3");
  EXPECT_TRUE(c->multimodal_text);
  EXPECT_EQ(c->n_layer, 2);
  EXPECT_EQ(c->eos_token_id, 1);
}

// headlab's trainer writes rotary and no-position models in GPT-2's layout with
// headlab_positions (docs/formats.md); every key it writes is read back.
TEST(ModelConfig, HeadlabPositionsRoundTripThroughConfigJson) {
  auto rope = config_parse(small_json(R"("headlab_positions": "rotary", "rope_theta": 500000.0, "rotary_dim": 4)"),
                           "config.json");
  ASSERT_TRUE(rope) << rope.error().message;
  EXPECT_EQ(rope->positions, ModelConfig::Positions::rotary);
  auto again = config_parse(config_to_json(*rope), "again");
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again->positions, ModelConfig::Positions::rotary);
  EXPECT_EQ(again->rope_theta, 500000.0f);
  EXPECT_EQ(again->rotary_size(), 4);
  auto none = config_parse(config_to_json(*config_parse(small_json(R"("headlab_positions": "none")"), "c")), "again");
  ASSERT_TRUE(none) << none.error().message;
  EXPECT_EQ(none->positions, ModelConfig::Positions::none);
  // learned positions write no such key: a GPT-2 config.json stays GPT-2's
  EXPECT_EQ(config_to_json(*config_parse(small_json(""), "c")).find("headlab_positions"), std::string::npos);
}

TEST(ModelConfig, HeadlabPositionsKeysThatCannotBeHonouredAreRefusedByName) {
  EXPECT_NE(error_of(small_json(R"("headlab_positions": "alibi")")).find("\"alibi\" is not one of learned, rotary, none"),
            std::string::npos);
  EXPECT_NE(error_of(small_json(R"("rope_theta": 10000.0)")).find("\"rope_theta\" is set but"), std::string::npos);
  EXPECT_NE(error_of(small_json(R"("headlab_positions": "none", "rotary_dim": 4)")).find("\"rotary_dim\" is set but"),
            std::string::npos);
  EXPECT_NE(error_of(small_json(R"("headlab_positions": "rotary", "rope_theta": -1)")).find("rope_theta"),
            std::string::npos);
  EXPECT_NE(error_of(small_json(R"("headlab_positions": "rotary", "rotary_dim": 3)")).find("rotary channels (3)"),
            std::string::npos);
}
