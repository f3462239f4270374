// formats/hf/checkpoint.h — a model directory in the Hugging Face layout of GPT-2, GPT-NeoX,
// Llama, Mistral, Qwen 2/3 or Gemma 2/3 (config.json's model_type picks the names; src/formats/README.md
// lists each family's). GPT-2's:
//   config.json        the ModelConfig (model/config.h)
//   model.safetensors  the weights: names "wte.weight", "h.0.attn.c_attn.weight", ...
//                      with or without a "transformer." prefix; Conv1D matrices stored
//                      (in, out); F32, F16 or BF16; "attn.bias"/"attn.masked_bias" ignored
//   vocab.json + merges.txt, or tokenizer.json   the tokenizer (tokenizer/bpe_tokenizer.h)
//
//   Result<Parameters> p = checkpoint_load("models/gpt2");
//   Status s = checkpoint_save("out/model", *p, Dtype::F32);   // loads back in transformers
#pragma once

#include <cstdint>
#include <string>

#include "model/parameters.h"
#include "formats/hf/config_json.h"
#include "formats/model_description.h"
#include "formats/safetensors.h"
#include "util/result.h"

namespace headlab::model {

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

// Errors: those of checkpoint_load before it reads a weight (config, headers, shapes).
Result<CheckpointDescription> checkpoint_describe(const std::string& dir, DtypeChoice dtype = DtypeChoice::keep);

// Writes config.json and model.safetensors (names with the "transformer." prefix as
// GPT2LMHeadModel saves them, Conv1D orientation, lm_head.weight when untied).
Status checkpoint_save(const std::string& dir, const Parameters& params, Dtype dtype = Dtype::F32);

}  // namespace headlab::model
