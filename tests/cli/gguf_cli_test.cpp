// Tests of GGUF in the CLI, run as a user runs it: `headlab export --gguf` writes a file, and
// `--model file.gguf` works where a model folder does (run, tokenize), with the same numbers.
#include <gtest/gtest.h>

#include <filesystem>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "testing/process.h"

using headlab::testing::headlab_run;

namespace {

std::string fixture(const std::string& name) { return std::string(HEADLAB_SOURCE_DIR) + "/tests/fixtures/gguf/" + name; }
// A path of this process's own (ctest runs tests side by side), under the temporary directory.
std::string temp(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("headlab-gguf-" + std::to_string(::getpid()) + "-" + name)).string();
}

nlohmann::json run_json(const std::string& model) {
  auto r = headlab_run("run --model " + model + " --text 'the theme in' --format json --logits");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  return nlohmann::json::parse(r.out, nullptr, false);
}

}  // namespace

TEST(GgufCli, ExportThenRunGivesTheFoldersTokensAndLogits) {
  const std::string out = temp("headlab_cli_export.gguf");
  auto e = headlab_run("export --gguf " + out + " --model " + fixture("gpt2_random"));
  ASSERT_EQ(e.exit_code, 0) << e.out;
  EXPECT_NE(e.out.find("gpt2, 2 layers, f32"), std::string::npos) << e.out;
  const nlohmann::json a = run_json(fixture("gpt2_random")), b = run_json(out);
  ASSERT_FALSE(a.is_discarded() || b.is_discarded());
  EXPECT_EQ(a["tokens"], b["tokens"]);
  EXPECT_EQ(a["logits"], b["logits"]);  // the F32 file holds the same weights bit for bit
}

TEST(GgufCli, TokenizeReadsTheTokenizerFromAGgufFile) {
  auto a = headlab_run("tokenize --model " + fixture("gpt2_random") + " --text 'the theme' --format ids");
  auto b = headlab_run("tokenize --model " + fixture("gpt2_random.q8_0.gguf") + " --text 'the theme' --format ids");
  ASSERT_EQ(a.exit_code, 0) << a.out;
  ASSERT_EQ(b.exit_code, 0) << b.out;
  EXPECT_EQ(a.out, b.out);
}

TEST(GgufCli, RunsLlamaCppsQuantizedLlama) {
  auto r = headlab_run("run --model " + fixture("llama_random.q4_k_m.gguf") + " --ids '40 5 258' --no-bos --layer 0 --head 1");
  EXPECT_EQ(r.exit_code, 0) << r.out;
}

TEST(GgufCli, ExportRefusesAnAttentionOnlyModelByName) {
  auto r = headlab_run("export --gguf " + temp("headlab_cli_attn_only.gguf") + " --model " + std::string(HEADLAB_SOURCE_DIR) +
                       "/models/headlab-tiny");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("headlab: error:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("attention-only"), std::string::npos) << r.out;
}

TEST(GgufCli, ALyingFileIsRefusedWithItsName) {
  const std::string bad = temp("headlab_cli_bad.gguf");
  std::FILE* f = std::fopen(bad.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  std::fwrite("GGUF\x03\0\0\0\xff\xff\xff\xff\xff\0\0\0\0\0\0\0\0\0\0\0", 1, 24, f);
  std::fclose(f);
  auto r = headlab_run("run --model " + bad + " --text hi");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("tensors but the file"), std::string::npos) << r.out;
}
