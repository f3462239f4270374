// Every key of a config.json is honoured, refused, or reviewed as not changing the forward
// (issue 25): a key headlab has never heard of is marked unknown and named at load, never
// taken as harmless. The walk covers every config.json under tests/fixtures.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "formats/hf/config_json.h"
#include "util/file.h"

using namespace headlab::model;
namespace fs = std::filesystem;

namespace {

std::vector<fs::path> fixture_configs() {
  std::vector<fs::path> out;
  for (const auto& e : fs::recursive_directory_iterator(fs::path(HEADLAB_SOURCE_DIR) / "tests/fixtures"))
    if (e.is_regular_file() && e.path().filename() == "config.json") out.push_back(e.path());
  return out;
}

}  // namespace

TEST(ConfigKeys, EveryKeyOfEveryFixtureConfigIsReadOrReviewedAsNotChangingTheForward) {
  const auto files = fixture_configs();
  ASSERT_GE(files.size(), 15u) << "the fixtures' configs (families, GGUF sources, the built-in layouts)";
  int keys = 0;
  for (const auto& f : files) {
    auto text = headlab::file_read(f.string());
    ASSERT_TRUE(text) << f;
    auto config = config_parse(*text, f.string());
    if (!config) continue;  // a fixture that must be refused (its own test says why)
    auto uses = config_key_uses(*text, *config);
    ASSERT_TRUE(uses) << f;
    for (const auto& u : *uses) {
      ++keys;
      EXPECT_TRUE(u.known) << f << ": key '" << u.key << "' is neither read nor reviewed: " << u.effect;
      EXPECT_FALSE(u.effect.empty()) << f << ": " << u.key;
    }
  }
  EXPECT_GT(keys, 200);
}

TEST(ConfigKeys, AKeyHeadlabHasNeverHeardOfIsMarkedUnknownNotHarmless) {
  const std::string text = R"({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
    "num_key_value_heads": 2, "intermediate_size": 96, "vocab_size": 48, "max_position_embeddings": 64,
    "rms_norm_eps": 1e-6, "attention_dropout": 0.0, "some_future_switch": true})";
  auto config = config_parse(text, "config.json");
  ASSERT_TRUE(config) << config.error().message;
  auto uses = config_key_uses(text, *config);
  ASSERT_TRUE(uses);
  bool saw_unknown = false, saw_dropout = false;
  for (const auto& u : *uses) {
    if (u.key == "some_future_switch") {
      saw_unknown = true;
      EXPECT_FALSE(u.known);
      EXPECT_FALSE(u.read);
      EXPECT_NE(u.effect.find("UNKNOWN"), std::string::npos) << u.effect;
    }
    if (u.key == "attention_dropout") {
      saw_dropout = true;
      EXPECT_TRUE(u.known);
      EXPECT_NE(u.effect.find("dropout: off at inference"), std::string::npos) << u.effect;
    }
  }
  EXPECT_TRUE(saw_unknown);
  EXPECT_TRUE(saw_dropout);
}
