// formats/gguf/gguf_dequantize.h — ggml's tensor types to float32, at load (headlab computes
// in float32). Each quantized type stores blocks of 32 or 256 weights:
//   Q8_0            x = d * q                      q int8
//   Q4_0, Q5_0      x = d * (q - 8), d * (q - 16)  q 4 or 5 bits
//   Q4_1, Q5_1      x = d * q + m
//   Q2_K .. Q5_K    256 weights in 16 or 8 sub-blocks, each with its own scale (and minimum)
//                   quantized against the block's d (and dmin):  x = d*sc*q - dmin*mn
//   Q3_K, Q6_K      x = d * sc * q, q signed (3 or 6 bits), sc a signed 6- or 8-bit scale
//
//   std::vector<float> w(t.elements());
//   dequantize(t.type, file.tensor_data(t), t.elements(), w.data());
#pragma once

#include <cstdint>

#include "formats/gguf/gguf_types.h"

namespace headlab::model::gguf {

// Writes n floats to out from the blocks at `blocks` (n / block_elements(type) of them).
// n must be a multiple of block_elements(type) (the reader checks every tensor's rows).
void dequantize(TensorType type, const unsigned char* blocks, std::int64_t n, float* out);

// IEEE half and bfloat16 to float.
float half_to_float(std::uint16_t h);
float bf16_to_float(std::uint16_t b);

}  // namespace headlab::model::gguf
