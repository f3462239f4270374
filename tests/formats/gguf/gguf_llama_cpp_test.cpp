// Tests of headlab's GGUF files against llama.cpp (tools/reference/make_llama_fixtures.py):
// headlab's exports load back with the same weights, and headlab computes on llama.cpp's own
// quantizations of them the logits llama.cpp computes. Tolerances, as max |difference| of the
// logits:
//   GPT-2 files   1e-2 (logits span about +-15): llama.cpp's CPU GELU reads a float16 table
//                 (ggml-cpu/vec.h, GGML_GELU_FP16), so it rounds each MLP input to half
//                 precision; headlab computes GELU in float32
//   Llama files   5e-4 (logits span -29 .. 51): the same float32 maths in another order
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <unistd.h>

#include "formats/model_files.h"
#include "tokenizer/bpe_tokenizer.h"
#include "formats/hf/checkpoint.h"
#include "testing/model_fixtures.h"
#include "model/forward.h"
#include "formats/gguf/gguf_architecture.h"
#include "formats/gguf/gguf_export.h"
#include "formats/gguf/gguf_file.h"

using namespace headlab::model;
using headlab::Status;
using headlab::testing::read_json_file;

namespace {

std::string gguf_fixture(const std::string& name) { return std::string(HEADLAB_SOURCE_DIR) + "/tests/fixtures/gguf/" + name; }

const nlohmann::json& expected() {
  static const nlohmann::json j = read_json_file(gguf_fixture("expected.json"));
  return j;
}

std::vector<int> ids() { return expected()["ids"].get<std::vector<int>>(); }

std::vector<float> logits_of(const Parameters& p) {
  ForwardOptions opt;
  ForwardOutput out;
  Workspace ws;
  const std::vector<int> x = ids();
  Status s = forward(p, x, opt, out, ws);
  EXPECT_TRUE(s) << (s ? "" : s.error().message);
  return out.logits;
}

// max |headlab - llama.cpp| over every position's logits
double max_diff_to_llama_cpp(const std::vector<float>& got, const std::string& name) {
  const nlohmann::json& ref = expected()["logits"][name];
  EXPECT_EQ(ref.size(), ids().size());
  double m = 0;
  const std::size_t V = ref[0].size();
  EXPECT_EQ(got.size(), ref.size() * V);
  for (std::size_t t = 0; t < ref.size(); t++)
    for (std::size_t v = 0; v < V && t * V + v < got.size(); v++)
      m = std::max(m, std::fabs(double(got[t * V + v]) - ref[t][v].get<double>()));
  return m;
}

Parameters load_gguf(const std::string& path) {
  auto p = model_load(path);
  if (!p) throw std::runtime_error(p.error().message);
  return std::move(*p);
}

std::string exported(const std::string& file, gguf::TensorType type, const std::string& dir = "gpt2_random") {
  auto p = model_load(gguf_fixture(dir));
  EXPECT_TRUE(p) << p.error().message;
  auto tables = gguf::tokenizer_tables_load(gguf_fixture(dir));
  EXPECT_TRUE(tables) << tables.error().message;
  const std::string path =
      (std::filesystem::temp_directory_path() / ("headlab-gguf-" + std::to_string(::getpid()) + "-" + file)).string();
  Status s = gguf::export_model(path, *p, *tables, type);
  EXPECT_TRUE(s) << (s ? "" : s.error().message);
  return path;
}

}  // namespace

TEST(GgufExport, F32FileLoadsBackWithTheSameWeightsBitForBit) {
  auto original = model_load(gguf_fixture("gpt2_random"));
  ASSERT_TRUE(original) << original.error().message;
  Parameters back = load_gguf(exported("headlab_gguf_roundtrip.gguf", gguf::TensorType::f32));
  EXPECT_EQ(parameters_to_rows(back), parameters_to_rows(*original));
  EXPECT_EQ(back.config.n_layer, original->config.n_layer);
  EXPECT_EQ(back.config.tied, original->config.tied);
  EXPECT_EQ(back.config.eos_token_id, original->config.eos_token_id);
}

TEST(GgufExport, F32FileGivesLlamaCppsLogits) {
  const double d = max_diff_to_llama_cpp(logits_of(load_gguf(exported("headlab_gguf_f32.gguf", gguf::TensorType::f32))),
                                         "gpt2_random.f32");
  std::printf("headlab's F32 export: max |headlab - llama.cpp| = %.3g\n", d);
  EXPECT_LT(d, 1e-2);
}

TEST(GgufExport, F16FileGivesLlamaCppsLogits) {
  const double d = max_diff_to_llama_cpp(logits_of(load_gguf(exported("headlab_gguf_f16.gguf", gguf::TensorType::f16))),
                                         "gpt2_random.f16");
  std::printf("headlab's F16 export: max |headlab - llama.cpp| = %.3g\n", d);
  EXPECT_LT(d, 1e-2);
}

// Qwen2 (GQA, q/k/v biases, NeoX rotary: no row permutation) and GPT-NeoX (a quarter of each
// head rotated, fused q/k/v, parallel residual). GPT-NeoX's bound is looser: headlab computes
// Pythia's erf GELU, llama.cpp its tanh form through a float16 table.
struct ExportCase {
  const char* dir;
  double tolerance;
};

class GgufExportFamilies : public ::testing::TestWithParam<ExportCase> {};

TEST_P(GgufExportFamilies, FileGivesTheFoldersLogitsAndLlamaCpps) {
  const ExportCase& c = GetParam();
  auto folder = model_load(gguf_fixture(c.dir));
  ASSERT_TRUE(folder) << folder.error().message;
  const std::vector<float> got = logits_of(load_gguf(exported(std::string("headlab_gguf_") + c.dir + ".gguf",
                                                              gguf::TensorType::f32, c.dir)));
  EXPECT_EQ(got, logits_of(*folder));
  const double d = max_diff_to_llama_cpp(got, std::string(c.dir) + ".f32");
  std::printf("headlab's %s export: max |headlab - llama.cpp| = %.3g\n", c.dir, d);
  EXPECT_LT(d, c.tolerance);
}

INSTANTIATE_TEST_SUITE_P(Families, GgufExportFamilies,
                         ::testing::Values(ExportCase{"qwen2_random", 5e-4}, ExportCase{"pythia_random", 1e-2}));

// The families llama.cpp has its own graph for beyond GPT-2, GPT-NeoX, Llama and Qwen 2: each
// random model (tools/reference/make_llama_fixtures.py: FAMILY_MODELS) exported by headlab, run
// by llama.cpp, and checked three ways: headlab on the GGUF file against headlab on the folder
// it came from, against the PyTorch reference of that folder ("reference", float64), and
// against llama.cpp's logits on the file. The bounds, as max |difference| (logits span about
// +-5 to +-15):
//   the folder       1e-5: the same float32 maths; Gemma's norms come back as (1 + w) - 1
//   the reference    1e-4, the bar of the family fixtures
//   llama.cpp        FamilyCase::llama_cpp: llama.cpp's tanh GELU reads a float16 table
//                    (GGML_GELU_FP16), so Gemma's GeGLU carries its rounding
struct FamilyCase {
  const char* dir;
  double llama_cpp;
};

class GgufFamiliesAgainstLlamaCpp : public ::testing::TestWithParam<FamilyCase> {};

TEST_P(GgufFamiliesAgainstLlamaCpp, FileGivesTheFoldersTheReferencesAndLlamaCppsLogits) {
  const FamilyCase& c = GetParam();
  auto folder = model_load(gguf_fixture(c.dir));
  ASSERT_TRUE(folder) << folder.error().message;
  const std::vector<float> got = logits_of(load_gguf(exported(std::string("headlab_gguf_") + c.dir + ".gguf",
                                                              gguf::TensorType::f32, c.dir)));
  const std::vector<float> from_folder = logits_of(*folder);
  ASSERT_EQ(got.size(), from_folder.size());
  double to_folder = 0;
  for (std::size_t i = 0; i < got.size(); i++) to_folder = std::max(to_folder, std::fabs(double(got[i]) - from_folder[i]));
  const nlohmann::json& ref = expected()["reference"][c.dir];
  ASSERT_EQ(ref.size() * ref[0].size(), got.size());
  double to_reference = 0;
  for (std::size_t t = 0; t < ref.size(); t++)
    for (std::size_t v = 0; v < ref[t].size(); v++)
      to_reference = std::max(to_reference, std::fabs(double(got[t * ref[t].size() + v]) - ref[t][v].get<double>()));
  const double to_llama_cpp = max_diff_to_llama_cpp(got, std::string(c.dir) + ".f32");
  std::printf("headlab's %s export: max |GGUF - folder| = %.3g, |GGUF - PyTorch| = %.3g, |GGUF - llama.cpp| = %.3g\n",
              c.dir, to_folder, to_reference, to_llama_cpp);
  EXPECT_LT(to_folder, 1e-5);
  EXPECT_LT(to_reference, 1e-4);
  EXPECT_LT(to_llama_cpp, c.llama_cpp);
}

INSTANTIATE_TEST_SUITE_P(Families, GgufFamiliesAgainstLlamaCpp,
                         ::testing::Values(FamilyCase{"qwen3_random", 5e-4}, FamilyCase{"gemma2_random", 1e-2},
                                           FamilyCase{"gemma3_random", 1e-2}, FamilyCase{"llama3_random", 5e-4},
                                           FamilyCase{"mistral_random", 5e-4}));

// The rope_freqs.weight of the Llama 3.1 export is what makes llama.cpp's logits: without its
// divisors (the frequencies unscaled) headlab is far from llama.cpp, with them within 1e-5.
TEST(GgufLlamaCpp, RopeFreqsOfLlama3AreWhatLlamaCppRotatesBy) {
  Parameters p = load_gguf(exported("headlab_gguf_llama3_freqs.gguf", gguf::TensorType::f32, "llama3_random"));
  ASSERT_EQ(p.config.rope_freq_factors.size(), std::size_t(p.config.head_size() / 2));
  const double with = max_diff_to_llama_cpp(logits_of(p), "llama3_random.f32");
  p.config.rope_freq_factors.clear();
  const double without = max_diff_to_llama_cpp(logits_of(p), "llama3_random.f32");
  std::printf("Llama 3.1 export against llama.cpp: %.3g with rope_freqs.weight, %.3g without\n", with, without);
  EXPECT_LT(with, 1e-4);
  EXPECT_GT(without, 1e-2);
}

// On a quantized file llama.cpp rounds each matrix product's input vector to 8 bits as well
// (Q8_0 or Q8_K, its vec_dot types), so its logits carry that error on top of the weights';
// headlab keeps float32 activations. The exact comparison is therefore with llama.cpp on the
// same file dequantized by llama.cpp to F32 ("<name>.dequantized"), which checks headlab's
// dequantizers and the architecture mapping together; the comparison with llama.cpp's own run
// on the quantized file has a looser bound, of the size of that activation rounding.
struct QuantizedCase {
  const char* file;
  const char* types;
  double exact;   // against "<file>.dequantized"
  double own;     // against llama.cpp on the quantized file itself
};

class GgufLlamaCppQuantized : public ::testing::TestWithParam<QuantizedCase> {};

TEST_P(GgufLlamaCppQuantized, MatchesLlamaCppOnTheSameWeights) {
  const QuantizedCase& c = GetParam();
  const std::vector<float> got = logits_of(load_gguf(gguf_fixture(std::string(c.file) + ".gguf")));
  const double exact = max_diff_to_llama_cpp(got, std::string(c.file) + ".dequantized");
  const double own = max_diff_to_llama_cpp(got, c.file);
  std::printf("%s (%s): max |headlab - llama.cpp| = %.3g on llama.cpp's dequantized weights, %.3g on its quantized run\n",
              c.file, c.types, exact, own);
  EXPECT_LT(exact, c.exact);
  EXPECT_LT(own, c.own);
}

INSTANTIATE_TEST_SUITE_P(
    Files, GgufLlamaCppQuantized,
    ::testing::Values(QuantizedCase{"gpt2_random.q8_0", "Q8_0", 1e-2, 0.5},
                      QuantizedCase{"llama_random.q4_k_m", "Q4_K, Q6_K, Q5_0, Q8_0", 5e-4, 3.0},
                      QuantizedCase{"llama_random.q6_k", "Q6_K, Q8_0", 5e-4, 4.0},
                      // ffn_down (48 inputs) is F16 there: Q8_0's blocks of 32 do not cover it. Gemma's
                      // bound is llama.cpp's F16 table of GELU (about 1e-3 on these logits).
                      QuantizedCase{"qwen3_random.q8_0", "Q8_0, F16", 1e-4, 0.5},
                      QuantizedCase{"gemma2_random.q8_0", "Q8_0, F16", 3e-3, 0.5},
                      QuantizedCase{"gemma3_random.q8_0", "Q8_0, F16", 3e-3, 0.5}));

TEST(GgufLlamaCpp, QuantizationErrorGrowsAsTheBitsShrink) {
  // the quantization's own error, for scale: against llama.cpp on headlab's F32 Llama export
  const double q6 = max_diff_to_llama_cpp(logits_of(load_gguf(gguf_fixture("llama_random.q6_k.gguf"))), "llama_random.f32");
  const double q4 = max_diff_to_llama_cpp(logits_of(load_gguf(gguf_fixture("llama_random.q4_k_m.gguf"))), "llama_random.f32");
  std::printf("quantization error against F32 (logits span -29 .. 51): Q6_K %.3g, Q4_K_M %.3g\n", q6, q4);
  EXPECT_LT(q6, q4);
}

TEST(GgufLlamaCpp, TokenizerFromTheMetadataMatchesTheFolders) {
  auto from_dir = model_tokenizer_load(gguf_fixture("gpt2_random"));
  ASSERT_TRUE(from_dir) << from_dir.error().message;
  auto from_file = model_tokenizer_load(gguf_fixture("gpt2_random.q8_0.gguf"));
  ASSERT_TRUE(from_file) << from_file.error().message;
  EXPECT_EQ(from_file->vocab_size(), from_dir->vocab_size());
  for (const char* text : {"the theme in a thin hat", "  two  spaces\nand a newline", "caf\xc3\xa9 <|endoftext|> \xe2\x9c\x93"}) {
    auto a = from_dir->encode_ids(text), b = from_file->encode_ids(text);
    ASSERT_TRUE(a && b);
    EXPECT_EQ(*a, *b) << text;
  }
}
