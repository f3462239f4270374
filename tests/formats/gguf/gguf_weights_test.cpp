// Tests of how a GGUF file's tensors become the weights (formats/gguf/gguf_architecture.h with
// LoadOptions): F16 and BF16 matrices stay 16-bit, quantized ones keep their blocks (or become
// f32 exactly), --dtype chooses, and the mapped file's pages do not stay resident beside the weights.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <unistd.h>

#include "formats/hf/checkpoint.h"
#include "formats/model_files.h"
#include "model/forward.h"
#include "formats/gguf/gguf_architecture.h"
#include "formats/gguf/gguf_export.h"

using namespace headlab::model;

namespace {

std::string gguf_fixture(const std::string& name) { return std::string(HEADLAB_SOURCE_DIR) + "/tests/fixtures/gguf/" + name; }

// The gpt2_random fixture folder exported as a GGUF file of `type`.
std::string exported(gguf::TensorType type, const std::string& file) {
  auto p = model_load(gguf_fixture("gpt2_random"));
  EXPECT_TRUE(p) << p.error().message;
  auto tables = gguf::tokenizer_tables_load(gguf_fixture("gpt2_random"));
  EXPECT_TRUE(tables) << tables.error().message;
  const std::string path =
      (std::filesystem::temp_directory_path() / ("headlab-gguf-weights-" + std::to_string(::getpid()) + "-" + file)).string();
  EXPECT_TRUE(gguf::export_model(path, *p, *tables, type));
  return path;
}

std::vector<float> logits_of(const Parameters& p) {
  ForwardOptions opt;
  ForwardOutput out;
  Workspace ws;
  const std::vector<int> ids = {1, 7, 3, 9, 4, 2};
  EXPECT_TRUE(forward(p, ids, opt, out, ws));
  return out.logits;
}

WeightType qkvw_type(const Parameters& p) { return parameters_matrix_type(p, parameters_index(&ParameterTensors::qkvw)); }

}  // namespace

TEST(GgufWeights, F16AndBf16FilesKeepTheirMatrices16BitAndWidenExactly) {
  for (auto [type, want] : {std::pair{gguf::TensorType::f16, WeightType::f16}, {gguf::TensorType::bf16, WeightType::bf16}}) {
    const std::string path = exported(type, std::string(weight_type_name(want)) + ".gguf");
    auto kept = model_load(path);
    ASSERT_TRUE(kept) << kept.error().message;
    EXPECT_EQ(qkvw_type(*kept), want);
    EXPECT_EQ(parameters_matrix_type(*kept, parameters_index(&ParameterTensors::wte)), want);
    EXPECT_FALSE(kept->rounded);
    auto wide = model_load(path, {.dtype = DtypeChoice::f32});
    ASSERT_TRUE(wide) << wide.error().message;
    EXPECT_EQ(qkvw_type(*wide), WeightType::f32);
    EXPECT_EQ(parameters_to_rows(*wide), parameters_to_rows(*kept));
    EXPECT_LT(parameters_bytes(*kept), parameters_bytes(*wide) * 6 / 10);
    const std::vector<float> a = logits_of(*kept), b = logits_of(*wide);
    double m = 0;
    for (std::size_t i = 0; i < a.size(); i++) m = std::max(m, double(std::fabs(a[i] - b[i])));
    EXPECT_LT(m, 1e-5) << weight_type_name(want);
    std::filesystem::remove(path);
  }
}

TEST(GgufWeights, AQuantizedFileKeepsItsBlocksUnderAutoAndBecomesF32ExactlyOrBf16RoundedWhenAsked) {
  const std::string q8 = gguf_fixture("gpt2_random.q8_0.gguf");
  auto kept = model_load(q8);
  ASSERT_TRUE(kept) << kept.error().message;
  EXPECT_EQ(qkvw_type(*kept), WeightType::q8_0);
  EXPECT_TRUE(parameters_quantized(*kept));
  EXPECT_FALSE(kept->rounded);
  auto exact = model_load(q8, {.dtype = DtypeChoice::f32});
  ASSERT_TRUE(exact) << exact.error().message;
  EXPECT_EQ(qkvw_type(*exact), WeightType::f32);
  EXPECT_FALSE(exact->rounded);
  EXPECT_EQ(parameters_to_rows(*kept), parameters_to_rows(*exact));
  auto half = model_load(q8, {.dtype = DtypeChoice::bf16});
  ASSERT_TRUE(half) << half.error().message;
  EXPECT_EQ(qkvw_type(*half), WeightType::bf16);
  EXPECT_TRUE(half->rounded);
  auto rows = model_load(q8, {.rows = true});
  ASSERT_TRUE(rows) << rows.error().message;
  EXPECT_EQ(rows->packed, nullptr);
  EXPECT_EQ(rows->memory, parameters_to_rows(*exact));
}

TEST(GgufWeights, KeptBlocksGiveTheLogitsOfTheirF32WideningBitForBitInAFractionOfTheMemory) {
  // llama.cpp's Q4_K_M leaves Q4_K, Q6_K, Q5_0 and Q8_0 tensors (c_attn's v of some layers in
  // another type than q and k: a matrix of bands); Q6_K; and Q8_0 beside an F16 matrix
  for (const char* name : {"llama_random.q4_k_m.gguf", "llama_random.q6_k.gguf", "gpt2_random.q8_0.gguf",
                           "qwen3_random.q8_0.gguf", "gemma3_random.q8_0.gguf"}) {
    auto kept = model_load(gguf_fixture(name));
    ASSERT_TRUE(kept) << name << ": " << kept.error().message;
    auto wide = model_load(gguf_fixture(name), {.dtype = DtypeChoice::f32});
    ASSERT_TRUE(wide) << name << ": " << wide.error().message;
    EXPECT_TRUE(parameters_quantized(*kept)) << name;
    EXPECT_FALSE(parameters_quantized(*wide)) << name;
    EXPECT_EQ(parameters_to_rows(*kept), parameters_to_rows(*wide)) << name;
    EXPECT_EQ(logits_of(*kept), logits_of(*wide)) << name;
    auto described = model_describe(gguf_fixture(name));
    ASSERT_TRUE(described) << described.error().message;
    EXPECT_TRUE(described->quantized);
    EXPECT_EQ(described->memory_bytes, parameters_bytes(*kept)) << name;
    std::printf("%s: %.2f MB kept as blocks, %.2f MB widened to f32\n", name, parameters_bytes(*kept) / 1e6,
                parameters_bytes(*wide) / 1e6);
    EXPECT_LT(parameters_bytes(*kept), parameters_bytes(*wide) * 6 / 10) << name;
  }
}

TEST(GgufWeights, ComputeQ8MovesTheLogitsOfAQuantizedFileALittleAndIsRefusedForAModelWithoutBlocks) {
  // --compute q8: the products with the blocks round their inputs to 8 bits (ops/matmul_quant_q8.h)
  for (const char* name : {"llama_random.q4_k_m.gguf", "llama_random.q6_k.gguf", "gpt2_random.q8_0.gguf"}) {
    auto f32 = model_load(gguf_fixture(name));
    auto q8 = model_load(gguf_fixture(name), {.compute = ComputeChoice::q8});
    ASSERT_TRUE(f32 && q8) << name;
    EXPECT_FALSE(parameters_quantizes_inputs(*f32)) << name;
    EXPECT_TRUE(parameters_quantizes_inputs(*q8)) << name;
    const std::vector<float> a = logits_of(*f32), b = logits_of(*q8);
    ASSERT_EQ(a.size(), b.size());
    float diff = 0.0f, lo = a[0], hi = a[0];
    for (std::size_t i = 0; i < a.size(); i++) {
      diff = std::max(diff, std::fabs(a[i] - b[i]));
      lo = std::min(lo, a[i]), hi = std::max(hi, a[i]);
    }
    std::printf("%s: --compute q8 moves the logits by at most %.4g (they span %.4g)\n", name, diff, hi - lo);
    EXPECT_GT(diff, 0.0f) << name;
    // 8-bit inputs move each product by about 0.5%; over these random models' layers the
    // logits move by 2-5% of their span (measured 2026-12-07: 1.5 of 60, 1.8 of 54, 1.0 of 19)
    EXPECT_LT(diff, 0.1f * (hi - lo)) << name;
  }
  auto none = model_load(gguf_fixture("gpt2_random"), {.compute = ComputeChoice::q8});
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code, headlab::ErrorCode::invalid_argument);
  EXPECT_NE(none.error().message.find("--compute q8"), std::string::npos) << none.error().message;
  auto widened = model_load(gguf_fixture("gpt2_random.q8_0.gguf"), {.dtype = DtypeChoice::f32, .compute = ComputeChoice::q8});
  EXPECT_FALSE(widened) << "--dtype f32 widens the blocks: nothing left for q8";
}
