// formats/gguf/gguf_types.h — the type ids of the GGUF format (llama.cpp's model files):
// the metadata value types and ggml's tensor types with their block layouts.
//   A tensor of type t and n elements (n a multiple of block_elements(t)) takes
//   n / block_elements(t) * block_bytes(t) bytes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace headlab::model::gguf {

// The type of a metadata value (gguf.md's gguf_metadata_value_type).
enum class ValueType : std::uint32_t {
  u8 = 0, i8 = 1, u16 = 2, i16 = 3, u32 = 4, i32 = 5, f32 = 6, boolean = 7,
  string = 8, array = 9, u64 = 10, i64 = 11, f64 = 12,
};
inline constexpr std::uint32_t kValueTypeCount = 13;
std::string_view value_type_name(ValueType type);
// Bytes of one value of a fixed-size type; 0 for string and array.
int value_type_size(ValueType type);

// ggml's tensor types headlab reads (ids as in ggml.h; the others are refused by name).
enum class TensorType : std::uint32_t {
  f32 = 0, f16 = 1, q4_0 = 2, q4_1 = 3, q5_0 = 6, q5_1 = 7, q8_0 = 8,
  q2_k = 10, q3_k = 11, q4_k = 12, q5_k = 13, q6_k = 14, bf16 = 30,
};

// true when headlab can dequantize the type id.
bool tensor_type_known(std::uint32_t id);
// "Q4_K", or "type 16 (IQ2_XXS)" style names for ids headlab does not read.
std::string tensor_type_name(std::uint32_t id);
int block_elements(TensorType type);  // elements per block: 1, 32 or 256
int block_bytes(TensorType type);     // bytes per block

}  // namespace headlab::model::gguf
