// formats/safetensors.h — read and write the safetensors format (Hugging Face's checkpoints).
//   file = u64 little-endian N | N bytes of JSON header | tensor bytes
//   header = {"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ...,
//             "__metadata__": {"k": "v"}}   (offsets relative to the end of the header)
//
//   Result<SafetensorsFile> f = safetensors_read("model.safetensors");
//   if (!f) return tl::unexpected(f.error());
//   const SafetensorsTensor* t = f->find("wte.weight");
//   std::vector<float> w(t->numel());
//   Status s = safetensors_to_f32(*f, *t, w.data());     // F32, F16 or BF16 -> float
//
// Reading validates everything a lying file can get wrong: header length beyond the file,
// bad JSON, unknown dtype, shape x dtype size != byte count, offsets out of range,
// overlapping or leaving gaps. Errors name the file and the tensor.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "model/weight_type.h"  // Dtype, dtype_size, f16/bf16 <-> float
#include "util/result.h"

namespace headlab::model {

struct SafetensorsTensor {
  std::string name;
  Dtype dtype = Dtype::F32;
  std::vector<std::int64_t> shape;
  std::uint64_t begin = 0;  // byte offsets into SafetensorsFile::data
  std::uint64_t end = 0;
  std::int64_t numel() const;
};

struct SafetensorsFile {
  std::string path;                           // for error messages (and lazy reads)
  std::vector<SafetensorsTensor> tensors;     // in header order
  std::map<std::string, std::string> metadata;
  std::vector<unsigned char> data;            // the bytes after the header (empty when lazy)
  bool lazy = false;                          // true: tensors are read from `path` on demand
  std::uint64_t data_start = 0;               // file offset of the data (8 + header length)

  const SafetensorsTensor* find(const std::string& name) const;  // null if absent
};

// Parses a whole file already in memory; `path` is only for messages.
Result<SafetensorsFile> safetensors_parse(const unsigned char* bytes, std::size_t size,
                                          const std::string& path);
Result<SafetensorsFile> safetensors_read(const std::string& path);
// Reads and validates only the header; safetensors_to_f32 then reads each tensor from the
// file, so loading a model never holds the whole file and the weights at once.
Result<SafetensorsFile> safetensors_open(const std::string& path);

// A sharded checkpoint: model.safetensors.index.json ({"weight_map": {tensor: shard file}})
// and the shards it names, each opened as safetensors_open does, in the order first named.
// Errors: not_found (the index or a shard), corrupt (not such JSON, a shard name that is not
// a plain file name in the index's directory, a tensor the index puts in a shard that does
// not hold it, a tensor held by two shards), and the errors of safetensors_open.
Result<std::vector<SafetensorsFile>> safetensors_open_index(const std::string& index_path);

// Converts a floating tensor to float32. unsupported for integer dtypes; io_error when a
// lazy file can no longer be read (changed or truncated since it was opened).
Status safetensors_to_f32(const SafetensorsFile& file, const SafetensorsTensor& tensor, float* out);
// The same for elements [first, first + count) of the tensor (flat, row-major): a loader reads
// a large tensor in parts, so no whole copy of it is ever in memory beside the weights.
Status safetensors_to_f32_range(const SafetensorsFile& file, const SafetensorsTensor& tensor, std::int64_t first,
                                std::int64_t count, float* out);

// One tensor to write, from float32, stored as `dtype` (F32, F16 or BF16; round to nearest even).
struct SafetensorsWriteTensor {
  std::string name;
  std::vector<std::int64_t> shape;
  const float* values = nullptr;  // (product of shape)
};
Status safetensors_write(const std::string& path, const std::vector<SafetensorsWriteTensor>& tensors,
                         Dtype dtype, const std::map<std::string, std::string>& metadata);
// The same file's bytes in memory (an answer sent over HTTP): safetensors_parse reads them back.
// Errors: unsupported (a dtype other than F32, F16, BF16).
Result<std::string> safetensors_serialize(const std::vector<SafetensorsWriteTensor>& tensors, Dtype dtype,
                                          const std::map<std::string, std::string>& metadata);

}  // namespace headlab::model
