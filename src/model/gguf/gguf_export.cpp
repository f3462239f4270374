// model/gguf/gguf_export.cpp — a model's metadata and tensors handed to the writer
// (see gguf_export.h); the keys are those gguf_architecture.cpp reads back.
#include "model/gguf/gguf_export.h"

#include "model/gguf/gguf_architecture.h"
#include "model/gguf/gguf_writer.h"

namespace headlab::model::gguf {

Status export_model(const std::string& path, const Parameters& params, const TokenizerTables& tokenizer,
                    TensorType dtype, const std::string& name) {
  const ModelConfig& c = params.config;
  if (dtype != TensorType::f32 && dtype != TensorType::f16 && dtype != TensorType::bf16)
    return make_error(ErrorCode::unsupported, path + ": headlab writes GGUF tensors as F32, F16 or BF16");
  if (int(tokenizer.tokens.size()) > c.vocab_size)
    return make_error(ErrorCode::invalid_argument, path + ": the tokenizer has " + std::to_string(tokenizer.tokens.size()) +
                                                       " tokens, more than the model's vocabulary of " +
                                                       std::to_string(c.vocab_size));
  auto tensors = tensors_for_file(params);
  if (!tensors) return make_error(tensors.error().code, path + ": " + tensors.error().message);
  const std::string arch = architecture_of(c);
  const std::string a = arch + ".";
  std::vector<Metadata> m;
  m.emplace_back("general.architecture", meta_string(arch));
  m.emplace_back("general.name", meta_string(name));
  // llama_ftype: 0 all F32, 1 mostly F16, 32 mostly BF16
  m.emplace_back("general.file_type", meta_u32(dtype == TensorType::f32 ? 0 : dtype == TensorType::f16 ? 1 : 32));
  m.emplace_back(a + "context_length", meta_u32(std::uint32_t(c.n_ctx)));
  m.emplace_back(a + "embedding_length", meta_u32(std::uint32_t(c.n_embd)));
  m.emplace_back(a + "block_count", meta_u32(std::uint32_t(c.n_layer)));
  m.emplace_back(a + "feed_forward_length", meta_u32(std::uint32_t(c.mlp_width())));
  m.emplace_back(a + "attention.head_count", meta_u32(std::uint32_t(c.n_head)));
  if (c.norm == ModelConfig::Norm::layernorm) {
    m.emplace_back(a + "attention.layer_norm_epsilon", meta_f32(c.layer_norm_eps));
  } else {
    m.emplace_back(a + "attention.layer_norm_rms_epsilon", meta_f32(c.layer_norm_eps));
  }
  if (c.positions == ModelConfig::Positions::rotary) {
    m.emplace_back(a + "rope.dimension_count", meta_u32(std::uint32_t(c.rotary_size())));
    m.emplace_back(a + "rope.freq_base", meta_f32(c.rope_theta));
    if (c.rope_linear_factor != 1.0f) {
      m.emplace_back(a + "rope.scaling.type", meta_string("linear"));
      m.emplace_back(a + "rope.scaling.factor", meta_f32(c.rope_linear_factor));
    }
  }
  if (arch == "llama" || arch == "qwen2") {
    m.emplace_back(a + "attention.head_count_kv", meta_u32(std::uint32_t(c.kv_heads())));
    if (c.head_dim > 0 && c.head_dim * c.n_head != c.n_embd) {
      m.emplace_back(a + "attention.key_length", meta_u32(std::uint32_t(c.head_dim)));
      m.emplace_back(a + "attention.value_length", meta_u32(std::uint32_t(c.head_dim)));
    }
    if (c.sliding_window > 0) m.emplace_back(a + "attention.sliding_window", meta_u32(std::uint32_t(c.sliding_window)));
  }
  if (arch == "gptneox") m.emplace_back(a + "use_parallel_residual", meta_bool(c.parallel_residual));
  // llama.cpp reads one token per row of token_embd: a padded vocabulary gets unused tokens
  TokenizerTables tables = tokenizer;
  for (int id = int(tables.tokens.size()); id < c.vocab_size; id++) {
    tables.tokens.push_back("<|headlab_pad_" + std::to_string(id) + "|>");
    tables.types.push_back(5);  // unused
  }
  for (Metadata& t : tokenizer_metadata(tables, c.bos_token_id, c.eos_token_id)) m.push_back(std::move(t));

  std::vector<WriteTensor> out;
  for (const NamedTensor& t : *tensors)
    out.push_back({t.name, t.ne, t.ne.size() == 1 ? TensorType::f32 : dtype, t.values.data()});
  return file_write(path, m, out);
}

}  // namespace headlab::model::gguf
