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
// Layout of a matrix W (OC, C): ceil(OC / 32) panels, the last zero-padded.
//   f32, f16: each panel (C, 32):  panel[p][k][j] = W[32p + j][k]
//   bf16:     each panel (ceil(C / 2), 2, 16, 2), k in pairs (C padded to even with zeros):
//             panel[p][k / 2][j / 16][j % 16][k % 2] = W[32p + j][k]
// A bf16 pair block (two k, 32 columns, 128 bytes) is two 64-byte loads, each 16 columns with
// their k and k + 1 in one 32-bit lane: a 16-bit left shift of each lane widens column j's
// even k to float32 and masking the low half its odd k (no shuffle), and the same lane is what
// AVX512_BF16's dot product (vdpbf16ps) multiplies by a pair of bfloat16 inputs. The byte
// offset of an even k is k * 32 * 2 in both layouts (packed_row_offset).
//   quantized (ggml's blocks, quant_blocks.h; a GGUF under --dtype auto): not in panels but row
//             after row as the file has them, each row C / block_elements blocks, in up to three
//             bands of rows of one type each (c_attn's q, k and v are three tensors of the file,
//             which may differ: llama.cpp's Q4_K_M keeps v of some layers in Q6_K). A product
//             widens 32 rows at a time into a float32 panel (packed_quant_panel: SIMD block
//             decoders, quant_simd.h, and 8 x 8 transpositions) and runs the f32 kernel on it.
// Why panels: with few
// input rows a product reads far more weights than inputs; sgemm would copy every weight into
// its own panel layout on every call (30% of a 64-token GPT-2-small forward); packed once, each
// panel streams from memory under the FMAs.
#pragma once

#include <cstddef>
#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "model/quant_blocks.h"
#include "model/quant_simd.h"
#include "model/weight_type.h"

namespace headlab::model {

inline constexpr int kPanel = 32;  // output columns per panel

// The k a panel holds: C, or C rounded up to even for bf16 (its k go in pairs).
inline int packed_k_count(WeightType type, int cols) { return type == WeightType::bf16 ? (cols + 1) / 2 * 2 : cols; }

// Rows of a quantized matrix in one block type (see the layout above).
struct RowBand {
  WeightType type = WeightType::f32;
  int rows = 0;
};
inline constexpr int kMaxBands = 3;

// One matrix (rows, cols) = (OC, C) in panels. Does not own its bytes (PackedWeights does).
struct PackedMatrix {
  WeightType type = WeightType::f32;  // a quantized matrix: its first band's type
  int rows = 0, cols = 0;       // OC, C
  unsigned char* data = nullptr;  // packed_bytes(type, rows, cols), 64-byte aligned
  // --compute bf16 (bf16 matrices only): the products round their inputs to bfloat16 too, and
  // run as AVX512_BF16 dot products where the CPU has them (ops/matmul_packed.h)
  bool bf16_inputs = false;
  // --compute q8 (quantized matrices only): the products round their inputs to 8 bits (ggml's
  // Q8_K or Q8_0) and multiply the blocks' integer quants by them (ops/matmul_quant_q8.h)
  bool q8_inputs = false;
  // quantized only: the bands of rows, in order (rows = 0 past the last); set by packed_set_bands
  std::array<RowBand, kMaxBands> bands{};

  bool quantized() const { return weight_type_quantized(type); }
  int panels() const { return (rows + kPanel - 1) / kPanel; }
  std::size_t panel_bytes() const { return std::size_t(packed_k_count(type, cols)) * kPanel * weight_type_size(type); }
  const unsigned char* panel(int p) const { return data + std::size_t(p) * panel_bytes(); }
};

std::size_t packed_bytes(WeightType type, int rows, int cols);  // ceil(rows/32) * 32 * k_count * size (float types)
// The bytes m's data takes: packed_bytes for the float types, the bands' rows for quantized.
std::size_t packed_matrix_bytes(const PackedMatrix& m);

// Makes m (rows and cols set) a quantized matrix of these bands (their rows add up to m.rows;
// cols a multiple of each type's block). false, m unchanged, when they do not fit.
bool packed_set_bands(PackedMatrix& m, std::span<const RowBand> bands);
// Row r of a quantized matrix: its blocks and their type.
const unsigned char* packed_quant_row(const PackedMatrix& m, int r, WeightType& type);
// Panel p of a quantized matrix widened, columns [k0, k0 + K) only: panel (K, 32) float32,
// panel[k][j] = W[32p + j][k0 + k] as quant_dequantize gives it, 0 for rows past m.rows. Rows go
// 8 at a time: each row's blocks over 256 columns decoded by d into a buffer, then transposed
// into the panel's 8 columns.
void packed_quant_panel(QuantDecoder d, const PackedMatrix& m, int p, int k0, int K, float* panel);
// Copies rows [row0, row0 + n) of a quantized matrix from `blocks` (n rows of the band's type,
// as a GGUF file stores them); the rows must lie in one band.
void packed_write_blocks(PackedMatrix& m, int row0, int n, const unsigned char* blocks);
// Where W[32p + j][k] sits among a panel's elements (of weight_type_size bytes each).
inline std::size_t packed_element(WeightType type, int k, int j) {
  if (type != WeightType::bf16) return std::size_t(k) * kPanel + std::size_t(j);
  return std::size_t(k / 2) * 2 * kPanel + std::size_t(j / 16) * kPanel + std::size_t(j % 16) * 2 + std::size_t(k % 2);
}

// Writes rows [row0, row0 + n) of m from src (n, cols) float32, rounding to m.type (nearest,
// ties to even); m not quantized (its blocks are written by packed_write_blocks). Returns the flat index into src of the first value the type cannot hold
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
// A quantized matrix of these bands from `blocks` (every row, row after row). Throws std::bad_alloc.
OwnedPackedMatrix packed_matrix_from_blocks(std::span<const RowBand> bands, int cols, const unsigned char* blocks);

// The model's matrices. One allocation holds them all, 64-byte aligned.
struct PackedWeights {
  PackedMatrix wte;                      // (V, C) token embedding; the unembedding when tied
  PackedMatrix lm_head;                  // (V, C) separate unembedding (untied only; else rows = 0)
  std::vector<PackedMatrix> qkvw;        // (L) of (QKV, C)   c_attn, rows [q; k; v]
  std::vector<PackedMatrix> attprojw;    // (L) of (C, D)     attn c_proj (W_O)
  std::vector<PackedMatrix> fcw;         // (L) of (FC, C)    mlp c_fc ([gate; up] for SwiGLU/GeGLU)
  std::vector<PackedMatrix> fcprojw;     // (L) of (C, F)     mlp c_proj
  // The block every matrix points into: aligned_alloc'd by parameters_allocate_packed, or a
  // mapping of a file someone else owns (parameters_from_packed_block: a weights cache), which
  // this keeps alive as long as the weights live.
  std::shared_ptr<unsigned char> memory;
  std::size_t bytes = 0;                 // of `memory`

  const PackedMatrix& unembedding(bool tied) const { return tied ? wte : lm_head; }
};

}  // namespace headlab::model
