// formats/model_files.h — the one door from a path to a model: a Hugging Face folder
// (hf/checkpoint.h: config.json, safetensors, tokenizer files) or llama.cpp's GGUF file
// (gguf/: metadata, tensors and the tokenizer in one file). The CLI, the server, the trainer
// and the benchmarks load through here, so every family and format reaches all of them.
//
//   Result<Parameters> p = model_load("models/gpt2");               // or "model.gguf"
//   Result<BpeTokenizer> tok = model_tokenizer_load("model.gguf");  // its metadata's tokenizer
//   model_load("models/llama-1b", {.cache = true});   // mapped from its weights cache after the first
#pragma once

#include <string>
#include <string_view>

#include "formats/model_description.h"
#include "model/parameters.h"
#include "model/weight_type.h"
#include "tokenizer/bpe_tokenizer.h"
#include "util/result.h"

namespace headlab::model {

// A path that is read as a GGUF file: it ends in ".gguf" and is not a directory.
bool is_gguf_model(const std::string& path);

// The weights: gguf::parameters_load for a GGUF file, checkpoint_load for a folder.
// With options.cache (and not rows), through the packed-weights cache beside the model
// (weights_cache.h) when the weights take at least options.cache_min_bytes: mapped when it
// matches the files (their size, time and header hash; the --dtype), else the files are read
// as without it and the cache is written or rebuilt. A cache that cannot be used or written is
// never an error: the files are read, and Parameters::notes says what happened to the cache.
// Errors: not_found when nothing is at `path` ("no such file or directory"), theirs.
Result<Parameters> model_load(const std::string& path, const LoadOptions& options = {});

// What model_load would make of `path` without reading a weight (`headlab info`):
// gguf::describe_file or checkpoint_describe. Errors: not_found (nothing at `path`), theirs.
Result<CheckpointDescription> model_describe(const std::string& path, DtypeChoice dtype = DtypeChoice::keep);

// The tokenizer: a GGUF file's tokenizer.ggml.* metadata converted to tokenizer.json
// (gguf::tokenizer_load), or a folder's own files (BpeTokenizer::load). Errors: theirs.
Result<BpeTokenizer> model_tokenizer_load(const std::string& path);

}  // namespace headlab::model
