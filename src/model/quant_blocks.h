// model/quant_blocks.h — ggml's quantized block types (llama.cpp's GGUF files), kept in memory as
// the file has them. Each block holds 32 or 256 weights of one row:
//   Q8_0            x = d * q                      q int8
//   Q4_0, Q5_0      x = d * (q - 8), d * (q - 16)  q 4 or 5 bits
//   Q4_1, Q5_1      x = d * q + m   (d * q itself when that is a NaN, whatever m: the same NaN
//                   whichever operand order a compiler gives the addition)
//   Q2_K .. Q5_K    256 weights in 16 or 8 sub-blocks, each with its own scale (and minimum)
//                   quantized against the block's d (and dmin):  x = d*sc*q - dmin*mn
//   Q3_K, Q6_K      x = d * sc * q, q signed (3 or 6 bits), sc a signed 6- or 8-bit scale
// d, dmin and m are IEEE halves. A row of C weights is C / block_elements blocks, one after another.
//
//   std::vector<float> w(cols);
//   quant_dequantize(WeightType::q4_k, row_blocks, cols, w.data());  // one row, widened to float32
#pragma once

#include <cstddef>
#include <cstdint>

#include "model/weight_type.h"

namespace headlab::model {

bool weight_type_quantized(WeightType t);        // one of ggml's block types (not f32, bf16, f16)
int quant_block_elements(WeightType t);          // weights per block: 32 or 256 (1 for the float types)
int quant_block_bytes(WeightType t);             // bytes per block
std::size_t quant_row_bytes(WeightType t, int cols);  // cols must be a multiple of the block's weights

// The 6-bit scale and minimum of sub-block s (< 8) of a Q4_K or Q5_K block's 12 scale bytes q:
// s < 4 in the low 6 bits of bytes s and s + 4; s >= 4 in the nibbles of byte s + 4 with
// their top 2 bits in the top bits of bytes s - 4 and s. (The scalar and SIMD decoders' one copy.)
inline void quant_scale_min_k4(const unsigned char* q, int s, int& scale, int& min) {
  if (s < 4) {
    scale = q[s] & 63;
    min = q[s + 4] & 63;
  } else {
    scale = (q[s + 4] & 0x0f) | (q[s - 4] >> 6) << 4;
    min = (q[s + 4] >> 4) | (q[s] >> 6) << 4;
  }
}

// The signed 6-bit scale of sub-block s (< 16) of a Q3_K block's 12 scale bytes q, stored plus
// 32: its low 4 bits in q[s % 8] (low nibble for s < 8, high for the rest), its high 2 bits at
// bits 2 * (s / 4) of q[8 + s % 4]. (The scalar and SIMD decoders' one copy.)
inline int quant_scale_k3(const unsigned char* q, int s) {
  const int low = s < 8 ? q[s] & 0x0f : q[s - 8] >> 4;
  const int high = (q[8 + s % 4] >> (2 * (s / 4))) & 3;
  return (low | high << 4) - 32;
}

// Writes n floats to out from the blocks at `blocks` (n / quant_block_elements(t) of them); n a
// multiple of the block's weights. Exact: each weight is the float32 the formula above gives.
void quant_dequantize(WeightType t, const unsigned char* blocks, std::int64_t n, float* out);

// Where a block keeps its half scales: the byte offsets of d and of dmin or m (-1 when the type
// has no second one); {-1, -1} for the float types. Every weight of a block is a half scale
// times a small integer, so the block is finite exactly when these are.
struct QuantScaleOffsets {
  int d = -1, min = -1;
};
QuantScaleOffsets quant_scale_offsets(WeightType t);

// The first of n_blocks blocks whose half scales are not finite (so neither are its weights), or -1.
std::int64_t quant_first_nonfinite_block(WeightType t, const unsigned char* blocks, std::int64_t n_blocks);

}  // namespace headlab::model
