// model/packed_weights.h — the matrices of a loaded model, each stored once: in panels of 32
// output columns, in its own precision (weight_type.h). The inference forward multiplies
// straight from the panels (ops/matmul_packed.h); code that wants a matrix's rows — the
// embedding lookup, the scanner, the head views, saving and exporting — reads them through
// packed_read_rows (or parameters_read_rows, parameters.h), which widens to float32.
//
//   PackedMatrix m = ...;                       // (OC, C), from PackedWeights
//   packed_write_rows(m, 0, OC, weight);        // weight (OC, C) float32, rounded to m.type
//   std::vector<float> row(C);
//   packed_read_rows(m, 5, 1, row.data());      // row 5, widened back
//
// Layout of a matrix W (OC, C): ceil(OC / 32) panels, each (C, 32), the last zero-padded:
//   panel[p][k][j] = W[32p + j][k]
// f32 and f16 keep j in order. bf16 interleaves the two halves of a panel row: element 2i holds
// column i and element 2i+1 column 16 + i, so one 64-byte load widens to columns 0..15 by a
// 16-bit left shift of each 32-bit lane and to columns 16..31 by masking the low half (no
// shuffle). Why panels: with few input rows a product reads far more weights than inputs;
// sgemm would copy every weight into its own panel layout on every call (30% of a 64-token
// GPT-2-small forward); packed once, each panel streams from memory under the FMAs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "model/weight_type.h"

namespace headlab::model {

inline constexpr int kPanel = 32;  // output columns per panel

// One matrix (rows, cols) = (OC, C) in panels. Does not own its bytes (PackedWeights does).
struct PackedMatrix {
  WeightType type = WeightType::f32;
  int rows = 0, cols = 0;       // OC, C
  unsigned char* data = nullptr;  // packed_bytes(type, rows, cols), 64-byte aligned

  int panels() const { return (rows + kPanel - 1) / kPanel; }
  std::size_t panel_bytes() const { return std::size_t(cols) * kPanel * weight_type_size(type); }
  const unsigned char* panel(int p) const { return data + std::size_t(p) * panel_bytes(); }
};

std::size_t packed_bytes(WeightType type, int rows, int cols);  // ceil(rows/32) * 32 * cols * size

// Writes rows [row0, row0 + n) of m from src (n, cols) float32, rounding to m.type (nearest,
// ties to even). Returns the flat index into src of the first value the type cannot hold
// (|x| > 65504 for f16 turns infinite), or -1 when all fit. Split over the thread pool.
std::int64_t packed_write_rows(PackedMatrix& m, int row0, int n, const float* src);
// Reads rows [row0, row0 + n) of m into out (n, cols), widened to float32 (exactly).
void packed_read_rows(const PackedMatrix& m, int row0, int n, float* out);
// Zeroes the padding columns of the last panel (the writer fills only real rows).
void packed_clear_padding(PackedMatrix& m);

// One matrix with bytes of its own (tests, benchmarks): `weight` (rows, cols) float32 packed
// as `type` (rounded). Throws std::bad_alloc.
struct OwnedPackedMatrix {
  PackedMatrix m;
  std::unique_ptr<unsigned char, void (*)(void*)> bytes{nullptr, nullptr};
};
OwnedPackedMatrix packed_matrix_from_rows(WeightType type, const float* weight, int rows, int cols);

// The model's matrices. One allocation holds them all, 64-byte aligned.
struct PackedWeights {
  PackedMatrix wte;                      // (V, C) token embedding; the unembedding when tied
  PackedMatrix lm_head;                  // (V, C) separate unembedding (untied only; else rows = 0)
  std::vector<PackedMatrix> qkvw;        // (L) of (QKV, C)   c_attn, rows [q; k; v]
  std::vector<PackedMatrix> attprojw;    // (L) of (C, D)     attn c_proj (W_O)
  std::vector<PackedMatrix> fcw;         // (L) of (FC, C)    mlp c_fc ([gate; up] for SwiGLU/GeGLU)
  std::vector<PackedMatrix> fcprojw;     // (L) of (C, F)     mlp c_proj
  std::unique_ptr<unsigned char, void (*)(void*)> memory{nullptr, nullptr};
  std::size_t bytes = 0;                 // of `memory`

  const PackedMatrix& unembedding(bool tied) const { return tied ? wte : lm_head; }
};

}  // namespace headlab::model
