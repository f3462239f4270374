// Tests for model/config.h: the attention switches of config.json, Hugging Face's alias
// keys, and the keys refused by name. (The GPT-2 keys and the shape checks are tested in
// checkpoint_test.cpp.)
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
