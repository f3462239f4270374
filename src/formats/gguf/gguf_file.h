// formats/gguf/gguf_file.h — reads a GGUF file (llama.cpp's model format, ggml's docs/gguf.md):
//   "GGUF" | u32 version (2 or 3) | u64 tensor_count | u64 metadata_kv_count
//   | metadata: (string key, u32 value type, value) * kv_count
//   | tensor infos: (string name, u32 n_dims, u64 ne[n_dims], u32 type, u64 offset) * tensor_count
//   | padding to general.alignment (default 32) | tensor data (each offset aligned)
//   string = u64 length | bytes;  array = u32 element type | u64 count | elements.
// ne[0] is the fastest dimension: a matrix of `rows` rows of `cols` floats has ne = {cols, rows}.
//
//   Result<gguf::File> f = gguf::file_open("model.gguf");   // mmap; header checked
//   const gguf::Value* arch = f->find("general.architecture");
//   const gguf::TensorInfo* t = f->find_tensor("token_embd.weight");
//   const unsigned char* bytes = f->tensor_data(*t);          // t->bytes of them
//
// Everything a lying file can get wrong is refused with a message that names it, before
// anything is allocated from one of its counts: a count larger than the file can hold, a
// string longer than the file, an unknown value or tensor type, more than 4 dims or dims whose
// product overflows, offsets past the end or not aligned, tensors that overlap.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "formats/gguf/gguf_types.h"
#include "util/result.h"

namespace headlab::model::gguf {

inline constexpr std::uint32_t kMagic = 0x46554747;  // "GGUF" read as a little-endian u32
inline constexpr std::uint64_t kDefaultAlignment = 32;
inline constexpr int kMaxDims = 4;  // GGML_MAX_DIMS

// One metadata value. Scalars keep their bits; arrays of fixed-size values point into the
// file's bytes (read with element_int / element_float); string arrays are copied.
struct Value {
  ValueType type = ValueType::u8;
  std::uint64_t bits = 0;              // a scalar's little-endian bytes, zero-extended
  std::string text;                    // type string
  ValueType element_type = ValueType::u8;  // type array
  std::uint64_t count = 0;             // type array: number of elements
  const unsigned char* elements = nullptr;  // fixed-size elements (count * value_type_size), in the file
  std::vector<std::string> strings;    // string elements
  std::vector<Value> arrays;           // array elements (one level of nesting)

  bool is_integer() const;   // u8 .. i64 (not bool)
  bool is_float() const { return type == ValueType::f32 || type == ValueType::f64; }
  // The value as a signed integer; nullopt if not an integer type or a u64 above INT64_MAX.
  std::optional<std::int64_t> as_int() const;
  // An integer or floating value as a double; nullopt otherwise.
  std::optional<double> as_number() const;
  std::optional<bool> as_bool() const;
  // Element i of a fixed-size array, as as_int / as_number would read it.
  std::optional<std::int64_t> element_int(std::uint64_t i) const;
  std::optional<double> element_number(std::uint64_t i) const;
};

struct TensorInfo {
  std::string name;
  std::vector<std::int64_t> ne;  // (n_dims) ne[0] fastest
  TensorType type = TensorType::f32;
  std::uint64_t offset = 0;      // from the start of the data section
  std::uint64_t bytes = 0;       // ne's product / block_elements * block_bytes
  std::int64_t elements() const;
  // rows x cols as headlab stores a matrix: (ne[1] * ne[2] * ..., ne[0])
  std::int64_t cols() const { return ne.empty() ? 1 : ne[0]; }
  std::int64_t rows() const { return cols() > 0 ? elements() / cols() : 0; }
};

struct File {
  std::string path;  // for messages
  std::uint32_t version = 0;
  std::vector<std::pair<std::string, Value>> metadata;  // in file order
  std::vector<TensorInfo> tensors;                      // in file order
  std::uint64_t alignment = kDefaultAlignment;
  std::uint64_t data_start = 0;  // file offset of the data section
  const unsigned char* bytes = nullptr;  // the whole file (size bytes)
  std::uint64_t size = 0;
  std::shared_ptr<const void> owner;  // keeps `bytes` mapped (file_open); null for file_parse

  const Value* find(std::string_view key) const;  // null if absent
  const TensorInfo* find_tensor(std::string_view name) const;
  const unsigned char* tensor_data(const TensorInfo& t) const { return bytes + data_start + t.offset; }
};

// Parses a file already in memory; the bytes must outlive the result. `path` names it in messages.
// Errors: corrupt (every lie listed above, named), unsupported (version 1, a big-endian file,
// a tensor type headlab does not read).
Result<File> file_parse(const unsigned char* bytes, std::uint64_t size, const std::string& path);
// Maps the file read-only and parses it. + not_found, io_error.
Result<File> file_open(const std::string& path);

// true when `path` names a GGUF file by its extension (".gguf"): the loaders' switch.
bool is_gguf_path(std::string_view path);

}  // namespace headlab::model::gguf
