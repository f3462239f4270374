// Tests of the architecture mapping (formats/gguf/gguf_architecture.h): each family's weights
// survive a write and a read bit for bit (llama's q/k rows permuted on the way out and back;
// Gemma's norms stored as 1 + w, back to w within float rounding), the config read back is the
// model's, and what headlab or llama.cpp cannot honour is refused by name, both ways.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <unistd.h>

#include "model/forward.h"
#include "formats/gguf/gguf_architecture.h"
#include "formats/gguf/gguf_writer.h"

using namespace headlab::model;
using namespace headlab::model::gguf;
using headlab::ErrorCode;

namespace {

ModelConfig family(const std::string& name) {
  ModelConfig c;
  c.n_layer = 2, c.n_head = 4, c.n_embd = 32, c.n_ctx = 16, c.vocab_size = 40;
  c.bos_token_id = c.eos_token_id = 1;
  c.family = name;
  if (name == "gpt2") return c;
  c.positions = ModelConfig::Positions::rotary;
  if (name == "gpt_neox") {
    c.mlp_kind = ModelConfig::Mlp::gelu_erf;
    c.parallel_residual = true;
    c.rotary_dim = 4;
    c.d_mlp = 48;
    c.tied = false;
    return c;
  }
  c.norm = ModelConfig::Norm::rmsnorm;
  c.mlp_kind = ModelConfig::Mlp::swiglu;
  c.n_kv_head = 2, c.d_mlp = 24, c.head_dim = name == "qwen2" ? 8 : 12;  // llama.cpp's qwen2 needs NH HS = C
  c.qkv_bias = name == "qwen2";
  c.attn_out_bias = c.mlp_bias = false;
  c.tied = name == "qwen2" || name == "qwen3";
  c.qk_norm = name == "qwen3" || name == "gemma3";
  if (name == "gemma2" || name == "gemma3") {
    c.mlp_kind = ModelConfig::Mlp::geglu;
    c.norm_plus_one = c.sandwich_norm = c.embed_scale = true;
    c.tied = true;
    c.query_pre_attn_scalar = 12.0f;  // = HS, as llama.cpp derives it
    c.sliding_window = 3;
    c.sliding_layers = {1, 0};
    if (name == "gemma2") c.attn_softcap = 20.0f, c.final_softcap = 10.0f;
    if (name == "gemma3") c.n_layer = 3, c.sliding_layers = {1, 1, 0}, c.rope_local_theta = 1000.0f, c.rope_linear_factor = 4.0f;
  }
  return c;
}

// A path of this process's own (ctest runs tests side by side), under the temporary directory.
std::string temp(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("headlab-gguf-" + std::to_string(::getpid()) + "-" + name)).string();
}

std::vector<Metadata> metadata_of(const Parameters& p) {
  auto m = metadata_for_file(p);
  EXPECT_TRUE(m) << m.error().message;
  m->push_back({"tokenizer.ggml.bos_token_id", meta_u32(1)});
  m->push_back({"tokenizer.ggml.eos_token_id", meta_u32(1)});
  return *m;
}

// Writes the random model of `c` with metadata `m`; the tensors stay alive in `keep`.
std::string write(const Parameters& p, const std::vector<Metadata>& m, const std::string& name,
                  std::vector<NamedTensor>& keep, const std::string& drop = "") {
  auto tensors = tensors_for_file(p);
  EXPECT_TRUE(tensors) << tensors.error().message;
  keep = std::move(*tensors);
  std::vector<WriteTensor> out;
  for (const NamedTensor& t : keep)
    if (t.name != drop) out.push_back({t.name, t.ne, TensorType::f32, nullptr, t.fill});
  const std::string path = temp(name);
  EXPECT_TRUE(file_write(path, m, out));
  return path;
}

// A tensor of given values, as tensors_for_file's are written (values on demand).
NamedTensor filled(std::string name, std::vector<std::int64_t> ne, std::vector<float> v) {
  return {std::move(name), std::move(ne), [v](float* out) { std::copy(v.begin(), v.end(), out); }};
}

Parameters random_params(const ModelConfig& c) {
  Parameters p = parameters_allocate(c);
  parameters_init_random(p, 3);
  for (std::size_t i = 0; i < p.memory.size(); i++) p.memory[i] += 1e-3f * float(i % 97);  // biases and norms differ too
  return p;
}

headlab::Error load_error(const std::string& path) {
  auto f = file_open(path);
  EXPECT_TRUE(f) << f.error().message;
  auto p = parameters_from_file(*f);
  EXPECT_FALSE(p);
  return p ? headlab::Error{} : p.error();
}


// The first setting in which two configs' forwards differ, or "" (a test's view of the writer's check).
std::string differs(const ModelConfig& a, const ModelConfig& b) {
  if (a.n_layer != b.n_layer || a.n_head != b.n_head || a.n_embd != b.n_embd || a.vocab_size != b.vocab_size) return "sizes";
  if (a.kv_heads() != b.kv_heads() || a.head_size() != b.head_size() || a.mlp_width() != b.mlp_width()) return "widths";
  if (a.tied != b.tied || a.qkv_bias != b.qkv_bias || a.attn_out_bias != b.attn_out_bias || a.mlp_bias != b.mlp_bias) return "tensors";
  if (a.norm != b.norm || a.mlp_kind != b.mlp_kind || a.qk_norm != b.qk_norm || a.norm_plus_one != b.norm_plus_one ||
      a.sandwich_norm != b.sandwich_norm || a.embed_scale != b.embed_scale || a.parallel_residual != b.parallel_residual)
    return "block";
  if (a.attn_softcap != b.attn_softcap || a.final_softcap != b.final_softcap) return "softcap";
  for (int l = 0; l < a.n_layer; l++) {
    if (a.window_of(l) != b.window_of(l)) return "window of layer " + std::to_string(l);
    if (a.attention_scale(l) != b.attention_scale(l)) return "scale of layer " + std::to_string(l);
    if (a.positions != ModelConfig::Positions::rotary) continue;
    const LayerRope ra = rope_of_layer(a, l), rb = rope_of_layer(b, l);
    if (ra.scale != rb.scale || ra.inv_freq.size() != rb.inv_freq.size()) return "rope of layer " + std::to_string(l);
    for (std::size_t i = 0; i < ra.inv_freq.size(); i++)
      if (std::fabs(ra.inv_freq[i] - rb.inv_freq[i]) > 1e-6f * ra.inv_freq[i]) return "rope frequency " + std::to_string(i);
  }
  return "";
}

}  // namespace

class GgufFamilies : public ::testing::TestWithParam<const char*> {};

TEST_P(GgufFamilies, WeightsAndConfigSurviveAWriteAndARead) {
  const ModelConfig c = family(GetParam());
  const Parameters p = random_params(c);
  std::vector<NamedTensor> keep;
  const std::string path = write(p, metadata_of(p), std::string("headlab_arch_") + GetParam() + ".gguf", keep);
  auto back = parameters_load(path);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->config.family, c.family);
  EXPECT_EQ(differs(back->config, c), "");
  const std::vector<float> rows = parameters_to_rows(*back);  // a loaded model keeps its matrices packed
  ASSERT_EQ(rows.size(), p.memory.size());
  if (!c.norm_plus_one) {
    EXPECT_EQ(rows, p.memory);  // bit for bit
  } else {
    // Gemma: the file holds 1 + w; w comes back within the rounding of 1 + w (2^-24 near 1)
    float worst = 0.0f;
    for (std::size_t i = 0; i < p.memory.size(); i++) worst = std::max(worst, std::fabs(rows[i] - p.memory[i]));
    EXPECT_LE(worst, 1.2e-7f);
    const std::size_t embd = std::size_t(c.vocab_size) * c.n_embd;
    EXPECT_TRUE(std::equal(p.memory.begin(), p.memory.begin() + std::ptrdiff_t(embd), rows.begin()));
  }
}

INSTANTIATE_TEST_SUITE_P(Architectures, GgufFamilies,
                         ::testing::Values("gpt2", "gpt_neox", "llama", "qwen2", "qwen3", "gemma2", "gemma3"));

TEST(GgufArchitecture, LlamaQAndKRowsArePairedInTheFile) {
  // llama.cpp rotates channel pairs (2i, 2i+1); Hugging Face's rows are halves (i, i + HS/2)
  const ModelConfig c = family("llama");
  Parameters p = random_params(c);
  std::vector<NamedTensor> keep;
  write(p, metadata_of(p), "headlab_arch_pairs.gguf", keep);
  const NamedTensor& q = *std::find_if(keep.begin(), keep.end(), [](auto& t) { return t.name == "blk.0.attn_q.weight"; });
  const int C = c.n_embd, HS = c.head_size();
  // file row 1 (head 0, pair 0, second of the pair) is HF row HS/2
  EXPECT_EQ(q.values()[std::size_t(1) * C + 5], p.t.qkvw[std::size_t(HS / 2) * C + 5]);
  EXPECT_EQ(q.values()[std::size_t(2) * C + 5], p.t.qkvw[std::size_t(1) * C + 5]);
}

TEST(GgufArchitecture, GemmaNormsAreStoredAsOnePlusW) {
  // llama.cpp's converter adds 1 to every Gemma norm weight (its graph multiplies by the weight)
  const ModelConfig c = family("gemma3");
  Parameters p = random_params(c);
  auto tensors = tensors_for_file(p);
  ASSERT_TRUE(tensors) << tensors.error().message;
  auto find = [&](const std::string& name) {
    return *std::find_if(tensors->begin(), tensors->end(), [&](auto& t) { return t.name == name; });
  };
  EXPECT_EQ(find("blk.1.attn_norm.weight").values()[3], 1.0f + p.t.ln1w[c.n_embd + 3]);
  EXPECT_EQ(find("blk.0.post_attention_norm.weight").values()[0], 1.0f + p.t.postattnw[0]);
  EXPECT_EQ(find("blk.0.ffn_norm.weight").values()[0], 1.0f + p.t.ln2w[0]);
  EXPECT_EQ(find("blk.0.post_ffw_norm.weight").values()[0], 1.0f + p.t.postmlpw[0]);
  EXPECT_EQ(find("blk.2.attn_k_norm.weight").values()[1], 1.0f + p.t.knormw[2 * c.head_size() + 1]);
  EXPECT_EQ(find("output_norm.weight").values()[0], 1.0f + p.t.lnfw[0]);
  EXPECT_EQ(find("blk.0.attn_q.weight").values()[7], p.t.qkvw[7]);  // NeoX rotary: rows as they are
}

TEST(GgufArchitecture, GemmaKeysSayTheWindowsCapsAndLocalBase) {
  const ModelConfig c = family("gemma3");
  auto m = metadata_for_file(random_params(c));
  ASSERT_TRUE(m) << m.error().message;
  auto value = [&](const std::string& key) {
    auto it = std::find_if(m->begin(), m->end(), [&](auto& kv) { return kv.first == key; });
    EXPECT_NE(it, m->end()) << key;
    return it == m->end() ? MetadataValue{} : it->second;
  };
  EXPECT_EQ(value("gemma3.attention.sliding_window").bits, 3u);
  EXPECT_EQ(value("gemma3.attention.sliding_window_pattern").bits, 3u);  // layers 0, 1 slide; 2 is global
  float base = 0;
  const std::uint32_t bits = std::uint32_t(value("gemma3.rope.freq_base_swa").bits);
  std::memcpy(&base, &bits, 4);
  EXPECT_EQ(base, 1000.0f);
  EXPECT_EQ(value("gemma3.rope.scaling.type").text, "linear");
  const ModelConfig g2 = family("gemma2");
  auto m2 = metadata_for_file(random_params(g2));
  ASSERT_TRUE(m2) << m2.error().message;
  EXPECT_NE(std::find_if(m2->begin(), m2->end(), [](auto& kv) { return kv.first == "gemma2.attn_logit_softcapping"; }), m2->end());
}

TEST(GgufArchitecture, Llama3ScalingIsWrittenAsRopeFreqsAndReadBack) {
  ModelConfig c = family("llama");
  c.head_dim = 16, c.rope_theta = 500000.0f;
  c.rope_llama3_factor = 8.0f, c.rope_llama3_low_freq_factor = 1.0f, c.rope_llama3_high_freq_factor = 4.0f;
  c.rope_llama3_original_max_positions = 64;
  const Parameters p = random_params(c);
  std::vector<NamedTensor> keep;
  const std::string path = write(p, metadata_of(p), "headlab_arch_llama3.gguf", keep);
  const NamedTensor& f = *std::find_if(keep.begin(), keep.end(), [](auto& t) { return t.name == "rope_freqs.weight"; });
  ASSERT_EQ(f.ne, std::vector<std::int64_t>{8});
  // wavelength 2 pi < 64 / 4: kept (divisor 1); above 64: divided by the factor 8; between: blended
  EXPECT_EQ(f.values()[0], 1.0f);
  EXPECT_GT(f.values()[1], 1.0f);
  EXPECT_LT(f.values()[1], 8.0f);
  EXPECT_NEAR(f.values()[7], 8.0f, 1e-5f);
  auto back = parameters_load(path);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->config.rope_llama3_factor, 0.0f);
  EXPECT_EQ(back->config.rope_freq_factors.size(), 8u);
  EXPECT_EQ(differs(back->config, c), "");  // the same frequencies, to 1e-6
  // and written again, the divisors are the same numbers
  auto again = tensors_for_file(*back);
  ASSERT_TRUE(again);
  const NamedTensor& f2 = *std::find_if(again->begin(), again->end(), [](auto& t) { return t.name == "rope_freqs.weight"; });
  for (std::size_t i = 0; i < 8; i++) EXPECT_NEAR(f2.values()[i], f.values()[i], 1e-6f * f.values()[i]);
}

TEST(GgufArchitecture, RefusesArchitecturesByName) {
  for (const char* arch : {"gemma", "mamba", "phi3"}) {
    const ModelConfig c = family("llama");
    const Parameters p = random_params(c);
    std::vector<Metadata> m = metadata_of(p);
    m[0].second = meta_string(arch);
    std::vector<NamedTensor> keep;
    const headlab::Error e = load_error(write(p, m, "headlab_arch_refused.gguf", keep));
    EXPECT_EQ(e.code, ErrorCode::unsupported);
    EXPECT_NE(e.message.find(std::string("\"") + arch + "\""), std::string::npos) << e.message;
  }
}

TEST(GgufArchitecture, RefusesAKeyThatChangesTheMathsByName) {
  struct Case {
    const char* family;
    Metadata key;
    const char* words;
  };
  for (const Case& k : std::vector<Case>{
           {"llama", {"llama.attn_logit_softcapping", meta_f32(50)}, "attn_logit_softcapping"},
           {"llama", {"llama.expert_count", meta_u32(8)}, "expert_count"},
           {"llama", {"llama.rope.scaling.type", meta_string("yarn")}, "yarn"},
           {"llama", {"llama.attention.scale", meta_f32(0.1f)}, "attention.scale"},
           // llama.cpp's llama, qwen2 and qwen3 attend to every key whatever the file says
           {"llama", {"llama.attention.sliding_window", meta_u32(4096)}, "applies no sliding window"},
           {"qwen3", {"qwen3.attention.sliding_window", meta_u32(8)}, "applies no sliding window"},
           // llama.cpp's gemma3 does not cap the scores
           {"gemma3", {"gemma3.attn_logit_softcapping", meta_f32(50)}, "attn_logit_softcapping"},
           {"gemma2", {"gemma2.rope.freq_base_swa", meta_f32(1234)}, "rope.freq_base_swa"},
           {"gemma2", {"gemma2.rope.scaling.factor", meta_f32(2)}, "rope.scaling.factor 2"},
       }) {
    const ModelConfig c = family(k.family);
    const Parameters p = random_params(c);
    std::vector<Metadata> m = metadata_of(p);
    m.erase(std::remove_if(m.begin(), m.end(), [&](auto& kv) { return kv.first == k.key.first; }), m.end());
    m.push_back(k.key);
    if (std::string(k.words).find("rope.scaling.factor") != std::string::npos)
      m.push_back({"gemma2.rope.scaling.type", meta_string("none")});
    std::vector<NamedTensor> keep;
    const headlab::Error e = load_error(write(p, m, "headlab_arch_key.gguf", keep));
    EXPECT_EQ(e.code, ErrorCode::unsupported) << k.key.first << ": " << e.message;
    EXPECT_NE(e.message.find(k.words), std::string::npos) << e.message;
  }
}

TEST(GgufArchitecture, RefusesASlidingPatternGivenAsAList) {
  // llama.cpp's gemma2 and gemma3 read the pattern as one number; a list would be ignored
  const ModelConfig c = family("gemma2");
  const Parameters p = random_params(c);
  std::vector<Metadata> m = metadata_of(p);
  for (auto& kv : m)
    if (kv.first == "gemma2.attention.sliding_window_pattern") kv.second = meta_i32s({1, 0});
  std::vector<NamedTensor> keep;
  const headlab::Error e = load_error(write(p, m, "headlab_arch_pattern.gguf", keep));
  EXPECT_EQ(e.code, ErrorCode::unsupported);
  EXPECT_NE(e.message.find("sliding_window_pattern as a list"), std::string::npos) << e.message;
}

TEST(GgufArchitecture, ReadsGemmasDefaultsAsLlamaCppDoes) {
  // without the keys: Gemma 2 caps at 50 and 30, slides every other layer over 4096 keys
  const ModelConfig c = family("gemma2");
  const Parameters p = random_params(c);
  std::vector<Metadata> m = metadata_of(p);
  m.erase(std::remove_if(m.begin(), m.end(), [](auto& kv) {
            return kv.first.find("softcapping") != std::string::npos || kv.first.find("sliding_window") != std::string::npos;
          }), m.end());
  std::vector<NamedTensor> keep;
  auto f = file_open(write(p, m, "headlab_arch_gemma2_defaults.gguf", keep));
  ASSERT_TRUE(f);
  auto back = config_from_file(*f);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->attn_softcap, 50.0f);
  EXPECT_EQ(back->final_softcap, 30.0f);
  EXPECT_EQ(back->window_of(0), 4096);
  EXPECT_EQ(back->window_of(1), 0);
  EXPECT_EQ(back->attention_scale(0), 1.0f / std::sqrt(12.0f));  // 1/sqrt(HS): no query_pre_attn_scalar key
}

TEST(GgufArchitecture, RefusesMissingExtraAndMisshapenTensorsOfTheNewArchitecturesByName) {
  struct Case {
    const char* family;
    const char* drop;          // a tensor left out ("" none)
    NamedTensor extra;         // a tensor added (empty name: none)
    const char* words;
  };
  const std::vector<Case> cases = {
      {"qwen3", "blk.1.attn_k_norm.weight", {}, "missing tensor \"blk.1.attn_k_norm.weight\""},
      {"gemma2", "blk.0.post_ffw_norm.weight", {}, "missing tensor \"blk.0.post_ffw_norm.weight\""},
      {"gemma3", "blk.2.post_attention_norm.weight", {}, "missing tensor \"blk.2.post_attention_norm.weight\""},
      {"gemma3", "blk.0.attn_q_norm.weight", filled("blk.0.attn_q_norm.weight", {24}, std::vector<float>(24, 1.0f)),
       "tensor \"blk.0.attn_q_norm.weight\" has shape {24}, the metadata implies {12}"},
      {"gemma2", "", filled("output.weight", {32, 40}, std::vector<float>(32 * 40, 0.5f)),
       "tensor \"output.weight\" is not a weight of the gemma2 model"},
      {"qwen3", "", filled("blk.0.attn_output.bias", {32}, std::vector<float>(32, 0.5f)),
       "tensor \"blk.0.attn_output.bias\" is not a weight of the qwen3 model"},
      {"llama", "", filled("blk.0.attn_q_norm.weight", {12}, std::vector<float>(12, 1.0f)),
       "tensor \"blk.0.attn_q_norm.weight\" is not a weight of the llama model"},
      {"qwen2", "", filled("rope_freqs.weight", {4}, std::vector<float>(4, 1.0f)),
       "tensor \"rope_freqs.weight\" is not a weight of the qwen2 model"},
      {"llama", "", filled("rope_freqs.weight", {5}, std::vector<float>(5, 1.0f)),
       "tensor \"rope_freqs.weight\" has shape {5}, the head size implies {6}"},
      {"llama", "", filled("rope_freqs.weight", {6}, std::vector<float>{1, 2, 0, 4, 8, 8}), "each frequency's divisor must be a positive number"},
  };
  for (const Case& k : cases) {
    const ModelConfig c = family(k.family);
    const Parameters p = random_params(c);
    std::vector<NamedTensor> keep;
    auto tensors = tensors_for_file(p);
    ASSERT_TRUE(tensors);
    keep = std::move(*tensors);
    keep.erase(std::remove_if(keep.begin(), keep.end(), [&](auto& t) { return t.name == k.drop; }), keep.end());
    if (!k.extra.name.empty()) keep.push_back(k.extra);
    std::vector<WriteTensor> out;
    for (const NamedTensor& t : keep) out.push_back({t.name, t.ne, TensorType::f32, nullptr, t.fill});
    const std::string path = temp("headlab_arch_tensors.gguf");
    ASSERT_TRUE(file_write(path, metadata_of(p), out));
    const headlab::Error e = load_error(path);
    EXPECT_EQ(e.code, ErrorCode::corrupt) << e.message;
    EXPECT_NE(e.message.find(k.words), std::string::npos) << k.family << ": " << e.message;
  }
}

// The writer refuses what llama.cpp's architecture would run differently, naming the setting.
TEST(GgufArchitecture, ExportRefusesWhatLlamaCppWouldRunDifferently) {
  struct Case {
    const char* family;
    std::function<void(ModelConfig&)> change;
    const char* words;
  };
  const std::vector<Case> cases = {
      {"qwen3", [](ModelConfig& c) { c.sliding_window = 6, c.sliding_layers = {0, 1}; }, "layer 1's sliding window is 6"},
      {"llama", [](ModelConfig& c) { c.family = "mistral", c.sliding_window = 8; },
       "llama.cpp's llama cannot express this mistral model: layer 0's sliding window is 8"},
      {"gemma2", [](ModelConfig& c) { c.query_pre_attn_scalar = 24.0f; }, "score scale (query_pre_attn_scalar"},
      {"gemma2", [](ModelConfig& c) { c.tied = false; }, "tied"},
      {"gemma2", [](ModelConfig& c) { c.attn_softcap = 0.0f; }, "attn_logit_softcapping is 0"},
      {"gemma3", [](ModelConfig& c) { c.attn_softcap = 30.0f; }, "attn_logit_softcapping is 30"},
      {"gemma2", [](ModelConfig& c) { c.sliding_layers = {0, 1}; }, "layer 0's sliding window is 0"},
      {"qwen3", [](ModelConfig& c) { c.attn_out_bias = true; }, "attn_out_bias"},
      {"qwen2", [](ModelConfig& c) { c.head_dim = 12; }, "llama.cpp's qwen2 projects q to embedding_length"},
      {"qwen3", [](ModelConfig& c) { c.rotary_dim = 6; }, "partial rotary is not supported for qwen3"},
  };
  for (const Case& k : cases) {
    ModelConfig c = family(k.family);
    k.change(c);
    ASSERT_TRUE(config_validate(c)) << k.words;
    auto m = metadata_for_file(random_params(c));
    ASSERT_FALSE(m) << k.family << " should be refused: " << k.words;
    EXPECT_EQ(m.error().code, ErrorCode::unsupported);
    EXPECT_NE(m.error().message.find(k.words), std::string::npos) << m.error().message;
  }
}

TEST(GgufArchitecture, RefusesAMissingTensorAndAMissingKeyByName) {
  const ModelConfig c = family("gpt2");
  const Parameters p = random_params(c);
  std::vector<NamedTensor> keep;
  headlab::Error e = load_error(write(p, metadata_of(p), "headlab_arch_missing.gguf", keep, "blk.1.ffn_up.bias"));
  EXPECT_EQ(e.code, ErrorCode::corrupt);
  EXPECT_NE(e.message.find("missing tensor \"blk.1.ffn_up.bias\""), std::string::npos) << e.message;
  std::vector<Metadata> m = metadata_of(p);
  m.erase(m.begin() + 3);  // block_count
  e = load_error(write(p, m, "headlab_arch_nokey.gguf", keep));
  EXPECT_NE(e.message.find("gpt2.block_count is missing"), std::string::npos) << e.message;
}

TEST(GgufArchitecture, RefusesABlockCountLargerThanTheFileHolds) {
  const ModelConfig c = family("llama");
  const Parameters p = random_params(c);
  std::vector<Metadata> m = metadata_of(p);
  m[3].second = meta_u32(2000000000u);  // block_count
  std::vector<NamedTensor> keep;
  const headlab::Error e = load_error(write(p, m, "headlab_arch_blocks.gguf", keep));
  EXPECT_EQ(e.code, ErrorCode::corrupt);
  EXPECT_NE(e.message.find("block_count is 2000000000 but the file holds only"), std::string::npos) << e.message;
}

TEST(GgufArchitecture, RefusesATensorOfTheWrongShape) {
  const ModelConfig c = family("gpt2");
  const Parameters p = random_params(c);
  std::vector<Metadata> m = metadata_of(p);
  m[1].second = meta_u32(20);  // context_length: position_embd.weight holds 16 rows
  std::vector<NamedTensor> keep;
  const headlab::Error e = load_error(write(p, m, "headlab_arch_shape.gguf", keep));
  EXPECT_NE(e.message.find("tensor \"position_embd.weight\" has shape {32, 16}, the metadata implies {32, 20}"),
            std::string::npos) << e.message;
}
