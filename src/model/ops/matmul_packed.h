// model/ops/matmul_packed.h — the linear layers of the inference forward, multiplied straight
// from the packed matrices (model/packed_weights.h) in f32, bf16 or f16, with float32
// arithmetic and float32 accumulation (a 16-bit weight is widened in a register; the inputs
// are not rounded unless --compute bf16 asks it of a bf16 matrix).
//
//   matmul_forward_packed(out, inp, w, bias, N);   // out (N, OC) = inp (N, C) @ W^T + bias
//
// Kernels, chosen once from the CPU's features (cpuid), never from the model:
//   avx512    8 x 32 tiles of out in 16 zmm registers; per k one panel row widened (f32: two
//             loads; bf16: one load, a shift and a mask; f16: two vcvtph2ps) and 8 inputs
//             broadcast                                                    (AVX-512F)
//   avx2      6 x 16 tiles in 12 ymm registers, each panel in two halves    (AVX2, FMA, F16C)
//   portable  plain loops over the panels, 4 rows at a time                 (any CPU)
//   avx512bf16  the avx512 kernel, and for a bf16 matrix whose products round their inputs
//             (--compute bf16, PackedMatrix::bf16_inputs) 8 x 32 tiles of vdpbf16ps: two k per
//             instruction, the inputs rounded to bfloat16 once per product, float32 accumulation
//                                                                       (AVX-512F, AVX512_BF16)
//   amx       the avx512bf16 kernel, and for those bf16 products AMX tiles: 32 rows x 32 columns as
//             four 16 x 16 accumulator tiles, 32 k a tdpbf16ps (the k past the last 32 by
//             vdpbf16ps); the inputs padded to whole tiles of rows, so a row's value never depends
//             on the rows beside it                   (AMX-BF16, AMX-TILE, Linux's permission)
// Under --compute bf16 a kernel without AVX512_BF16 rounds the inputs and multiplies them as
// usual: the same products (exact in float32), added in another order.
// HEADLAB_KERNELS=avx2 or =portable asks for a lower one (A/B runs); `headlab --version`, the
// server's start line and the benchmarks print the one in use.
// Short inputs (up to 64 rows) stream each panel from memory once, prefetching the next panel
// under the FMAs; longer ones go in blocks of rows whose inputs stay in L2 (and a k longer than
// 2,048 on the AVX-512 kernels, 1,024 on AVX2, in blocks of 512), so each panel is read once per block of rows. The same kernel serves
// every length: with each matrix kept once, in its own type, there is no float32 copy for sgemm.
// The panels are split over the engine's thread pool.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "model/ops/matmul_quant_q8.h"
#include "model/packed_weights.h"

namespace headlab::model {

enum class PackedKernel { portable, avx2, avx512, avx512bf16, amx };

PackedKernel matmul_packed_kernel();                        // the one in use, decided once
bool matmul_packed_kernel_supported(PackedKernel kernel);   // this CPU (and build) runs it
std::string_view matmul_packed_kernel_name(PackedKernel kernel);  // "avx512bf16", "avx512", "avx2", "portable"
// The --compute q8 kernel (ops/matmul_quant_q8.h) a packed kernel's products use: the AVX-512
// kernels take avx512vnni where the CPU has it (else avx2), avx2 and portable their own.
Q8Kernel matmul_packed_q8_kernel(PackedKernel kernel);
// "packed-weight kernels avx512 (f32, bf16, f16 weights; chosen from the CPU's features)"
std::string matmul_packed_kernels_description();

// out (N, OC) = inp (N, C) @ W^T + bias (bias (OC) or null), W = w (OC, C). Any N >= 1.
void matmul_forward_packed(float* out, const float* inp, const PackedMatrix& w, const float* bias, int N);

// Only columns [k0, k0 + K) of W, inputs `ldx` apart: out (N, OC) = inp (N, K) @ W[:, k0:k0+K]^T.
// (Head h's share of W_O: its z columns against W_O's columns h*HS..)
void matmul_forward_packed_part(float* out, const float* inp, int ldx, const PackedMatrix& w, int k0, int K, int N);

// Several products with one matrix, each group its own rows and its own output:
//   out_g (N_g, OC) rows `ldo` apart = inp_g (N_g, C) rows `ldx` apart @ W^T     for each group g
// (a batch's sequences against the unembedding, each into its own logits). The matrix comes from
// memory once rather than once per group: each thread takes its panels a chunk at a time (a
// chunk about the size of L2, kGroupChunkBytes) and multiplies every group by the chunk before
// it reads the next, so the groups after the first find it in cache. Each group's values are
// matmul_forward_packed's on it alone, bit for bit (the same tiles, k in the same order).
struct PackedGroup {
  float* out;
  int ldo;
  const float* inp;
  int ldx;
  int N;
};
void matmul_forward_packed_groups(std::span<const PackedGroup> groups, const PackedMatrix& w);
void matmul_forward_packed_groups_with(PackedKernel kernel, std::span<const PackedGroup> groups, const PackedMatrix& w);

// The general form with a chosen kernel (the tests run each one the CPU has):
// out (N, OC) rows `ldo` apart = inp (N, K) rows `ldx` apart @ W[:, k0:k0+K]^T + bias.
void matmul_forward_packed_with(PackedKernel kernel, float* out, int ldo, const float* inp, int ldx,
                                const PackedMatrix& w, int k0, int K, const float* bias, int N);

}  // namespace headlab::model
