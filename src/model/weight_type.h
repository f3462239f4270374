// model/weight_type.h — the precision a matrix of a loaded model is kept in, and the --dtype
// choice that decides it. Whatever the storage, the arithmetic and its accumulation are float32:
// a 16-bit weight is widened in a register just before its multiply-add (bfloat16: a 16-bit
// shift; IEEE half: vcvtph2ps), and the activations are never rounded to 16 bits.
//
//   auto choice = dtype_choice_parse("bf16");           // --dtype bf16
//   WeightType t = weight_type_for(*choice, Dtype::F32); // bf16: an F32 checkpoint is rounded
//
//   type   bytes  range                     significant bits
//   f32    4      ±3.4e38                   24
//   bf16   2      ±3.4e38 (float32's)       8
//   f16    2      ±65504                    11
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

#include "util/result.h"

namespace headlab::model {

// The element types of a weight file (safetensors' dtypes; GGUF's float types map onto them).
enum class Dtype { F32, F16, BF16, F64, I64, I32, I16, I8, U8, BOOL };

std::string_view dtype_name(Dtype dtype);
int dtype_size(Dtype dtype);  // bytes per element


// f32, bf16, f16: one value per weight, in panels (packed_weights.h). The others are ggml's
// quantized blocks (quant_blocks.h), kept as a GGUF file holds them, row after row: only a GGUF
// loaded with --dtype auto has them.
enum class WeightType : std::uint8_t { f32, bf16, f16, q4_0, q4_1, q5_0, q5_1, q8_0, q2_k, q3_k, q4_k, q5_k, q6_k };

std::string_view weight_type_name(WeightType t);  // "f32", "bf16", "f16", "Q4_K", ...
int weight_type_size(WeightType t);               // bytes per weight: 4, 2, 2 (0 for the block types)

// --dtype: `auto` keeps each matrix in its file's type (F32, BF16, F16, and GGUF's quantized
// blocks; F64 becomes f32); `f32` widens every matrix (exactly); `bf16` and `f16`
// round every matrix to that type (to nearest, ties to even). Norms, biases and positions stay
// float32 whatever the choice: they are a small part of a model.
enum class DtypeChoice { keep, f32, bf16, f16 };

inline constexpr std::string_view kDtypeChoices = "auto, f32, bf16, f16";
// "auto", "f32", "bf16", "f16". Errors: invalid_argument naming the allowed values.
Result<DtypeChoice> dtype_choice_parse(std::string_view text);
std::string_view dtype_choice_name(DtypeChoice choice);

// --compute: what the products with a bf16 matrix multiply. `f32` (the default): the inputs as
// they are, float32 arithmetic (the reference's numbers). `bf16`: the inputs rounded to
// bfloat16 (to nearest, ties to even) as PyTorch's and llama.cpp's bfloat16 runs do, the
// products and their sums still float32; on a CPU with AVX512_BF16 that is one vdpbf16ps per two
// k, about twice as fast on long inputs (ops/matmul_packed.h). f32 and f16 matrices are not
// affected. `q8`: the products with GGUF's quantized matrices (Q4_0, Q8_0, Q4_K, Q5_K, Q6_K)
// round their inputs to 8 bits per block, ggml's Q8_K or Q8_0, and multiply integers as
// llama.cpp's CPU backend does (ops/matmul_quant_q8.h); the other matrices are not affected.
enum class ComputeChoice { f32, bf16, q8 };

inline constexpr std::string_view kComputeChoices = "f32, bf16, q8";
// "f32", "bf16", "q8". Errors: invalid_argument naming the allowed values.
Result<ComputeChoice> compute_choice_parse(std::string_view text);
std::string_view compute_choice_name(ComputeChoice choice);

// The type a matrix stored as `file_type` in the checkpoint is kept in under `choice`.
WeightType weight_type_for(DtypeChoice choice, Dtype file_type);
// Whether keeping a `file_type` matrix as `t` rounds it (F32 -> bf16, F16 -> bf16, ...).
bool weight_type_rounds(WeightType t, Dtype file_type);

// Round-to-nearest-even conversions of one value (the same as f32_to_bf16 and f32_to_f16 below; bfloat16's
// inline, since the loaders convert every weight: a bfloat16 is a float32's top half).
inline std::uint16_t weight_to_bf16(float x) {
  std::uint32_t bits;
  std::memcpy(&bits, &x, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((bits >> 16) | 0x40);  // NaN stays NaN
  bits += 0x7fff + ((bits >> 16) & 1);
  return static_cast<std::uint16_t>(bits >> 16);
}
inline float weight_from_bf16(std::uint16_t b) {
  const std::uint32_t bits = std::uint32_t(b) << 16;
  float x;
  std::memcpy(&x, &bits, 4);
  return x;
}
std::uint16_t weight_to_f16(float x);
float weight_from_f16(std::uint16_t h);

// IEEE half and bfloat16 <-> float (round to nearest even).
float f16_to_f32(std::uint16_t h);
float bf16_to_f32(std::uint16_t b);
std::uint16_t f32_to_f16(float f);
std::uint16_t f32_to_bf16(float f);

}  // namespace headlab::model
