// The model API's codec: the scanner's report in the shape of docs/api.md.
#include "formats/hf/config_json.h"
#include "server/api/model_codec.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "analysis/scan_text.h"

using namespace headlab;
using nlohmann::json;

namespace {

analysis::ScanReport two_head_report() {
  analysis::ScanReport r;
  analysis::HeadReport h;
  h.layer = 1;
  h.head = 2;
  h.name = "1.2";
  h.scores.induction = {0.83, 0.02};
  h.scores.previous_token = {0.05, 0.03};
  h.scores.copying = {0.9, 0.0};
  h.scores.has_weights = true;
  h.labels = analysis::label_head(h.scores);
  r.heads.push_back(h);
  h.layer = 0;
  h.head = 0;
  h.name = "0.0";
  h.scores = {};
  h.scores.has_weights = true;
  h.labels = {};
  r.heads.push_back(h);
  r.has_icl = true;
  r.icl = {8.0, 2.0};
  r.repeat_length = 50;
  r.natural_tokens = 508;
  return r;
}

}  // namespace

TEST(EncodeScanReport, HasTheModelProbesInContextLearningAndEachHeadsScoresChanceAndLabels) {
  const json j = json::parse(server::encode_scan_report(two_head_report(), "headlab-tiny"));
  EXPECT_EQ(j["model"], "headlab-tiny");
  EXPECT_EQ(j["probes"], (json{{"natural_tokens", 508}, {"repeat_length", 50}}));
  EXPECT_EQ(j["in_context_learning"], (json{{"loss_first_copy", 8.0}, {"loss_second_copy", 2.0}, {"ratio", 0.25}}));
  ASSERT_EQ(j["heads"].size(), 2u);
  const json& h = j["heads"][0];
  EXPECT_EQ(h["layer"], 1);
  EXPECT_EQ(h["head"], 2);
  EXPECT_EQ(h["name"], "1.2");
  for (const analysis::ScoreField& f : analysis::score_fields()) {
    EXPECT_TRUE(h["scores"].contains(f.name)) << f.name;
    EXPECT_TRUE(h["chance"].contains(f.name)) << f.name;
  }
  EXPECT_EQ(h["scores"]["induction"], 0.83);
  EXPECT_EQ(h["chance"]["induction"], 0.02);
  ASSERT_FALSE(h["labels"].empty());
  const json& label = h["labels"][0];
  EXPECT_EQ(label["label"], "induction");
  EXPECT_EQ(label["threshold"], 0.3);
  EXPECT_NEAR(label["margin"].get<double>(), 0.53, 1e-12);
  EXPECT_TRUE(j["heads"][1]["labels"].is_array() && j["heads"][1]["labels"].empty());
}

TEST(EncodeScanReport, GivesNullForTheScoresAConstructedHeadHasNoWeightsFor) {
  analysis::ScanReport r = analysis::scan_text_constructed(
      "the cat sat on the mat . the dog ran to the park , and the cat saw the dog .", analysis::ScanOptions{});
  const json j = json::parse(server::encode_scan_report(r, "constructed heads"));
  ASSERT_EQ(j["heads"].size(), 5u);
  for (const json& h : j["heads"]) {
    EXPECT_TRUE(h["scores"]["copying"].is_null());
    EXPECT_TRUE(h["chance"]["first_token_value_weighted"].is_null());
    EXPECT_TRUE(h["scores"]["induction"].is_number());
  }
  EXPECT_FALSE(j.contains("in_context_learning"));
}

TEST(ModelCodec, ModelInfoCarriesTheFamilyAndTheBlocksSettings) {
  server::ModelInfo info;
  info.name = "gemma2";
  auto c = model::config_load(std::string(HEADLAB_SOURCE_DIR) + "/tests/fixtures/model/families/gemma2/config.json");
  ASSERT_TRUE(c) << c.error().message;
  info.config = *c;
  json j = json::parse(server::encode_model_info(info));
  EXPECT_EQ(j["config"]["family"], "gemma2");
  const json& b = j["config"]["block"];
  EXPECT_EQ(b["positions"], "rotary");
  EXPECT_EQ(b["norm"], "rmsnorm_plus_one");
  EXPECT_EQ(b["mlp_kind"], "geglu");
  EXPECT_EQ(b["n_kv_head"], 2);
  EXPECT_EQ(b["head_size"], 32);
  EXPECT_EQ(b["window"], json({6, 0}));
  EXPECT_FLOAT_EQ(b["attn_softcap"].get<float>(), 8.0f);
  EXPECT_TRUE(b["sandwich_norm"].get<bool>());
  json gpt2 = json::parse(server::encode_model_info(server::ModelInfo{"tiny", model::config_gpt2_small()}));
  EXPECT_EQ(gpt2["config"]["family"], "gpt2");
  EXPECT_EQ(gpt2["config"]["block"]["positions"], "learned");
  EXPECT_EQ(gpt2["config"]["block"]["window"].size(), 12u);
}
