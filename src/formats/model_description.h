// formats/model_description.h — what a model's files hold and where each tensor goes, from
// their headers only: the description `headlab info` prints for a Hugging Face folder
// (hf/checkpoint.h) and a GGUF file (gguf/gguf_architecture.h) alike, and the memory a
// loaded model of a config takes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/config.h"
#include "model/parameters.h"
#include "model/weight_type.h"

namespace headlab::model {

// One key of a config.json and what headlab did with it (`headlab info`).
struct ConfigKeyUse {
  std::string key;     // as in the file; a multimodal config's text keys as "text_config.<key>"
  std::string value;   // the JSON value, shortened
  bool read = false;   // false: headlab does not read it (a key that would change the forward is refused instead)
  std::string effect;  // read: what it set ("L = 2", "RMSNorm eps 1e-06"); else why it is not read
  bool known = true;   // false: neither read nor on the list of keys reviewed as not changing the forward
                       // (config_keys.cpp); loading says so by name. Last, so {key, value, read, effect} still reads.
};

// About how many bytes a loaded model of this config holds with its matrices kept as `types`
// (parameters_bytes of the result): the float32 vectors and the packed matrices.
std::uint64_t checkpoint_memory_bytes(const ModelConfig& config, const MatrixTypes& types);
// " as float32", or "; its matrices as bf16, the rest as float32": for "N weights..." in messages.
std::string checkpoint_types_text(const ModelConfig& config, const MatrixTypes& types);

// Where each tensor of a model's files goes, from the headers only (no weight is read, so it
// is quick on a large model): for `headlab info` (model_describe in model_files.h).
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
  bool quantized = false;              // some matrix is kept in a GGUF file's quantized blocks
  std::vector<ConfigKeyUse> keys;      // every key of config.json (config_key_uses), or of a GGUF file's metadata
  std::vector<std::string> files;      // the weight files read
  std::vector<TensorMapping> tensors;  // every tensor of those files, in their order
};
}  // namespace headlab::model
