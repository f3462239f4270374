// model/packed_weights.h — a second copy of the model's matrices in the panel layout of
// matmul_forward_packed (ops/matmul_packed.h), which the inference forward uses for inputs
// of up to matmul_packed_max_rows() tokens.
//
//   parameters_pack(p);          // checkpoint_load does this; no-op without AVX-512
//   forward(p, ids, ...);        // short inputs now read p.packed
//
// A copy: it costs as much memory again as the matrices (GPT-2 small: +470 MB, still below
// PyTorch's peak at every benchmarked length), and it does not follow later changes to
// p.memory. Code that changes the weights of a packed model must pack again, or drop the
// copy with parameters_unpack (the trainer never reads it).
#pragma once

#include <cstddef>
#include <vector>

#include "model/parameters.h"

namespace headlab::model {

struct PackedWeights {
  std::vector<float> memory;
  // Layer l's matrix is at base + l * stride; each is a matmul_pack of the (OC, C) weight.
  const float* qkvw = nullptr;        // (3C, C) per layer
  const float* attprojw = nullptr;    // (C, C)
  const float* fcw = nullptr;         // (4C, C)   (mlp only)
  const float* fcprojw = nullptr;     // (C, 4C)   (mlp only)
  const float* unembedding = nullptr; // (V, C)
  std::size_t qkvw_stride = 0, attprojw_stride = 0, fcw_stride = 0, fcprojw_stride = 0;
};

// Packs p's matrices into p.packed when matmul_packed_supported(); else leaves it empty.
void parameters_pack(Parameters& p);
void parameters_unpack(Parameters& p);

}  // namespace headlab::model
