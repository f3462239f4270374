// formats/gguf/gguf_types.cpp — names and block sizes of GGUF's types (ggml-common.h's
// block_* structs: a half scale d, maybe a half minimum m, then the packed quants; their
// layouts live in model/quant_blocks).
#include "formats/gguf/gguf_types.h"

#include "formats/gguf/gguf_dequantize.h"  // weight_type_of
#include "model/quant_blocks.h"

namespace headlab::model::gguf {

std::string_view value_type_name(ValueType type) {
  switch (type) {
    case ValueType::u8: return "uint8";
    case ValueType::i8: return "int8";
    case ValueType::u16: return "uint16";
    case ValueType::i16: return "int16";
    case ValueType::u32: return "uint32";
    case ValueType::i32: return "int32";
    case ValueType::f32: return "float32";
    case ValueType::boolean: return "bool";
    case ValueType::string: return "string";
    case ValueType::array: return "array";
    case ValueType::u64: return "uint64";
    case ValueType::i64: return "int64";
    case ValueType::f64: return "float64";
  }
  return "unknown";
}

int value_type_size(ValueType type) {
  switch (type) {
    case ValueType::u8: case ValueType::i8: case ValueType::boolean: return 1;
    case ValueType::u16: case ValueType::i16: return 2;
    case ValueType::u32: case ValueType::i32: case ValueType::f32: return 4;
    case ValueType::u64: case ValueType::i64: case ValueType::f64: return 8;
    case ValueType::string: case ValueType::array: return 0;
  }
  return 0;
}

bool tensor_type_known(std::uint32_t id) {
  switch (id) {
    case 0: case 1: case 2: case 3: case 6: case 7: case 8:
    case 10: case 11: case 12: case 13: case 14: case 30: return true;
    default: return false;
  }
}

std::string tensor_type_name(std::uint32_t id) {
  switch (id) {
    case 0: return "F32";
    case 1: return "F16";
    case 2: return "Q4_0";
    case 3: return "Q4_1";
    case 6: return "Q5_0";
    case 7: return "Q5_1";
    case 8: return "Q8_0";
    case 10: return "Q2_K";
    case 11: return "Q3_K";
    case 12: return "Q4_K";
    case 13: return "Q5_K";
    case 14: return "Q6_K";
    case 30: return "BF16";
  }
  // ggml's other types, named so the refusal says what the file holds
  static constexpr std::string_view others[] = {
      "", "", "", "", "Q4_2 (removed)", "Q4_3 (removed)", "", "", "", "Q8_1", "", "", "", "", "", "Q8_K",
      "IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S", "IQ4_NL", "IQ3_S", "IQ2_S", "IQ4_XS", "I8", "I16", "I32",
      "I64", "F64", "IQ1_M", "", "Q4_0_4_4 (removed)", "Q4_0_4_8 (removed)", "Q4_0_8_8 (removed)", "TQ1_0",
      "TQ2_0", "IQ4_NL_4_4 (removed)", "IQ4_NL_4_8 (removed)", "IQ4_NL_8_8 (removed)", "MXFP4", "NVFP4",
      "Q1_0", "Q2_0"};
  if (id < std::size(others) && !others[id].empty()) return "type " + std::to_string(id) + " (" + std::string(others[id]) + ")";
  return "type " + std::to_string(id) + " (unknown)";
}

// The block layouts are the engine's (model/quant_blocks.cpp keeps them, and reads them).
int block_elements(TensorType type) {
  const auto t = weight_type_of(type);
  return t ? quant_block_elements(*t) : 1;
}

int block_bytes(TensorType type) {
  const auto t = weight_type_of(type);
  return t ? quant_block_bytes(*t) : 0;
}

}  // namespace headlab::model::gguf
