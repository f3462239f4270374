// formats/model_files.cpp — a path to a model, whichever its format (model_files.h).
#include "formats/model_files.h"

#include <filesystem>
#include <vector>

#include "formats/gguf/gguf_architecture.h"
#include "formats/gguf/gguf_file.h"
#include "formats/gguf/gguf_tokenizer.h"
#include "formats/hf/checkpoint.h"
#include "formats/safetensors.h"
#include "formats/weights_cache.h"
#include "util/file.h"

namespace headlab::model {

namespace {

// A path that names nothing is said to be missing, before a loader blames the kind of thing
// it expected there ("not a directory").
Status model_path_check(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::status(path, ec).type() == std::filesystem::file_type::not_found)
    return make_error(ErrorCode::not_found, path + ": no such file or directory (a model is a Hugging Face folder "
                                                   "or a .gguf file)");
  return {};
}

// The files a model's weights come from, each with the length of its header: a GGUF file up to
// its data; a folder's config.json (all of it) and model.safetensors or its index (all of it) and
// shards, each up to its data. Errors: those of opening them.
Result<std::vector<WeightsSource>> model_weight_sources(const std::string& path) {
  namespace fs = std::filesystem;
  if (is_gguf_model(path)) {
    auto f = gguf::file_open(path);
    if (!f) return tl::unexpected(f.error());
    return std::vector<WeightsSource>{{path, f->data_start}};
  }
  std::vector<WeightsSource> sources{{(fs::path(path) / "config.json").string(), kWholeFile}};
  const fs::path single = fs::path(path) / "model.safetensors";
  const fs::path index = fs::path(path) / "model.safetensors.index.json";
  std::error_code ec;
  if (!fs::exists(single, ec) && fs::exists(index, ec)) {
    auto shards = safetensors_open_index(index.string());
    if (!shards) return tl::unexpected(shards.error());
    sources.push_back({index.string(), kWholeFile});
    for (const SafetensorsFile& shard : *shards) sources.push_back({shard.path, shard.data_start});
    return sources;
  }
  auto file = safetensors_open(single.string());
  if (!file) return tl::unexpected(file.error());
  sources.push_back({single.string(), file->data_start});
  return sources;
}

Result<Parameters> model_load_files(const std::string& path, const LoadOptions& options) {
  if (is_gguf_model(path)) return gguf::parameters_load(path, options);  // llama.cpp's file
  return checkpoint_load(path, options);
}

// Through the cache beside the model (weights_cache.h): mapped when it matches the files, else
// the files are read as without a cache and the cache (re)written. A cache that cannot be used
// or written is never an error: the model loads from its files and a note says why.
Result<Parameters> model_load_cached(const std::string& path, const LoadOptions& options) {
  // what the files say (config, shapes, each matrix's type), from their headers: the same
  // checks as a load makes before reading a weight
  auto description = model_describe(path, options.dtype);
  if (!description) return tl::unexpected(description.error());
  if (description->memory_bytes < options.cache_min_bytes) return model_load_files(path, options);
  // quantized blocks are kept as the file has them: a load copies them without repacking, as
  // fast as a cache would map them, so none is written (a cache would cost their disk again)
  if (description->quantized) return model_load_files(path, options);
  auto sources = model_weight_sources(path);
  if (!sources) return tl::unexpected(sources.error());
  auto fingerprint = weights_fingerprint(*sources);  // before the weights are read: a file changed
  if (!fingerprint) return tl::unexpected(fingerprint.error());  // during the load makes the cache stale
  const std::string cache = weights_cache_path(path, options.dtype);
  auto mapped = weights_cache_map(cache, description->config, description->memory_types, *fingerprint, options.dtype);
  if (mapped) {
    mapped->rounded = description->rounds;
    parameters_set_compute(*mapped, options.compute);
    return mapped;
  }
  const Error miss = mapped.error();
  auto p = model_load_files(path, options);
  if (!p) return p;
  if (Status w = weights_cache_write(cache, *p, *fingerprint, options.dtype); !w)
    p->notes.push_back("the weights cache could not be " + std::string(miss.code == ErrorCode::not_found ? "written" : "rebuilt") +
                       " (" + w.error().message + "), so this load read the model's files, and so will the next; " +
                       "--no-cache stops trying");
  else if (miss.code == ErrorCode::not_found)
    p->notes.push_back("kept the packed weights in " + cache + " (" + file_size_text(parameters_bytes(*p)) +
                       "): the next load maps them instead of reading the model again; --no-cache to skip");
  else
    p->notes.push_back("rebuilt the weights cache (" + miss.message + ")");
  return p;
}

}  // namespace

bool is_gguf_model(const std::string& path) {
  std::error_code ec;
  return gguf::is_gguf_path(path) && !std::filesystem::is_directory(path, ec);
}

Result<Parameters> model_load(const std::string& path, const LoadOptions& options) {
  if (Status s = model_path_check(path); !s) return tl::unexpected(s.error());
  auto p = options.cache && !options.rows ? model_load_cached(path, options) : model_load_files(path, options);
  // --compute q8 changes only the products with quantized blocks: without one it would be a no-op
  if (p && options.compute == ComputeChoice::q8 && !parameters_quantizes_inputs(*p))
    return make_error(ErrorCode::invalid_argument,
                      "--compute q8 rounds the inputs of the products with GGUF's quantized matrices (Q4_0, Q8_0, "
                      "Q4_K, Q5_K, Q6_K blocks) to 8 bits, and " + path +
                          " keeps none in memory: load a GGUF file of those types with --dtype auto, or leave "
                          "--compute out");
  return p;
}

Result<CheckpointDescription> model_describe(const std::string& path, DtypeChoice dtype) {
  if (Status s = model_path_check(path); !s) return tl::unexpected(s.error());
  if (is_gguf_model(path)) return gguf::describe_file(path, dtype);
  return checkpoint_describe(path, dtype);
}

Result<BpeTokenizer> model_tokenizer_load(const std::string& path) {
  if (is_gguf_model(path)) return gguf::tokenizer_load(path);  // its metadata's tokenizer
  return BpeTokenizer::load(path);
}

}  // namespace headlab::model
