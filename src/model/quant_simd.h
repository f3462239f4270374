// model/quant_simd.h — ggml's blocks (quant_blocks.h) decoded with SIMD: AVX2 (8 weights a
// register) and AVX-512F (16), each giving quant_dequantize's float32 values bit for bit (the
// same half scale, widened by F16C; the same integer quants; the same products and differences
// rounded in the same order: d * sc * q - dmin * m as (d * sc) * q - (dmin * m), never fused; the
// same NaN where two meet in d * q + m), and the 8 x 8 transposition that turns 8 decoded rows
// into 8 columns of a float32 panel (packed_weights.h).
//
//   QuantDecoder d = quant_decoder_best();                 // chosen once from cpuid
//   quant_dequantize_with(d, WeightType::q4_k, blocks, 512, row);   // == quant_dequantize's
//
// Decoders of their own for every block type: Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K,
// Q5_K, Q6_K (quant_blocks.h); the float types are not blocks and have none.
#pragma once

#include <cstdint>
#include <string_view>

#include "model/weight_type.h"

namespace headlab::model {

enum class QuantDecoder { scalar, avx2, avx512 };

QuantDecoder quant_decoder_best();                        // avx512 (AVX-512F, F16C), avx2 (AVX2, F16C), else scalar
bool quant_decoder_supported(QuantDecoder d);             // this CPU (and build) runs it
std::string_view quant_decoder_name(QuantDecoder d);      // "avx512", "avx2", "scalar"
bool quant_decoder_simd(QuantDecoder d, WeightType t);    // d has SIMD code for t (else the scalar runs)

// quant_dequantize (n a multiple of the block's weights) through decoder d: the same floats.
void quant_dequantize_with(QuantDecoder d, WeightType t, const unsigned char* blocks, std::int64_t n, float* out);

// 8 rows of decoded weights into 8 columns of a panel: out[k * 32 + i] = rows[i * ld + k] for
// i < 8, k < n (a copy: every bit kept).
void quant_transpose8(QuantDecoder d, const float* rows, int ld, int n, float* out);

}  // namespace headlab::model
