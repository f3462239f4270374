// formats/gguf/gguf_dequantize.cpp — GGUF's tensor types to float32: the float types here, the
// quantized blocks by the engine's decoders (model/quant_blocks.h). Little-endian.
#include "formats/gguf/gguf_dequantize.h"

#include <cstring>

#include "model/quant_blocks.h"

#include "util/check.h"

namespace headlab::model::gguf {

namespace {

std::uint16_t u16_at(const unsigned char* p) { return std::uint16_t(p[0] | (p[1] << 8)); }

}  // namespace

std::optional<WeightType> weight_type_of(TensorType type) {
  switch (type) {
    case TensorType::q4_0: return WeightType::q4_0;
    case TensorType::q4_1: return WeightType::q4_1;
    case TensorType::q5_0: return WeightType::q5_0;
    case TensorType::q5_1: return WeightType::q5_1;
    case TensorType::q8_0: return WeightType::q8_0;
    case TensorType::q2_k: return WeightType::q2_k;
    case TensorType::q3_k: return WeightType::q3_k;
    case TensorType::q4_k: return WeightType::q4_k;
    case TensorType::q5_k: return WeightType::q5_k;
    case TensorType::q6_k: return WeightType::q6_k;
    case TensorType::f32: return WeightType::f32;
    case TensorType::f16: return WeightType::f16;
    case TensorType::bf16: return WeightType::bf16;
  }
  return std::nullopt;
}

float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = std::uint32_t(h & 0x8000) << 16;
  std::uint32_t exponent = (h >> 10) & 0x1f;
  std::uint32_t mantissa = h & 0x3ff;
  std::uint32_t bits;
  if (exponent == 0x1f) {
    bits = sign | 0x7f800000u | mantissa << 13;  // inf or NaN
  } else if (exponent != 0) {
    bits = sign | (exponent + 112) << 23 | mantissa << 13;  // rebias 15 -> 127
  } else if (mantissa == 0) {
    bits = sign;  // zero
  } else {
    // subnormal: shift the mantissa up until its leading one is the implicit bit
    exponent = 113;
    while (!(mantissa & 0x400)) {
      mantissa <<= 1;
      exponent--;
    }
    bits = sign | exponent << 23 | (mantissa & 0x3ff) << 13;
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

float bf16_to_float(std::uint16_t b) {
  const std::uint32_t bits = std::uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

void dequantize(TensorType type, const unsigned char* blocks, std::int64_t n, float* out) {
  HEADLAB_CHECK(n % block_elements(type) == 0);
  switch (type) {
    case TensorType::f32: std::memcpy(out, blocks, std::size_t(n) * 4); return;
    case TensorType::f16:
      for (std::int64_t i = 0; i < n; i++) out[i] = half_to_float(u16_at(blocks + 2 * i));
      return;
    case TensorType::bf16:
      for (std::int64_t i = 0; i < n; i++) out[i] = bf16_to_float(u16_at(blocks + 2 * i));
      return;
    default: quant_dequantize(*weight_type_of(type), blocks, n, out);
  }
}

}  // namespace headlab::model::gguf
