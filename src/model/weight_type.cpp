// model/weight_type.cpp — weight types and the --dtype choice (see weight_type.h).
#include "model/weight_type.h"

#include <cstring>
#include <string>

namespace headlab::model {

std::string_view weight_type_name(WeightType t) {
  switch (t) {
    case WeightType::f32: return "f32";
    case WeightType::bf16: return "bf16";
    case WeightType::f16: return "f16";
    case WeightType::q4_0: return "Q4_0";
    case WeightType::q4_1: return "Q4_1";
    case WeightType::q5_0: return "Q5_0";
    case WeightType::q5_1: return "Q5_1";
    case WeightType::q8_0: return "Q8_0";
    case WeightType::q2_k: return "Q2_K";
    case WeightType::q3_k: return "Q3_K";
    case WeightType::q4_k: return "Q4_K";
    case WeightType::q5_k: return "Q5_K";
    case WeightType::q6_k: return "Q6_K";
  }
  return "?";
}

int weight_type_size(WeightType t) {
  return t == WeightType::f32 ? 4 : t == WeightType::bf16 || t == WeightType::f16 ? 2 : 0;
}

Result<DtypeChoice> dtype_choice_parse(std::string_view text) {
  if (text == "auto") return DtypeChoice::keep;
  if (text == "f32") return DtypeChoice::f32;
  if (text == "bf16") return DtypeChoice::bf16;
  if (text == "f16") return DtypeChoice::f16;
  return make_error(ErrorCode::invalid_argument,
                    "--dtype: \"" + std::string(text) + "\" is not one of " + std::string(kDtypeChoices) +
                        " (auto keeps the checkpoint's type; f32 widens; bf16 and f16 round the matrices)");
}

std::string_view dtype_choice_name(DtypeChoice choice) {
  switch (choice) {
    case DtypeChoice::keep: return "auto";
    case DtypeChoice::f32: return "f32";
    case DtypeChoice::bf16: return "bf16";
    case DtypeChoice::f16: return "f16";
  }
  return "?";
}

Result<ComputeChoice> compute_choice_parse(std::string_view text) {
  if (text == "f32") return ComputeChoice::f32;
  if (text == "bf16") return ComputeChoice::bf16;
  if (text == "q8") return ComputeChoice::q8;
  return make_error(ErrorCode::invalid_argument,
                    "--compute: \"" + std::string(text) + "\" is not one of " + std::string(kComputeChoices) +
                        " (f32 multiplies the inputs as they are; bf16 rounds them to bfloat16 for the products "
                        "with bf16 matrices; q8 rounds them to 8 bits for the products with GGUF's quantized "
                        "blocks)");
}

std::string_view compute_choice_name(ComputeChoice choice) {
  return choice == ComputeChoice::bf16 ? "bf16" : choice == ComputeChoice::q8 ? "q8" : "f32";
}

WeightType weight_type_for(DtypeChoice choice, Dtype file_type) {
  switch (choice) {
    case DtypeChoice::f32: return WeightType::f32;
    case DtypeChoice::bf16: return WeightType::bf16;
    case DtypeChoice::f16: return WeightType::f16;
    case DtypeChoice::keep: break;
  }
  if (file_type == Dtype::BF16) return WeightType::bf16;
  if (file_type == Dtype::F16) return WeightType::f16;
  return WeightType::f32;
}

bool weight_type_rounds(WeightType t, Dtype file_type) {
  switch (t) {
    case WeightType::f32: return file_type == Dtype::F64;
    case WeightType::bf16: return file_type != Dtype::BF16;
    case WeightType::f16: return file_type != Dtype::F16;
    default: return false;  // a block type is only ever the file's own
  }
  return true;
}

std::uint16_t weight_to_f16(float x) { return f32_to_f16(x); }
float weight_from_f16(std::uint16_t h) { return f16_to_f32(h); }

std::string_view dtype_name(Dtype d) {
  switch (d) {
    case Dtype::F32: return "F32";
    case Dtype::F16: return "F16";
    case Dtype::BF16: return "BF16";
    case Dtype::F64: return "F64";
    case Dtype::I64: return "I64";
    case Dtype::I32: return "I32";
    case Dtype::I16: return "I16";
    case Dtype::I8: return "I8";
    case Dtype::U8: return "U8";
    case Dtype::BOOL: return "BOOL";
  }
  return "?";
}

int dtype_size(Dtype d) {
  switch (d) {
    case Dtype::F64: case Dtype::I64: return 8;
    case Dtype::F32: case Dtype::I32: return 4;
    case Dtype::F16: case Dtype::BF16: case Dtype::I16: return 2;
    case Dtype::I8: case Dtype::U8: case Dtype::BOOL: return 1;
  }
  return 1;
}

float f16_to_f32(std::uint16_t h) {
  const std::uint32_t sign = std::uint32_t(h & 0x8000) << 16;
  std::uint32_t exp = (h >> 10) & 0x1f;
  std::uint32_t mant = h & 0x3ff;
  std::uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do {
        e++;
        mant <<= 1;
      } while ((mant & 0x400) == 0);
      bits = sign | (std::uint32_t(127 - 15 - e) << 23) | ((mant & 0x3ff) << 13);
    }
  } else if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

float bf16_to_f32(std::uint16_t b) {
  std::uint32_t bits = std::uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

std::uint16_t f32_to_bf16(float f) {
  std::uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((bits >> 16) | 0x40);  // NaN stays NaN
  bits += 0x7fff + ((bits >> 16) & 1);  // round to nearest even
  return static_cast<std::uint16_t>(bits >> 16);
}

std::uint16_t f32_to_f16(float f) {
  std::uint32_t x;
  std::memcpy(&x, &f, 4);
  const std::uint16_t sign = static_cast<std::uint16_t>((x >> 16) & 0x8000);
  const std::uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return sign | 0x7e00;                   // NaN
  if (ax >= 0x477ff000u) return sign | 0x7c00;                  // overflow (>= 65520) -> inf
  if (ax < 0x38800000u) {                                       // below the smallest normal: subnormal
    if (ax < 0x33000000u) return sign;                          // below half the smallest subnormal
    const std::uint32_t mant = (ax & 0x7fffff) | 0x800000;
    const int shift = 126 - int(ax >> 23);                      // 14 + (113 - e)
    // round to nearest even on the dropped bits
    const std::uint32_t dropped = mant & ((1u << shift) - 1);
    const std::uint32_t half = 1u << (shift - 1);
    std::uint32_t r = mant >> shift;
    if (dropped > half || (dropped == half && (r & 1))) r++;
    return static_cast<std::uint16_t>(sign | r);
  }
  std::uint32_t r = ((ax >> 23) - 112) << 10 | ((ax >> 13) & 0x3ff);
  const std::uint32_t dropped = ax & 0x1fff;
  if (dropped > 0x1000 || (dropped == 0x1000 && (r & 1))) r++;
  return static_cast<std::uint16_t>(sign | r);
}

}  // namespace headlab::model
