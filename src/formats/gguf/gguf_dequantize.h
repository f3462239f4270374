// formats/gguf/gguf_dequantize.h — ggml's tensor types to float32, at load (--dtype f32, bf16
// or f16; --dtype auto keeps the quantized blocks as they are: model/quant_blocks.h has their
// layouts and decoders).
//
//   std::vector<float> w(t.elements());
//   dequantize(t.type, file.tensor_data(t), t.elements(), w.data());
#pragma once

#include <cstdint>
#include <optional>

#include "formats/gguf/gguf_types.h"
#include "model/weight_type.h"

namespace headlab::model::gguf {

// Writes n floats to out from the blocks at `blocks` (n / block_elements(type) of them).
// n must be a multiple of block_elements(type) (the reader checks every tensor's rows).
void dequantize(TensorType type, const unsigned char* blocks, std::int64_t n, float* out);

// The engine's WeightType of a tensor type (the block types are kept as they are by --dtype auto).
std::optional<WeightType> weight_type_of(TensorType type);

// IEEE half and bfloat16 to float.
float half_to_float(std::uint16_t h);
float bf16_to_float(std::uint16_t b);

}  // namespace headlab::model::gguf
