// Tests for formats/hf/checkpoint.h and model/config.h: HF directories in, HF directories out,
// and the errors for inconsistent configs and lying weight files.
#include "formats/hf/checkpoint.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#include "testing/model_fixtures.h"
#include "model/forward.h"
#include "model/ops/matmul_packed.h"
#include "model/packed_weights.h"

using namespace headlab::model;
using headlab::ErrorCode;
using headlab::testing::fixture_dir;

namespace {

std::string tmp_dir(const std::string& name) {
  const std::string d = std::string(HEADLAB_BINARY_DIR) + "/tmp_" + name;
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

ModelConfig small_config() {
  ModelConfig c;
  c.n_layer = 2;
  c.n_head = 2;
  c.n_embd = 8;
  c.n_ctx = 6;
  c.vocab_size = 11;
  c.bos_token_id = c.eos_token_id = 10;
  return c;
}

// small_config() with or without MLP blocks and tying, random weights.
Parameters random_model(bool mlp, bool tied, std::uint64_t seed) {
  ModelConfig c = small_config();
  c.mlp = mlp;
  c.tied = tied;
  Parameters p = parameters_allocate(c);
  parameters_init_random(p, seed);
  return p;
}

}  // namespace

TEST(Checkpoint, LoadsEachFixtureDirectory) {
  for (const char* name : {"gpt2_tiny", "attn_only", "gpt2_wide"}) {
    auto p = checkpoint_load(fixture_dir(name));
    ASSERT_TRUE(p) << p.error().message;
  }
}

TEST(Checkpoint, SaveThenLoadGivesTheSameWeightsForEveryVariant) {
  for (bool mlp : {true, false})
    for (bool tied : {true, false}) {
      Parameters p = random_model(mlp, tied, 3);
      const std::string d = tmp_dir("ckpt_roundtrip");
      ASSERT_TRUE(checkpoint_save(d, p));
      auto q = checkpoint_load(d);
      ASSERT_TRUE(q) << q.error().message;
      EXPECT_EQ(q->config.mlp, mlp);
      EXPECT_EQ(q->config.tied, tied);
      EXPECT_EQ(parameters_to_rows(*q), p.memory) << "mlp " << mlp << " tied " << tied;
      // the file carries GPT2LMHeadModel's names and Conv1D shapes
      auto f = safetensors_read(d + "/model.safetensors");
      ASSERT_TRUE(f);
      ASSERT_NE(f->find("transformer.h.1.attn.c_attn.weight"), nullptr);
      EXPECT_EQ(f->find("transformer.h.1.attn.c_attn.weight")->shape, (std::vector<std::int64_t>{8, 24}));
      EXPECT_EQ(f->find("lm_head.weight") != nullptr, !tied);
    }
}

TEST(Checkpoint, LoadPacksTheMatricesOnceAndTheForwardAgreesWithTheRows) {
  for (bool mlp : {true, false})
    for (bool tied : {true, false}) {
      Parameters p = random_model(mlp, tied, 5);
      const std::string d = tmp_dir("ckpt_packed");
      ASSERT_TRUE(checkpoint_save(d, p));
      auto q = checkpoint_load(d);
      ASSERT_TRUE(q) << q.error().message;
      ASSERT_NE(q->packed, nullptr);
      // one copy: the matrices are not in memory beside their panels
      EXPECT_EQ(q->t.qkvw, nullptr);
      EXPECT_EQ(q->t.wte, nullptr);
      EXPECT_LT(q->memory.size(), p.memory.size() / 4);
      const std::vector<int> ids = {1, 2, 3, 4, 5, 6};
      ForwardOptions opt;
      opt.record.pattern = opt.record.head_out = true;
      ForwardOutput with, without;
      Workspace ws;
      ASSERT_TRUE(forward(*q, ids, opt, with, ws));
      parameters_unpack(*q);
      ASSERT_EQ(q->packed, nullptr);
      ASSERT_TRUE(forward(*q, ids, opt, without, ws));
      ASSERT_EQ(with.logits.size(), without.logits.size());
      for (std::size_t i = 0; i < with.logits.size(); i++)
        ASSERT_NEAR(with.logits[i], without.logits[i], 1e-5) << "mlp " << mlp << " tied " << tied << " at " << i;
      for (std::size_t i = 0; i < with.record.pattern.size(); i++)
        ASSERT_NEAR(with.record.pattern[i], without.record.pattern[i], 1e-5);
      for (std::size_t i = 0; i < with.record.head_out.size(); i++)
        ASSERT_NEAR(with.record.head_out[i], without.record.head_out[i], 1e-5);
    }
}

TEST(Checkpoint, DtypeBf16OrF16RoundsAnF32CheckpointsMatricesToNearestAndKeepsTheVectors) {
  Parameters p = random_model(true, false, 7);
  const std::string d = tmp_dir("ckpt_dtype_round");
  ASSERT_TRUE(checkpoint_save(d, p));
  for (DtypeChoice choice : {DtypeChoice::bf16, DtypeChoice::f16}) {
    auto q = checkpoint_load(d, {.dtype = choice});
    ASSERT_TRUE(q) << q.error().message;
    EXPECT_TRUE(q->rounded);
    const auto sizes = parameters_sizes(p.config);
    const auto list = parameters_list(p.t);
    for (int i = 0; i < kNumParameterTensors; i++) {
      const std::vector<float> got = parameters_tensor(*q, i);
      for (std::size_t j = 0; j < sizes[std::size_t(i)]; j++) {
        const float x = list[std::size_t(i)][j];
        const float want = !parameters_is_matrix(i)           ? x  // norms and biases stay float32
                           : choice == DtypeChoice::bf16      ? weight_from_bf16(weight_to_bf16(x))
                                                              : weight_from_f16(weight_to_f16(x));
        ASSERT_EQ(got[j], want) << dtype_choice_name(choice) << " " << parameters_name(i) << "[" << j << "]";
      }
    }
  }
  auto same = checkpoint_load(d, {.dtype = DtypeChoice::f32});
  ASSERT_TRUE(same);
  EXPECT_FALSE(same->rounded);
  EXPECT_EQ(parameters_to_rows(*same), p.memory);
}

TEST(Checkpoint, ComputeBf16RoundsTheInputsOfTheBf16MatricesOnlyAndMovesTheLogitsALittle) {
  Parameters p = random_model(true, false, 17);
  const std::string d = tmp_dir("ckpt_compute_bf16");
  ASSERT_TRUE(checkpoint_save(d, p));
  auto exact = checkpoint_load(d, {.dtype = DtypeChoice::bf16});
  auto rounded = checkpoint_load(d, {.dtype = DtypeChoice::bf16, .compute = ComputeChoice::bf16});
  auto wide = checkpoint_load(d, {.dtype = DtypeChoice::f32, .compute = ComputeChoice::bf16});
  ASSERT_TRUE(exact && rounded && wide);
  EXPECT_FALSE(parameters_rounds_inputs(*exact));
  EXPECT_TRUE(parameters_rounds_inputs(*rounded));
  EXPECT_FALSE(parameters_rounds_inputs(*wide));  // no bf16 matrix: nothing to round for
  EXPECT_EQ(parameters_set_compute(*wide, ComputeChoice::bf16), 0);
  const std::vector<int> ids = {1, 4, 2, 7, 3, 9};
  ForwardOptions opt;
  opt.record.pattern = true;
  ForwardOutput a, b;
  Workspace ws;
  ASSERT_TRUE(forward(*exact, ids, opt, a, ws));
  ASSERT_TRUE(forward(*rounded, ids, opt, b, ws));
  float logits = 0, pattern = 0;
  for (std::size_t i = 0; i < a.logits.size(); i++) logits = std::max(logits, std::fabs(a.logits[i] - b.logits[i]));
  for (std::size_t i = 0; i < a.record.pattern.size(); i++)
    pattern = std::max(pattern, std::fabs(a.record.pattern[i] - b.record.pattern[i]));
  EXPECT_GT(logits, 0.0f);  // the inputs were rounded
  EXPECT_LT(logits, 2e-2f);
  EXPECT_LT(pattern, 1e-2f);
}

TEST(ComputeChoice, ParsesF32Bf16AndQ8AndRefusesOthersNamingThem) {
  EXPECT_EQ(*compute_choice_parse("f32"), ComputeChoice::f32);
  EXPECT_EQ(*compute_choice_parse("bf16"), ComputeChoice::bf16);
  EXPECT_EQ(*compute_choice_parse("q8"), ComputeChoice::q8);
  EXPECT_EQ(compute_choice_name(ComputeChoice::q8), "q8");
  for (const char* bad : {"", "auto", "f16", "BF16", "int8"}) {
    auto r = compute_choice_parse(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_NE(r.error().message.find("f32, bf16, q8"), std::string::npos) << r.error().message;
  }
}

TEST(Checkpoint, DtypeF16RefusesAWeightItCannotHoldNamingTheTensor) {
  Parameters p = random_model(true, true, 8);
  p.t.fcw[3] = 70000.0f;  // IEEE half reaches 65504
  const std::string d = tmp_dir("ckpt_dtype_f16_range");
  ASSERT_TRUE(checkpoint_save(d, p));
  auto r = checkpoint_load(d, {.dtype = DtypeChoice::f16});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::unsupported);
  EXPECT_NE(r.error().message.find("\"transformer.h.0.mlp.c_fc.weight\" holds 70000"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("--dtype bf16 or f32"), std::string::npos) << r.error().message;
  EXPECT_TRUE(checkpoint_load(d, {.dtype = DtypeChoice::bf16}));  // bfloat16 has float32's range
}

TEST(Checkpoint, RowsForTrainingRefuseA16BitDtype) {
  Parameters p = random_model(true, true, 9);
  const std::string d = tmp_dir("ckpt_rows_dtype");
  ASSERT_TRUE(checkpoint_save(d, p));
  auto r = checkpoint_load(d, {.dtype = DtypeChoice::bf16, .rows = true});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::invalid_argument);
  auto rows = checkpoint_load(d, {.rows = true});
  ASSERT_TRUE(rows);
  EXPECT_EQ(rows->packed, nullptr);
  EXPECT_EQ(rows->memory, p.memory);
}

TEST(DtypeChoice, ParsesTheFourValuesAndRefusesOthersNamingThem) {
  EXPECT_EQ(*dtype_choice_parse("auto"), DtypeChoice::keep);
  EXPECT_EQ(*dtype_choice_parse("f32"), DtypeChoice::f32);
  EXPECT_EQ(*dtype_choice_parse("bf16"), DtypeChoice::bf16);
  EXPECT_EQ(*dtype_choice_parse("f16"), DtypeChoice::f16);
  for (const char* bad : {"", "fp16", "F16", "q8_0", "float32"}) {
    auto r = dtype_choice_parse(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error().code, ErrorCode::invalid_argument);
    EXPECT_NE(r.error().message.find("auto, f32, bf16, f16"), std::string::npos) << r.error().message;
  }
}

TEST(Checkpoint, SavesInHalfPrecision) {
  Parameters p = parameters_allocate(small_config());
  parameters_init_random(p, 3);
  const std::string d = tmp_dir("ckpt_bf16");
  ASSERT_TRUE(checkpoint_save(d, p, Dtype::BF16));
  auto q = checkpoint_load(d);
  ASSERT_TRUE(q);
  const std::vector<float> back = parameters_to_rows(*q);
  for (std::size_t i = 0; i < p.memory.size(); i++)
    ASSERT_NEAR(back[i], p.memory[i], std::fabs(p.memory[i]) / 256 + 1e-30);
}

TEST(Checkpoint, RejectsAMissingTensorNamingIt) {
  Parameters p = parameters_allocate(small_config());
  const std::string d = tmp_dir("ckpt_missing");
  ASSERT_TRUE(checkpoint_save(d, p));
  // claim three layers: h.2.* is missing
  ModelConfig c = small_config();
  c.n_layer = 3;
  ASSERT_TRUE(config_save(c, d + "/config.json"));
  auto r = checkpoint_load(d);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::corrupt);
  EXPECT_NE(r.error().message.find("model.safetensors: missing tensor \"h.2.ln_1.weight\""), std::string::npos)
      << r.error().message;
}

TEST(Checkpoint, RejectsTensorsTheConfigDoesNotDescribe) {
  Parameters p = parameters_allocate(small_config());
  const std::string d = tmp_dir("ckpt_extra");
  ASSERT_TRUE(checkpoint_save(d, p));
  ModelConfig c = small_config();
  c.n_layer = 1;
  ASSERT_TRUE(config_save(c, d + "/config.json"));
  auto r = checkpoint_load(d);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("unexpected tensor \"transformer.h.1."), std::string::npos) << r.error().message;
}

TEST(Checkpoint, RejectsAWrongShape) {
  Parameters p = parameters_allocate(small_config());
  const std::string d = tmp_dir("ckpt_shape");
  ASSERT_TRUE(checkpoint_save(d, p));
  ModelConfig c = small_config();
  c.vocab_size = 12;
  ASSERT_TRUE(config_save(c, d + "/config.json"));
  auto r = checkpoint_load(d);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("\"transformer.wte.weight\" has shape (11, 8), config.json implies (12, 8)"),
            std::string::npos)
      << r.error().message;
  EXPECT_NE(r.error().message.find("config.json's vocab_size is 12 but the weights hold 11 tokens"), std::string::npos)
      << r.error().message;
}

// The shapes are checked against the file's header before anything is allocated: the
// weights this config claims (about 2e14 bytes) could never be allocated, so reaching the
// shape message proves the check came first.
TEST(Checkpoint, RefusesALyingConfigByItsTensorBeforeAllocating) {
  Parameters p = parameters_allocate(small_config());
  const std::string d = tmp_dir("ckpt_lying_sizes");
  ASSERT_TRUE(checkpoint_save(d, p));
  auto file = safetensors_open(d + "/model.safetensors");
  ASSERT_TRUE(file) << file.error().message;
  ModelConfig c = small_config();
  c.n_layer = 1024;
  c.n_embd = 65536;
  ASSERT_TRUE(config_validate(c));
  auto r = checkpoint_from_safetensors(c, *file);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::corrupt);
  EXPECT_NE(r.error().message.find("\"transformer.wte.weight\" has shape (11, 8), config.json implies (11, 65536): "
                                   "config.json's n_embd is 65536 but the weights have 8 channels"),
            std::string::npos)
      << r.error().message;
}

TEST(Checkpoint, AMissingLayerSaysHowManyLayersTheFileHolds) {
  Parameters p = parameters_allocate(small_config());
  const std::string d = tmp_dir("ckpt_layers");
  ASSERT_TRUE(checkpoint_save(d, p));
  ModelConfig c = small_config();
  c.n_layer = 1000;
  ASSERT_TRUE(config_save(c, d + "/config.json"));
  auto r = checkpoint_load(d);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("config.json's n_layer is 1000 but the weights hold 2 layers"), std::string::npos)
      << r.error().message;
}

TEST(Checkpoint, AnIntegerTensorIsRefusedBeforeAllocating) {
  const std::string d = tmp_dir("ckpt_int");
  Parameters p = parameters_allocate(small_config());
  ASSERT_TRUE(checkpoint_save(d, p));
  auto file = safetensors_open(d + "/model.safetensors");
  ASSERT_TRUE(file);
  for (SafetensorsTensor& t : file->tensors)
    if (t.name == "transformer.ln_f.bias") t.dtype = Dtype::I32;  // 4 bytes, as F32
  auto r = checkpoint_from_safetensors(small_config(), *file);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::unsupported);
  EXPECT_NE(r.error().message.find("\"transformer.ln_f.bias\" has dtype I32"), std::string::npos) << r.error().message;
}

// GPT-2 small: 124M weights, its matrices (85M in the blocks, 39M in wte) packed once in
// their type, the rest (wpe, norms, biases: 0.9M) as float32.
TEST(Checkpoint, MemoryBytesCountEachMatrixOnceInItsType) {
  const ModelConfig c = config_gpt2_small();
  const std::uint64_t matrices = 12ull * 12 * 768 * 768 + 50272ull * 768;  // wte padded to 1,571 panels
  const std::uint64_t rest = parameters_count(c) - (12ull * 12 * 768 * 768 + 50257ull * 768);
  EXPECT_EQ(checkpoint_memory_bytes(c, matrix_types_all(WeightType::f32)), 4 * (matrices + rest));
  EXPECT_EQ(checkpoint_memory_bytes(c, matrix_types_all(WeightType::bf16)), 2 * matrices + 4 * rest);
  EXPECT_EQ(checkpoint_types_text(c, matrix_types_all(WeightType::f32)), " as float32");
  EXPECT_EQ(checkpoint_types_text(c, matrix_types_all(WeightType::bf16)), "; its matrices as bf16, the rest as float32");
}

TEST(Checkpoint, RejectsNaNWeights) {
  Parameters p = parameters_allocate(small_config());
  p.t.qkvw[5] = std::numeric_limits<float>::quiet_NaN();
  const std::string d = tmp_dir("ckpt_nan");
  ASSERT_TRUE(checkpoint_save(d, p));
  auto r = checkpoint_load(d);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::corrupt);
  EXPECT_NE(r.error().message.find("\"transformer.h.0.attn.c_attn.weight\" holds a non-finite value"), std::string::npos)
      << r.error().message;
  EXPECT_EQ(parameters_find_nonfinite(p), "qkvw[5]");
}

TEST(Checkpoint, UntiedModelWithoutLmHeadIsAClearError) {
  Parameters p = parameters_allocate(small_config());
  const std::string d = tmp_dir("ckpt_lm_head");
  ASSERT_TRUE(checkpoint_save(d, p));
  ModelConfig c = small_config();
  c.tied = false;
  ASSERT_TRUE(config_save(c, d + "/config.json"));
  auto r = checkpoint_load(d);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("missing tensor \"lm_head.weight\""), std::string::npos) << r.error().message;
}

TEST(Checkpoint, MissingDirectoryOrFiles) {
  EXPECT_EQ(checkpoint_load("/nonexistent").error().code, ErrorCode::not_found);
  const std::string d = tmp_dir("ckpt_empty");
  auto r = checkpoint_load(d);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("config.json"), std::string::npos);
  ASSERT_TRUE(config_save(small_config(), d + "/config.json"));
  auto s = checkpoint_load(d);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("model.safetensors"), std::string::npos);
  EXPECT_EQ(checkpoint_save("/proc/no/such/dir", parameters_allocate(small_config())).error().code, ErrorCode::io_error);
}

TEST(Checkpoint, AMissingPathIsNoSuchFileAndAFileIsNotADirectory) {
  auto missing = checkpoint_load("/nonexistent/model");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::not_found);
  EXPECT_NE(missing.error().message.find("/nonexistent/model: no such file or directory"), std::string::npos)
      << missing.error().message;
  const std::string d = tmp_dir("ckpt_file");
  std::ofstream(d + "/plain") << "x";
  auto file = checkpoint_describe(d + "/plain");
  ASSERT_FALSE(file);
  EXPECT_NE(file.error().message.find("/plain: not a directory"), std::string::npos) << file.error().message;
}

// Qwen 3's fixture (4 heads of 32 over C = 64) without head_dim: the config's heads are
// C / NH = 16 wide, and q_proj's rows (128) say 32. The message names head_dim, not n_embd.
TEST(Checkpoint, AMissingHeadDimIsNamedNotBlamedOnNEmbd) {
  const std::string src = std::string(HEADLAB_SOURCE_DIR) + "/tests/fixtures/model/families/qwen3";
  const std::string d = tmp_dir("ckpt_no_head_dim");
  std::filesystem::copy_file(src + "/model.safetensors", d + "/model.safetensors");
  std::ifstream in(src + "/config.json");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::size_t at = text.find("\"head_dim\": 32,");
  ASSERT_NE(at, std::string::npos);
  text.erase(at, std::string("\"head_dim\": 32,").size());
  std::ofstream(d + "/config.json") << text;
  auto r = checkpoint_load(d);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("config.json gives no head_dim, so a head is n_embd / n_head = 16 wide, but the "
                                   "weights hold heads of 32 (add \"head_dim\": 32)"),
            std::string::npos)
      << r.error().message;
  EXPECT_EQ(r.error().message.find("n_embd is"), std::string::npos) << r.error().message;
}

TEST(Checkpoint, TruncatedWeightsFileIsCorrupt) {
  Parameters p = parameters_allocate(small_config());
  const std::string d = tmp_dir("ckpt_trunc");
  ASSERT_TRUE(checkpoint_save(d, p));
  std::filesystem::resize_file(d + "/model.safetensors", std::filesystem::file_size(d + "/model.safetensors") - 10);
  auto r = checkpoint_load(d);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::corrupt);
  EXPECT_NE(r.error().message.find("model.safetensors: tensor"), std::string::npos) << r.error().message;
}

TEST(ModelConfig, ParsesHuggingFaceGpt2Config) {
  // the keys of the hub's gpt2/config.json
  auto c = config_parse(R"({"activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"],
    "attn_pdrop": 0.1, "bos_token_id": 50256, "embd_pdrop": 0.1, "eos_token_id": 50256,
    "initializer_range": 0.02, "layer_norm_epsilon": 1e-05, "model_type": "gpt2", "n_ctx": 1024,
    "n_embd": 768, "n_head": 12, "n_layer": 12, "n_positions": 1024, "resid_pdrop": 0.1,
    "summary_activation": null, "summary_first_dropout": 0.1, "summary_proj_to_labels": true,
    "summary_type": "cls_index", "summary_use_proj": true,
    "task_specific_params": {"text-generation": {"do_sample": true, "max_length": 50}},
    "vocab_size": 50257})",
                        "gpt2/config.json");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->n_layer, 12);
  EXPECT_EQ(c->n_ctx, 1024);
  EXPECT_EQ(c->vocab_size, 50257);
  EXPECT_TRUE(c->tied);
  EXPECT_TRUE(c->mlp);
  auto again = config_parse(config_to_json(*c), "again");
  ASSERT_TRUE(again);
  EXPECT_EQ(again->n_embd, 768);
}

TEST(ModelConfig, RejectsInconsistentConfigsNamingTheField) {
  auto msg = [](const std::string& json) {
    auto r = config_parse(json, "config.json");
    EXPECT_FALSE(r) << json;
    return r ? std::string() : r.error().message;
  };
  EXPECT_NE(msg(R"({"n_embd": 100, "n_head": 12})").find("n_embd (100) must be divisible by n_head (12)"), std::string::npos);
  EXPECT_NE(msg(R"({"n_layer": 0})").find("n_layer must be positive"), std::string::npos);
  EXPECT_NE(msg(R"({"n_head": -1})").find("n_head must be positive"), std::string::npos);
  EXPECT_NE(msg(R"({"n_embd": 0})").find("n_embd must be positive"), std::string::npos);
  EXPECT_NE(msg(R"({"n_positions": 0})").find("n_ctx must be positive"), std::string::npos);
  EXPECT_NE(msg(R"({"vocab_size": 0})").find("vocab_size must be positive"), std::string::npos);
  EXPECT_NE(msg(R"({"vocab_size": 100})").find("bos_token_id 50256 is outside the vocabulary"), std::string::npos);
  EXPECT_NE(msg(R"({"vocab_size": 100, "bos_token_id": 1})").find("eos_token_id 50256"), std::string::npos);
  EXPECT_NE(msg(R"({"layer_norm_epsilon": 0})").find("layer_norm_epsilon\" must be a number between 0 and 1"), std::string::npos);
  EXPECT_NE(msg(R"({"n_layer": 100000})").find("implausibly large"), std::string::npos);
  EXPECT_NE(msg(R"({"n_layer": "twelve"})").find("whole number"), std::string::npos);
  // Found by the model_config fuzzer: floats and huge integers must not reach an int.
  EXPECT_NE(msg(R"({"n_layer": 3.44444e+106})").find("\"n_layer\" must be a whole number"), std::string::npos);
  EXPECT_NE(msg(R"({"n_embd": 2.5})").find("\"n_embd\" must be a whole number"), std::string::npos);
  EXPECT_NE(msg(R"({"vocab_size": 4294967297})").find("\"vocab_size\" must be a whole number that fits"), std::string::npos);
  EXPECT_NE(msg(R"({"layer_norm_epsilon": 1e300})").find("between 0 and 1"), std::string::npos);
  EXPECT_NE(msg("{oops").find("not valid JSON"), std::string::npos);
  EXPECT_NE(msg("[]").find("expected a JSON object"), std::string::npos);
  EXPECT_NE(msg(R"({"model_type": "phi3"})").find("model_type \"phi3\" is not supported"), std::string::npos);
  EXPECT_NE(msg(R"({"activation_function": "relu"})").find("activation_function \"relu\""), std::string::npos);
  EXPECT_NE(msg(R"({"n_inner": 100})").find("n_inner"), std::string::npos);
  EXPECT_EQ(config_load("/nonexistent/config.json").error().code, ErrorCode::not_found);
  EXPECT_EQ(config_save(small_config(), "/nonexistent/config.json").error().code, ErrorCode::io_error);
}

TEST(Parameters, LayoutCoversTheBufferWithoutOverlap) {
  for (bool mlp : {true, false})
    for (bool tied : {true, false}) {
      ModelConfig c = small_config();
      c.mlp = mlp;
      c.tied = tied;
      auto sizes = parameters_sizes(c);
      std::size_t total = 0;
      for (auto s : sizes) total += s;
      EXPECT_EQ(total, parameters_count(c));
      // a real buffer (offsets from a null base would be undefined behaviour)
      std::vector<float> buffer(parameters_count(c));
      ParameterTensors t = parameters_point(buffer.data(), c);
      auto list = parameters_list(t);
      EXPECT_EQ(list[0], buffer.data());
      for (int i = 0; i + 1 < kNumParameterTensors; i++) EXPECT_EQ(list[i] + sizes[i], list[i + 1]);
      EXPECT_EQ(list[kNumParameterTensors - 1] + sizes[kNumParameterTensors - 1], buffer.data() + buffer.size());
    }
  EXPECT_EQ(parameters_count(config_gpt2_small()), 124439808u);  // GPT-2 small: 124M
  EXPECT_EQ(parameters_name(4), "qkvw");
}
