// model/checkpoint.h — a model directory in the Hugging Face layout of GPT-2, GPT-NeoX,
// Llama, Mistral, Qwen 2/3 or Gemma 2/3 (config.json's model_type picks the names; src/model/README.md
// lists each family's). GPT-2's:
//   config.json        the ModelConfig (model/config.h)
//   model.safetensors  the weights: names "wte.weight", "h.0.attn.c_attn.weight", ...
//                      with or without a "transformer." prefix; Conv1D matrices stored
//                      (in, out); F32, F16 or BF16; "attn.bias"/"attn.masked_bias" ignored
//   vocab.json + merges.txt, or tokenizer.json   the tokenizer (model/bpe_tokenizer.h)
//
//   Result<Parameters> p = checkpoint_load("models/gpt2");
//   Status s = checkpoint_save("out/model", *p, Dtype::F32);   // loads back in transformers
#pragma once

#include <cstdint>
#include <string>

#include "model/parameters.h"
#include "model/safetensors.h"
#include "util/result.h"

namespace headlab::model {

// A path ending in ".gguf" is read as llama.cpp's file instead (model/gguf/gguf_architecture.h).
// Reads config.json and model.safetensors (or model.safetensors.index.json and its shards)
// from `dir`. Every tensor's shape in the file's header is checked against config.json before
// any weight is allocated, so a config that lies about its sizes is refused by the tensor that
// disagrees, not by running out of memory. The matrices go straight into their packed panels,
// a part of a tensor at a time: no float32 copy of the model is ever made.
// Errors: not_found (missing directory or file), corrupt (bad safetensors, a tensor of the
// wrong shape, a missing tensor, NaN or infinite weights), unsupported (dtype; a weight f16
// cannot hold; a model larger than the memory this machine can allocate, saying how much it
// needs), and the errors of config_load. Each message names the file and the tensor.
Result<Parameters> checkpoint_load(const std::string& dir, const LoadOptions& options = {});

// From an already-parsed config and file (the fuzzer and tests use this).
Result<Parameters> checkpoint_from_safetensors(const ModelConfig& config, const SafetensorsFile& file,
                                               const LoadOptions& options = {});
// The same from the shards of a sharded checkpoint (safetensors_open_index).
Result<Parameters> checkpoint_from_shards(const ModelConfig& config, const std::vector<SafetensorsFile>& shards,
                                          const LoadOptions& options = {});

// About how many bytes a loaded model of this config holds with its matrices kept as `types`
// (parameters_bytes of the result): the float32 vectors and the packed matrices.
std::uint64_t checkpoint_memory_bytes(const ModelConfig& config, const MatrixTypes& types);
// " as float32", or "; its matrices as bf16, the rest as float32": for "N weights..." in messages.
std::string checkpoint_types_text(const ModelConfig& config, const MatrixTypes& types);

// What checkpoint_load reads from `dir` and where each tensor goes, from the headers only
// (no weight is read, so it is quick on a large model): for `headlab info`.
struct TensorMapping {
  std::string name;                  // as in the file
  std::string file;                  // the file that holds it (a shard of a sharded checkpoint)
  Dtype dtype = Dtype::F32;
  std::vector<std::int64_t> shape;
  std::uint64_t bytes = 0;           // in the file
  std::string target;                // headlab's tensor (parameters_name: "qkvw"), empty when not loaded
  int layer = -1;                    // its layer, -1 for a tensor of the whole model
  std::int64_t offset = 0;           // floats into the target's slice of that layer
  std::string how;                   // "copied", "transposed (Conv1D)", "reordered (fused per head)",
                                     // or why it is not loaded
  std::string memory;                // the type it is kept in ("bf16", "f32"), empty when not loaded
  std::string file_type;             // a GGUF file's tensor type ("Q8_0", "BF16"); empty: dtype
};
// Fills m.target, m.layer, m.offset and m.memory for a tensor that goes `offset` floats into
// parameter tensor `index` (a per-layer tensor's offset splits into its layer and the offset in
// that layer's slice), kept in `types[index]` when a matrix and in f32 otherwise.
void tensor_mapping_place(TensorMapping& m, const ModelConfig& config, int index, std::int64_t offset,
                          const MatrixTypes& types);
struct CheckpointDescription {
  ModelConfig config;
  MatrixTypes memory_types{};          // the type each matrix is kept in under the dtype asked for
  std::uint64_t memory_bytes = 0;      // checkpoint_memory_bytes of those
  bool rounds = false;                 // that dtype rounds some matrix of the files
  std::vector<ConfigKeyUse> keys;      // every key of config.json (config_key_uses), or of a GGUF file's metadata
  std::vector<std::string> files;      // the weight files read
  std::vector<TensorMapping> tensors;  // every tensor of those files, in their order
};
// A path ending in ".gguf" is described from its metadata and tensor infos (gguf::describe_file).
// Errors: those of checkpoint_load before it reads a weight (config, headers, shapes).
Result<CheckpointDescription> checkpoint_describe(const std::string& dir, DtypeChoice dtype = DtypeChoice::keep);

// Writes config.json and model.safetensors (names with the "transformer." prefix as
// GPT2LMHeadModel saves them, Conv1D orientation, lm_head.weight when untied).
Status checkpoint_save(const std::string& dir, const Parameters& params, Dtype dtype = Dtype::F32);

}  // namespace headlab::model
