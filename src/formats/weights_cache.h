// formats/weights_cache.h — a loaded model's weights kept beside it as memory holds them (the
// packed panels in their precision, parameters.h), so that the next load maps one file instead of
// reading, widening, checking and packing every weight again (a 2.5 GB BF16 model: seconds
// instead of ten). model_load (model_files.h) uses it when LoadOptions::cache asks.
//
//   Result<WeightsFingerprint> fp = weights_fingerprint({{dir + "/config.json", kWholeFile},
//                                                        {dir + "/model.safetensors", header_bytes}});
//   Result<Parameters> p = weights_cache_map(path, config, types, *fp, DtypeChoice::keep);
//   if (!p) { p = checkpoint_load(dir); weights_cache_write(path, *p, *fp, DtypeChoice::keep); }
//
// The file (little-endian):
//   "HLWCACHE" | u64 N | N bytes of JSON header | zeros to a multiple of 4096
//   | vectors: parameters_vector_count float32 | zeros to a multiple of 4096
//   | block: parameters_packed_block_bytes of panels
//   header = {"format": 1, "dtype": "auto", "sources": [{"name", "size", "mtime_ns",
//             "header_bytes", "header_fnv1a64"}], "types": ["bf16", ...] (one per tensor),
//             "vectors": count, "vectors_offset", "block_bytes", "block_offset", "file_bytes",
//             "panel": 32}
// A cache is used only when every source file has the size, the modification time and the hash
// of its header (the safetensors or GGUF header; all of config.json) it had when the cache was
// written, the --dtype is the same, and the layout the config and types give is the one stored.
// Anything else is stale, said why, and the caller rebuilds it.
//
// Contract of a mapped model: the cache is mapped (private, copy-on-write), never copied; a
// cache is replaced by writing a new file and renaming it over the old, so a process that maps
// the old one keeps reading its own. Truncating a mapped cache in place (by hand) while a model
// uses it is outside the contract (the kernel would end the process at the next read).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/parameters.h"
#include "model/weight_type.h"
#include "util/result.h"

namespace headlab::model {

// A file the weights come from and how many bytes at its start are its header.
inline constexpr std::uint64_t kWholeFile = ~std::uint64_t(0);
struct WeightsSource {
  std::string path;
  std::uint64_t header_bytes = kWholeFile;  // kWholeFile: all of it (config.json, an index)
};

// What the cache remembers of one source.
struct WeightsSourceStamp {
  std::string name;              // the file's name (not its directory: a model folder may move)
  std::uint64_t size = 0;
  std::int64_t mtime_ns = 0;
  std::uint64_t header_bytes = 0;
  std::uint64_t header_fnv1a64 = 0;
  bool operator==(const WeightsSourceStamp&) const = default;
};
using WeightsFingerprint = std::vector<WeightsSourceStamp>;

// Stats each source and hashes its header (FNV-1a, 64 bits). Errors: not_found, io_error.
Result<WeightsFingerprint> weights_fingerprint(const std::vector<WeightsSource>& sources);

// Where the cache of a model at `model_path` with --dtype `dtype` lives: inside a folder
// ("DIR/headlab-weights.auto.cache"), beside a file ("model.gguf.headlab-weights.auto.cache").
std::string weights_cache_path(const std::string& model_path, DtypeChoice dtype);

// Maps the cache as Parameters with `config`'s shapes and `types`' matrices.
// Errors: not_found (no cache), corrupt (stale or not a cache: the message says what differs:
// which source changed and how, another --dtype, a truncated file, another layout), io_error.
Result<Parameters> weights_cache_map(const std::string& cache_path, const ModelConfig& config, const MatrixTypes& types,
                                     const WeightsFingerprint& fingerprint, DtypeChoice dtype);

// Writes p (a packed model) as a cache: into a temporary file in the same folder, then renamed
// over `cache_path`. Errors: io_error (an unwritable folder, a full disk: nothing is left
// behind), unsupported (p keeps float32 rows, not packed panels).
Status weights_cache_write(const std::string& cache_path, const Parameters& p, const WeightsFingerprint& fingerprint,
                           DtypeChoice dtype);

}  // namespace headlab::model
