// Tests of the architecture mapping (model/gguf/gguf_architecture.h): each family's weights
// survive a write and a read bit for bit (llama's q/k rows permuted on the way out and back),
// and what headlab cannot honour is refused by name.
#include <gtest/gtest.h>

#include <filesystem>
#include <unistd.h>

#include "model/gguf/gguf_architecture.h"
#include "model/gguf/gguf_writer.h"

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
  c.n_kv_head = 2, c.d_mlp = 24, c.head_dim = 12;
  c.qkv_bias = name == "qwen2";
  c.attn_out_bias = c.mlp_bias = false;
  c.tied = name == "qwen2";
  return c;
}

// A path of this process's own (ctest runs tests side by side), under the temporary directory.
std::string temp(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("headlab-gguf-" + std::to_string(::getpid()) + "-" + name)).string();
}

std::vector<Metadata> metadata_of(const ModelConfig& c) {
  const std::string a = architecture_of(c) + ".";
  std::vector<Metadata> m = {{"general.architecture", meta_string(architecture_of(c))},
                             {a + "context_length", meta_u32(std::uint32_t(c.n_ctx))},
                             {a + "embedding_length", meta_u32(std::uint32_t(c.n_embd))},
                             {a + "block_count", meta_u32(std::uint32_t(c.n_layer))},
                             {a + "feed_forward_length", meta_u32(std::uint32_t(c.mlp_width()))},
                             {a + "attention.head_count", meta_u32(std::uint32_t(c.n_head))},
                             {"tokenizer.ggml.bos_token_id", meta_u32(1)},
                             {"tokenizer.ggml.eos_token_id", meta_u32(1)}};
  if (c.norm == ModelConfig::Norm::rmsnorm) {
    m.push_back({a + "attention.layer_norm_rms_epsilon", meta_f32(c.layer_norm_eps)});
    m.push_back({a + "attention.head_count_kv", meta_u32(std::uint32_t(c.kv_heads()))});
    m.push_back({a + "attention.key_length", meta_u32(std::uint32_t(c.head_size()))});
    m.push_back({a + "attention.value_length", meta_u32(std::uint32_t(c.head_size()))});
  } else {
    m.push_back({a + "attention.layer_norm_epsilon", meta_f32(c.layer_norm_eps)});
  }
  if (c.family == "gpt_neox") m.push_back({a + "rope.dimension_count", meta_u32(std::uint32_t(c.rotary_size()))});
  return m;
}

// Writes the random model of `c` with metadata `m`; the tensors stay alive in `keep`.
std::string write(const Parameters& p, const std::vector<Metadata>& m, const std::string& name,
                  std::vector<NamedTensor>& keep, const std::string& drop = "") {
  auto tensors = tensors_for_file(p);
  EXPECT_TRUE(tensors) << tensors.error().message;
  keep = std::move(*tensors);
  std::vector<WriteTensor> out;
  for (const NamedTensor& t : keep)
    if (t.name != drop) out.push_back({t.name, t.ne, TensorType::f32, t.values.data()});
  const std::string path = temp(name);
  EXPECT_TRUE(file_write(path, m, out));
  return path;
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

}  // namespace

class GgufFamilies : public ::testing::TestWithParam<const char*> {};

TEST_P(GgufFamilies, WeightsSurviveAWriteAndAReadBitForBit) {
  const ModelConfig c = family(GetParam());
  const Parameters p = random_params(c);
  std::vector<NamedTensor> keep;
  const std::string path = write(p, metadata_of(c), std::string("headlab_arch_") + GetParam() + ".gguf", keep);
  auto back = parameters_load(path);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->config.family, c.family);
  EXPECT_EQ(back->config.kv_heads(), c.kv_heads());
  EXPECT_EQ(back->config.head_size(), c.head_size());
  EXPECT_EQ(back->config.tied, c.tied);
  EXPECT_EQ(back->config.qkv_bias, c.qkv_bias);
  EXPECT_EQ(parameters_to_rows(*back), p.memory);
}

INSTANTIATE_TEST_SUITE_P(Architectures, GgufFamilies, ::testing::Values("gpt2", "gpt_neox", "llama", "qwen2"));

TEST(GgufArchitecture, LlamaQAndKRowsArePairedInTheFile) {
  // llama.cpp rotates channel pairs (2i, 2i+1); Hugging Face's rows are halves (i, i + HS/2)
  const ModelConfig c = family("llama");
  Parameters p = random_params(c);
  std::vector<NamedTensor> keep;
  write(p, metadata_of(c), "headlab_arch_pairs.gguf", keep);
  const NamedTensor& q = *std::find_if(keep.begin(), keep.end(), [](auto& t) { return t.name == "blk.0.attn_q.weight"; });
  const int C = c.n_embd, HS = c.head_size();
  // file row 1 (head 0, pair 0, second of the pair) is HF row HS/2
  EXPECT_EQ(q.values[std::size_t(1) * C + 5], p.t.qkvw[std::size_t(HS / 2) * C + 5]);
  EXPECT_EQ(q.values[std::size_t(2) * C + 5], p.t.qkvw[std::size_t(1) * C + 5]);
}

TEST(GgufArchitecture, RefusesArchitecturesByName) {
  for (const char* arch : {"qwen3", "gemma2", "gemma3", "mamba"}) {
    const ModelConfig c = family("llama");
    std::vector<Metadata> m = metadata_of(c);
    m[0].second = meta_string(arch);
    std::vector<NamedTensor> keep;
    const headlab::Error e = load_error(write(random_params(c), m, "headlab_arch_refused.gguf", keep));
    EXPECT_EQ(e.code, ErrorCode::unsupported);
    EXPECT_NE(e.message.find(std::string("\"") + arch + "\""), std::string::npos) << e.message;
  }
}

TEST(GgufArchitecture, RefusesAKeyThatChangesTheMathsByName) {
  const ModelConfig c = family("llama");
  for (const auto& [key, value] : std::vector<Metadata>{{"llama.attn_logit_softcapping", meta_f32(50)},
                                                        {"llama.expert_count", meta_u32(8)},
                                                        {"llama.rope.scaling.type", meta_string("yarn")}}) {
    std::vector<Metadata> m = metadata_of(c);
    m.push_back({key, value});
    std::vector<NamedTensor> keep;
    const headlab::Error e = load_error(write(random_params(c), m, "headlab_arch_key.gguf", keep));
    EXPECT_EQ(e.code, ErrorCode::unsupported) << key;
    EXPECT_NE(e.message.find(key.substr(6)), std::string::npos) << e.message;
  }
}

TEST(GgufArchitecture, RefusesAMissingTensorAndAMissingKeyByName) {
  const ModelConfig c = family("gpt2");
  std::vector<NamedTensor> keep;
  headlab::Error e = load_error(write(random_params(c), metadata_of(c), "headlab_arch_missing.gguf", keep, "blk.1.ffn_up.bias"));
  EXPECT_EQ(e.code, ErrorCode::corrupt);
  EXPECT_NE(e.message.find("missing tensor \"blk.1.ffn_up.bias\""), std::string::npos) << e.message;
  std::vector<Metadata> m = metadata_of(c);
  m.erase(m.begin() + 3);  // block_count
  e = load_error(write(random_params(c), m, "headlab_arch_nokey.gguf", keep));
  EXPECT_NE(e.message.find("gpt2.block_count is missing"), std::string::npos) << e.message;
}

TEST(GgufArchitecture, RefusesABlockCountLargerThanTheFileHolds) {
  const ModelConfig c = family("llama");
  std::vector<Metadata> m = metadata_of(c);
  m[3].second = meta_u32(2000000000u);  // block_count
  std::vector<NamedTensor> keep;
  const headlab::Error e = load_error(write(random_params(c), m, "headlab_arch_blocks.gguf", keep));
  EXPECT_EQ(e.code, ErrorCode::corrupt);
  EXPECT_NE(e.message.find("block_count is 2000000000 but the file holds only"), std::string::npos) << e.message;
}

TEST(GgufArchitecture, RefusesATensorOfTheWrongShape) {
  const ModelConfig c = family("gpt2");
  std::vector<Metadata> m = metadata_of(c);
  m[1].second = meta_u32(20);  // context_length: position_embd.weight holds 16 rows
  std::vector<NamedTensor> keep;
  const headlab::Error e = load_error(write(random_params(c), m, "headlab_arch_shape.gguf", keep));
  EXPECT_NE(e.message.find("tensor \"position_embd.weight\" has shape {32, 16}, the metadata implies {32, 20}"),
            std::string::npos) << e.message;
}
