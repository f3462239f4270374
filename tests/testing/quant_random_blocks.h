// testing/quant_random_blocks.h — random ggml blocks of a quantized type for the product tests
// (matmul_packed_test, matmul_quant_q8_test).
//
//   std::vector<unsigned char> b = quant_random_blocks(WeightType::q4_k, rows, cols, seed);
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "model/quant_blocks.h"
#include "model/weight_type.h"

namespace headlab::testing {

// rows x cols weights as blocks: random quants and sub-block scales, the half scales (d, and m or
// dmin) set to small finite values so every weight is finite and of a usual size.
inline std::vector<unsigned char> quant_random_blocks(model::WeightType t, int rows, int cols, unsigned seed) {
  using model::WeightType;
  std::vector<unsigned char> b(std::size_t(rows) * model::quant_row_bytes(t, cols));
  unsigned x = seed * 2654435761u + 1;
  for (unsigned char& c : b) c = static_cast<unsigned char>((x = x * 1664525u + 1013904223u) >> 24);
  const model::QuantScaleOffsets o = model::quant_scale_offsets(t);
  const int at[2] = {o.d, o.min};
  const std::size_t bytes = std::size_t(model::quant_block_bytes(t));
  for (std::size_t k = 0; k < b.size() / bytes; k++)
    for (int a : at)
      if (a >= 0) {
        const float v = (1.0f + float(k % 7)) * (t == WeightType::q6_k || t == WeightType::q3_k ? 1e-3f : 1e-2f);
        const std::uint16_t h = model::f32_to_f16(a == at[1] ? v / 2 : v);
        b[k * bytes + std::size_t(a)] = h & 0xff;
        b[k * bytes + std::size_t(a) + 1] = h >> 8;
      }
  return b;
}

}  // namespace headlab::testing
