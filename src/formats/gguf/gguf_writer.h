// formats/gguf/gguf_writer.h — writes a GGUF file (version 3, little-endian, alignment 32):
// the metadata in the order given, then the tensor infos, then each tensor's data at the
// next multiple of 32 bytes. The layout is gguf_file.h's; file_parse reads it back.
//
//   std::vector<gguf::Metadata> meta = {{"general.architecture", gguf::meta_string("gpt2")}};
//   Status s = gguf::file_write("out.gguf", meta, {{"token_embd.weight", {C, V}, TensorType::f16, wte}});
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "formats/gguf/gguf_types.h"
#include "util/result.h"

namespace headlab::model::gguf {

// One value to write: a scalar (its bits), a string, or an array of strings or of numbers.
struct MetadataValue {
  ValueType type = ValueType::u32;
  std::uint64_t bits = 0;
  std::string text;
  ValueType element_type = ValueType::u32;
  std::vector<std::string> strings;     // element_type string
  std::vector<std::uint64_t> numbers;   // fixed-size elements' bits
};
using Metadata = std::pair<std::string, MetadataValue>;

MetadataValue meta_u32(std::uint32_t v);
MetadataValue meta_i32(std::int32_t v);
MetadataValue meta_f32(float v);
MetadataValue meta_bool(bool v);
MetadataValue meta_string(std::string v);
MetadataValue meta_strings(std::vector<std::string> v);
MetadataValue meta_f32s(const std::vector<float>& v);
MetadataValue meta_i32s(const std::vector<std::int32_t>& v);

struct WriteTensor {
  std::string name;
  std::vector<std::int64_t> ne;  // ne[0] fastest
  TensorType type = TensorType::f32;  // F32, F16 or BF16 (round to nearest even)
  const float* values = nullptr;      // (product of ne)
  // or, when values is null: writes them into a buffer the writer holds while it writes this one
  std::function<void(float*)> fill;
};

// Errors: invalid_argument (a type other than F32/F16/BF16, an empty name), io_error.
Status file_write(const std::string& path, const std::vector<Metadata>& metadata, const std::vector<WriteTensor>& tensors);

}  // namespace headlab::model::gguf
