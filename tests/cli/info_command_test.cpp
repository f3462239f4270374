// Tests for `headlab info` (cli/info_command.cpp): the built binary on the family fixtures
// and models/headlab-tiny, read back from its JSON.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "testing/process.h"

using headlab::testing::headlab_run;
using nlohmann::json;

namespace {

const std::string kFamilies = std::string(HEADLAB_SOURCE_DIR) + "/tests/fixtures/model/families/";

json info(const std::string& dir) {
  auto r = headlab_run("info --model " + dir + " --format json");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  return json::parse(r.out);
}

const json* key(const json& j, const std::string& name) {
  for (const json& k : j["config_keys"])
    if (k["key"] == name) return &k;
  return nullptr;
}

// The floats the loaded tensors hold, by their shapes.
long long loaded_floats(const json& j) {
  long long floats = 0;
  for (const json& t : j["tensors"]) {
    if (t["target"] == "") continue;
    long long n = 1;
    for (const json& d : t["shape"]) n *= d.get<long long>();
    floats += n;
  }
  return floats;
}

}  // namespace

TEST(InfoCommand, Gemma3ShowsItsFamilyWindowsAndEveryTensorMapped) {
  json j = info(kFamilies + "gemma3");
  EXPECT_EQ(j["family"], "gemma3");
  EXPECT_EQ(j["sizes"]["L"], 3);
  EXPECT_EQ(j["sizes"]["NKV"], 1);
  EXPECT_EQ(j["sizes"]["HS"], 32);
  EXPECT_EQ(j["window"], json({6, 6, 0}));
  EXPECT_EQ(j["attention_kind"], "multi-query");
  EXPECT_NE(j["norm"].get<std::string>().find("RMSNorm (1 + w)"), std::string::npos);
  EXPECT_NE(j["positions"].get<std::string>().find("local layers theta 10000"), std::string::npos) << j["positions"];
  EXPECT_EQ(j["weights"]["loaded"], j["weights"]["tensors"]);
  const json* pattern = key(j, "sliding_window_pattern");
  ASSERT_NE(pattern, nullptr);
  EXPECT_TRUE((*pattern)["read"].get<bool>());
  EXPECT_NE((*pattern)["effect"].get<std::string>().find("layers 0, 1"), std::string::npos) << (*pattern)["effect"];
  const json* act = key(j, "hidden_act");
  ASSERT_NE(act, nullptr);
  EXPECT_FALSE((*act)["read"].get<bool>()) << "Gemma's MLP reads hidden_activation";
  bool q_norm = false;
  for (const json& t : j["tensors"])
    if (t["name"] == "model.layers.2.self_attn.q_norm.weight") {
      q_norm = true;
      EXPECT_EQ(t["target"], "qnormw");
      EXPECT_EQ(t["layer"], 2);
      EXPECT_EQ(t["bytes"], 32 * 4);
    }
  EXPECT_TRUE(q_norm);
}

TEST(InfoCommand, TheLoadedTensorsHoldEveryParameter) {
  for (const char* name : {"llama", "pythia", "qwen3", "gemma2"}) {
    json j = info(kFamilies + name);
    EXPECT_EQ(loaded_floats(j), j["sizes"]["parameters"].get<long long>()) << name;
  }
}

TEST(InfoCommand, Gpt2ShowsTheTransposedConv1dAndItsTokenizer) {
  json j = info(std::string(HEADLAB_SOURCE_DIR) + "/models/headlab-tiny");
  EXPECT_EQ(j["family"], "gpt2");
  EXPECT_EQ(j["positions"].get<std::string>().substr(0, 7), "learned");
  EXPECT_NE(j["tokenizer"]["kind"].get<std::string>().find("GPT-2"), std::string::npos);
  EXPECT_GT(j["tokenizer"]["tokens"].get<int>(), 0);
  bool transposed = false;
  for (const json& t : j["tensors"])
    if (t["target"] == "qkvw") transposed = t["how"].get<std::string>().find("transposed") == 0;
  EXPECT_TRUE(transposed);
  auto text = headlab_run("info --model " + std::string(HEADLAB_SOURCE_DIR) + "/models/headlab-tiny");
  EXPECT_EQ(text.exit_code, 0);
  EXPECT_NE(text.out.find("family       gpt2"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("config.json:"), std::string::npos) << text.out;
}

TEST(InfoCommand, AFolderWithoutAModelIsAnErrorNotAnAbort) {
  auto r = headlab_run("info --model /nonexistent");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("headlab: error: /nonexistent: no such file or directory"), std::string::npos) << r.out;
  auto usage = headlab_run("info");
  EXPECT_EQ(usage.exit_code, 2) << usage.out;
}

// llama.cpp's own Q4_K_M quantization of a random Llama (tests/fixtures/gguf): described from
// its metadata and tensor infos, as a folder is from config.json and the safetensors headers.
TEST(InfoCommand, AGgufFileShowsItsKeysTypesAndHowEachTensorIsRead) {
  const std::string path = std::string(HEADLAB_SOURCE_DIR) + "/tests/fixtures/gguf/llama_random.q4_k_m.gguf";
  json j = info(path);
  EXPECT_EQ(j["family"], "llama");
  EXPECT_EQ(j["config_source"], "GGUF metadata");
  const json* layers = key(j, "llama.block_count");
  ASSERT_NE(layers, nullptr);
  EXPECT_TRUE((*layers)["read"].get<bool>());
  EXPECT_EQ((*layers)["effect"], "L = " + j["sizes"]["L"].dump());
  const json* arch = key(j, "general.architecture");
  ASSERT_NE(arch, nullptr);
  EXPECT_EQ((*arch)["effect"], "the block: llama");
  bool quantized = false, repaired = false;
  for (const json& t : j["tensors"]) {
    if (t["target"] == "") continue;
    const std::string how = t["how"];
    if (t["dtype"] == "Q4_K") {
      quantized = true;
      EXPECT_EQ(how.rfind("kept as the file's Q4_K blocks", 0), 0u) << how;
      EXPECT_EQ(t["memory"], "Q4_K") << "a quantized tensor is kept in its blocks";
    }
    if (t["name"] == "blk.0.attn_q.weight") repaired = how.find("rows re-paired") != std::string::npos;
  }
  EXPECT_TRUE(quantized);
  EXPECT_TRUE(repaired) << "llama.cpp's q rows are permuted for its rotary pairs";
  EXPECT_EQ(loaded_floats(j), j["sizes"]["parameters"].get<long long>());
  EXPECT_NE(j["tokenizer"]["kind"].get<std::string>().find("GGUF"), std::string::npos);
  EXPECT_GT(j["tokenizer"].value("tokens", 0), 0) << j["tokenizer"].dump();
  auto text = headlab_run("info --model " + path);
  EXPECT_EQ(text.exit_code, 0) << text.out;
  EXPECT_NE(text.out.find("family       llama"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("GGUF metadata:"), std::string::npos) << text.out;
}

TEST(InfoCommand, AFileThatIsNotGgufIsAnErrorNotAnAbort) {
  const std::string path = ::testing::TempDir() + "headlab_info_not_gguf.gguf";
  std::ofstream(path) << "this is a text file, not llama.cpp's format\n";
  auto r = headlab_run("info --model " + path);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("headlab: error: " + path), std::string::npos) << r.out;
  std::remove(path.c_str());
}

TEST(InfoCommand, AConfigKeyHeadlabDoesNotKnowIsNamedByInfoAndWhenAModelLoads) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("headlab-unknown-key-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  for (const auto& e : fs::directory_iterator(kFamilies + "llama")) fs::copy_file(e.path(), dir / e.path().filename(), fs::copy_options::overwrite_existing);
  json config = json::parse(std::ifstream(dir / "config.json"));
  config["some_future_switch"] = true;
  std::ofstream(dir / "config.json") << config.dump();

  const json* k = nullptr;
  json j = info(dir.string());
  k = key(j, "some_future_switch");
  ASSERT_NE(k, nullptr);
  EXPECT_FALSE((*k)["read"].get<bool>());
  EXPECT_NE((*k)["effect"].get<std::string>().find("UNKNOWN"), std::string::npos) << (*k)["effect"];
  // A reviewed key says why it does not matter.
  ASSERT_NE(key(j, "torch_dtype"), nullptr);
  EXPECT_NE((*key(j, "torch_dtype"))["effect"].get<std::string>().find("each tensor's own dtype"), std::string::npos);

  auto r = headlab_run("run --model " + dir.string() + " --text 'a b' --format json");
  EXPECT_NE(r.out.find("key 'some_future_switch' (= true) is unknown to headlab and was not read"), std::string::npos) << r.out;
  auto clean = headlab_run("run --model " + kFamilies + "llama --text 'a b' --format json");
  EXPECT_EQ(clean.out.find("unknown to headlab"), std::string::npos) << "no note for a config whose keys are all known";
  fs::remove_all(dir);
}
