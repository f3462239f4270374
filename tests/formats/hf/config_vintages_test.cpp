// Configs of every vintage (issue 25): transformers v5 writes the rotary keys as
// rope_parameters (flat, or by layer type for Gemma 3) where earlier versions wrote rope_theta,
// rope_scaling and rope_local_base_freq at the top. Every family fixture is rewritten in the new
// style here and must give the same block; a v5 key that would change the forward and is not
// implemented is refused by name, and headlab info says what rope_parameters set.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "formats/hf/config_json.h"
#include "util/file.h"

using namespace headlab::model;
using headlab::ErrorCode;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

const fs::path kFamilies = fs::path(HEADLAB_SOURCE_DIR) / "tests/fixtures/model/families";

json read_config(const std::string& family) {
  auto text = headlab::file_read((kFamilies / family / "config.json").string());
  EXPECT_TRUE(text) << family;
  return json::parse(*text);
}

// The config with its rotary keys moved into rope_parameters as transformers v5 writes them.
json as_v5(json c) {
  json& t = c.contains("text_config") ? c["text_config"] : c;
  json flat = json::object();
  if (t.contains("rope_scaling") && t["rope_scaling"].is_object()) flat = t["rope_scaling"];
  else flat["rope_type"] = "default";
  for (const char* k : {"rope_theta", "rotary_emb_base"})
    if (t.contains(k)) flat["rope_theta"] = t[k];
  if (t.contains("rotary_pct")) flat["partial_rotary_factor"] = t["rotary_pct"];
  for (const char* k : {"rope_theta", "rotary_emb_base", "rope_scaling", "rotary_pct"}) t.erase(k);
  if (t.contains("rope_local_base_freq")) {  // Gemma 3: by layer type
    t["rope_parameters"] = {{"full_attention", flat},
                            {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", t["rope_local_base_freq"]}}}};
    t.erase("rope_local_base_freq");
  } else {
    t["rope_parameters"] = flat;
  }
  return c;
}

void expect_same_rotation(const ModelConfig& a, const ModelConfig& b, const std::string& family) {
  EXPECT_EQ(a.rope_theta, b.rope_theta) << family;
  EXPECT_EQ(a.rope_local_theta, b.rope_local_theta) << family;
  EXPECT_EQ(a.rope_linear_factor, b.rope_linear_factor) << family;
  EXPECT_EQ(a.rope_llama3_factor, b.rope_llama3_factor) << family;
  EXPECT_EQ(a.rope_llama3_low_freq_factor, b.rope_llama3_low_freq_factor) << family;
  EXPECT_EQ(a.rope_llama3_high_freq_factor, b.rope_llama3_high_freq_factor) << family;
  EXPECT_EQ(a.rope_llama3_original_max_positions, b.rope_llama3_original_max_positions) << family;
  EXPECT_EQ(a.rotary_size(), b.rotary_size()) << family;
}

std::string error_of(const json& c) {
  auto r = config_parse(c.dump(), "config.json");
  EXPECT_FALSE(r) << c.dump();
  return r ? std::string() : r.error().message;
}

}  // namespace

TEST(ConfigVintages, EveryFamilyFixtureGivesTheSameRotationWrittenWithRopeParameters) {
  int families = 0;
  for (const auto& entry : fs::directory_iterator(kFamilies)) {
    if (!fs::exists(entry.path() / "config.json")) continue;
    const std::string family = entry.path().filename().string();
    const json old_style = read_config(family);
    const json new_style = as_v5(old_style);
    auto a = config_parse(old_style.dump(), family);
    auto b = config_parse(new_style.dump(), family + " (v5)");
    ASSERT_TRUE(a) << a.error().message;
    ASSERT_TRUE(b) << family << ": " << b.error().message << "\n" << new_style.dump();
    expect_same_rotation(*a, *b, family);
    families++;
  }
  EXPECT_GE(families, 9);
}

TEST(ConfigVintages, ALlamaThetaGivenOnlyInRopeParametersIsHonouredNotTheDefault) {
  json c = as_v5(read_config("llama3"));  // theta 5e5 and the llama3 scaling, only in rope_parameters
  auto r = config_parse(c.dump(), "config.json");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->rope_theta, 500000.0f);  // was 10,000 (the default) before rope_parameters was read
  EXPECT_EQ(r->rope_llama3_factor, 8.0f);
  EXPECT_EQ(r->rope_llama3_original_max_positions, 8192);
}

TEST(ConfigVintages, GemmaThreesSlidingLayersTakeTheirBaseFromRopeParametersByLayerType) {
  json c = as_v5(read_config("gemma3"));
  c["rope_parameters"]["sliding_attention"]["rope_theta"] = 12345.0;
  auto r = config_parse(c.dump(), "config.json");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->rope_local_theta, 12345.0f);
  EXPECT_EQ(r->rope_theta, 1000000.0f);
  EXPECT_EQ(r->rope_linear_factor, 8.0f);
}

TEST(ConfigVintages, WhatRopeParametersAskAndHeadlabDoesNotDoIsRefusedByName) {
  json yarn = as_v5(read_config("llama"));
  yarn["rope_parameters"] = {{"rope_type", "yarn"}, {"rope_theta", 10000.0}, {"factor", 4.0}};
  EXPECT_NE(error_of(yarn).find("yarn"), std::string::npos) << error_of(yarn);

  json both = as_v5(read_config("llama"));
  both["rope_theta"] = 10000.0;  // and rope_parameters says 5e5
  EXPECT_NE(error_of(both).find("\"rope_theta\" is 10000.0 but \"rope_parameters.rope_theta\" is 500000.0"),
            std::string::npos)
      << error_of(both);

  json stray = as_v5(read_config("llama"));
  stray["rope_parameters"]["factor"] = 4.0;  // with rope_type default: a factor nothing reads
  EXPECT_NE(error_of(stray).find("\"rope_parameters.factor\" is not read with rope_type \"default\""), std::string::npos)
      << error_of(stray);

  json scaled_sliding = as_v5(read_config("gemma3"));
  scaled_sliding["rope_parameters"]["sliding_attention"] = {{"rope_type", "linear"}, {"factor", 2.0}, {"rope_theta", 1e4}};
  EXPECT_NE(error_of(scaled_sliding).find("sliding layers rotate without scaling"), std::string::npos)
      << error_of(scaled_sliding);

  json differing = as_v5(read_config("qwen2"));
  differing["rope_parameters"] = {{"full_attention", {{"rope_type", "default"}, {"rope_theta", 1e6}}},
                                  {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 1e4}}}};
  EXPECT_NE(error_of(differing).find("different rotations"), std::string::npos) << error_of(differing);

  json not_object = read_config("llama");
  not_object["rope_parameters"] = 5;
  EXPECT_NE(error_of(not_object).find("\"rope_parameters\" must be an object"), std::string::npos);
}

TEST(ConfigVintages, HeadlabInfoSaysWhatRopeParametersSet) {
  const json c = as_v5(read_config("llama3"));
  auto config = config_parse(c.dump(), "config.json");
  ASSERT_TRUE(config);
  auto uses = config_key_uses(c.dump(), *config);
  ASSERT_TRUE(uses);
  bool found = false;
  for (const auto& u : *uses)
    if (u.key == "rope_parameters") {
      found = true;
      EXPECT_TRUE(u.read);
      EXPECT_NE(u.effect.find("rotary base theta = 500000; llama3 scaling: factor 8"), std::string::npos) << u.effect;
    }
  EXPECT_TRUE(found);
}
