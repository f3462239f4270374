// model/ops/matmul_packed.h — the linear layers of a short inference input (up to
// matmul_packed_max_rows() rows) over weights packed once, at load time.
//
//   std::vector<float> wp(matmul_packed_size(OC, C));
//   matmul_pack(wp.data(), weight, OC, C);                      // weight (OC, C), once
//   matmul_forward_packed(out, inp, wp.data(), bias, N, C, OC);  // out = inp @ weight^T + bias
//
// Why: with few rows, a product reads far more weights than inputs, and sgemm copies every
// weight into its own panel layout on every call: at 64 tokens that copy was 30% of a
// GPT-2-small forward, beside 50% in sgemm's kernel. Packing once removes it, and the kernel
// prefetches the next panel while it computes this one, so reading the weights from memory
// (500 MB per GPT-2-small forward) overlaps the arithmetic.
//
// Layout: panels of kPanel = 32 output columns, each (C, 32) row-major, the last zero-padded:
//   packed[p][k][j] = weight[p*32 + j][k]            (ceil(OC/32), C, 32)
// Kernel: an 8 x 32 tile of out in 16 AVX-512 registers; per k one row of the panel (two
// loads) and 8 inputs broadcast. The panels are split over the engine's thread pool.
// AVX-512 only: on other CPUs matmul_packed_supported() is false and nothing packs.
#pragma once

#include <cstddef>

namespace headlab::model {

inline constexpr int kPanel = 32;

bool matmul_packed_supported();  // the CPU has AVX-512F (and this is an x86-64 GCC/Clang build)
int matmul_packed_max_rows();    // 256: ahead of sgemm below, level at 192-256 (headlab_matmul_bench)

std::size_t matmul_packed_size(int OC, int C);  // floats: ceil(OC/32) * 32 * C
void matmul_pack(float* packed, const float* weight, int OC, int C);

// Requires matmul_packed_supported(). Any N >= 1 (the kernel is tuned for N <= 256).
void matmul_forward_packed(float* out,           // (N, OC)
                           const float* inp,     // (N, C)
                           const float* packed,  // matmul_pack of weight (OC, C)
                           const float* bias,    // (OC) or null
                           int N, int C, int OC);

}  // namespace headlab::model
