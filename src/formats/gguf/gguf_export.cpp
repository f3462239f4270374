// formats/gguf/gguf_export.cpp — a model's metadata and tensors handed to the writer
// (see gguf_export.h); the keys are those gguf_architecture.cpp reads back.
#include "formats/gguf/gguf_export.h"

#include "formats/gguf/gguf_architecture.h"
#include "formats/gguf/gguf_writer.h"

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
  auto keys = metadata_for_file(params);
  if (!keys) return make_error(keys.error().code, path + ": " + keys.error().message);
  std::vector<Metadata> m;
  m.push_back(std::move(keys->front()));  // general.architecture first, as llama.cpp's writer has it
  m.emplace_back("general.name", meta_string(name));
  // llama_ftype: 0 all F32, 1 mostly F16, 32 mostly BF16
  m.emplace_back("general.file_type", meta_u32(dtype == TensorType::f32 ? 0 : dtype == TensorType::f16 ? 1 : 32));
  for (std::size_t i = 1; i < keys->size(); i++) m.push_back(std::move((*keys)[i]));
  // llama.cpp reads one token per row of token_embd: a padded vocabulary gets unused tokens
  TokenizerTables tables = tokenizer;
  for (int id = int(tables.tokens.size()); id < c.vocab_size; id++) {
    tables.tokens.push_back("<|headlab_pad_" + std::to_string(id) + "|>");
    tables.types.push_back(5);  // unused
    if (tables.model == "llama") tables.scores.push_back(-1e9f);
  }
  // llama.cpp puts BOS first when add_bos_token says so: the family's rule, as headlab's runs
  for (Metadata& t : tokenizer_metadata(tables, c.bos_token_id, c.eos_token_id, c.default_prepend_bos()))
    m.push_back(std::move(t));

  std::vector<WriteTensor> out;
  for (const NamedTensor& t : *tensors)
    out.push_back({t.name, t.ne, t.ne.size() == 1 ? TensorType::f32 : dtype, nullptr, t.fill});
  return file_write(path, m, out);
}

}  // namespace headlab::model::gguf
