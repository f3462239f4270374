// model/ops/matmul_quant_q8.h — products with GGUF's quantized matrices (model/quant_blocks.h)
// whose inputs are rounded to 8 bits first, as llama.cpp's CPU backend multiplies them
// (--compute q8): integer dot products of the weights' quants with the inputs' quants, scaled
// once per block. The default (--compute f32) widens the blocks and multiplies float32 inputs
// (ops/matmul_packed.h); this path is faster on short inputs and moves the numbers a little.
//
//   Q8Inputs x8;
//   q8_quantize_rows(x8, 256, inp, C, C, N);                 // Q8_K rows of inp (N, C)
//   matmul_forward_q8(out, inp, w, bias, N);                 // out (N, OC), w quantized
//
// The inputs' blocks (ggml's names), one row of K inputs in K / E blocks of E:
//   Q8_K  E = 256:  d = max / -127 with max the input of largest magnitude (its sign kept, so
//                   the largest maps to -127 exactly), q = min(127, round-half-even(x / d)),
//                   d float32; bsums: the sum of each 16 q          (K-quants: Q4_K Q5_K Q6_K)
//   Q8_0  E = 32:   d = amax / 127, q = round-half-away(x / d), d kept as an IEEE half (its
//                   value multiplies; the quants were rounded with the float32 d)  (Q8_0, Q4_0)
// An all-zero block has d = 0 and q = 0; a block holding a NaN or an infinity has d = NaN (the
// outputs it reaches are NaN) and q = 0.
//
// A weight block as integers (what every kernel multiplies): E unsigned quants u (or signed q
// for Q8_0 and Q4_0), an integer scale sc per 16 weights, integer corrections per 16:
//   x_i = d * sc_g * (u_i + a_g) - dmin * m_g                      (g = i / 16)
//   Q4_K, Q5_K  u the 4 or 5 bits, a = 0, m the 6-bit minimum;   Q6_K  u the 6 bits, a = -32
//   Q8_0        q int8, sc = 1;                                  Q4_0  q = nibble - 8, sc = 1
// so one block of weights times one block of inputs (scale yd, quants y) is
//   yd * d * (sum_g sc_g * (sum_{i in g} u_i y_i + a_g * bsum_g)) - yd * dmin * sum_g m_g * bsum_g
// the sums exact in int32, then two float32 products per block.
//
// Kernels, chosen once from cpuid (HEADLAB_KERNELS lowers them as for matmul_packed.h):
//   avx512vnni  vpdpbusd on 64 bytes (AVX-512F/BW/VL, AVX512_VNNI), 4 weight rows x 2 input rows
//   avx2        vpmaddubsw + vpmaddwd on 32 bytes (AVX2, FMA), 2 x 2
//   portable    plain loops (the reference the others are tested against)
// vpdpbusd multiplies unsigned bytes by signed ones. Signed quants (Q8_0, Q4_0): avx512vnni takes
// q + 128 and starts each block's sum at -128 * sum(y); avx2 and portable go through ggml's sign
// trick, |q| times y * sign(q). avx512vnni keeps a K-quant block (and the inputs) in lane order,
// each 32-bit lane one group of 16 weights, so four accumulating vpdpbusd make a block.
// Beside llama.cpp: Q8_0 inputs keep d as a half, so an input beyond 65504 * 127 makes its
// block's d infinite (as in ggml); Q8_K's d is float32.
// Each product unpacks every weight block once into its integer form (4 rows at a time) and
// runs all input rows against it; the inputs are quantized once per product; the output
// columns are split over the thread pool.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model/packed_weights.h"

namespace headlab::model {

enum class Q8Kernel { portable, avx2, avx512vnni };

Q8Kernel matmul_q8_kernel();                        // the one in use, decided once (HEADLAB_KERNELS)
bool matmul_q8_kernel_supported(Q8Kernel kernel);   // this CPU (and build) runs it
std::string_view matmul_q8_kernel_name(Q8Kernel kernel);  // "avx512vnni", "avx2", "portable"
// "8-bit-activation kernels avx512vnni (Q4_0, Q8_0, Q4_K, Q5_K, Q6_K ...)"
std::string matmul_q8_kernels_description();

// The block types this path multiplies (Q4_0, Q8_0, Q4_K, Q5_K, Q6_K); the others keep the
// float32 path under --compute q8.
bool matmul_q8_type_supported(WeightType t);
// The inputs' block for a weight type: 256 (Q8_K) for the K-quants, 32 (Q8_0) for the others.
int matmul_q8_input_block(WeightType t);
// Whether the product of w's columns [k0, k0 + K) takes this path: every band of w a supported
// type, k0 and K multiples of every band's block, K > 0.
bool matmul_q8_applies(const PackedMatrix& w, int k0, int K);

// Rows of inputs rounded to 8 bits: N rows of K inputs in blocks of E (256: Q8_K, 32: Q8_0).
struct Q8Inputs {
  int E = 0, N = 0, K = 0;
  std::vector<std::int8_t> q;       // (N, K)        the quants
  std::vector<float> d;             // (N, K / E)    the blocks' scales
  std::vector<std::int16_t> bsums;  // (N, K / 16)   the sum of each 16 quants
};
// x (N, K) rows `ldx` apart into y; K a multiple of E. Split over the thread pool when long.
void q8_quantize_rows(Q8Inputs& y, int E, const float* x, int ldx, int K, int N);

// out (N, OC) rows `ldo` apart = inp (N, K) rows `ldx` apart @ W[:, k0:k0+K]^T + bias, the inputs
// quantized by q8_quantize_rows (matmul_q8_applies(w, k0, K) must hold).
void matmul_forward_q8_with(Q8Kernel kernel, float* out, int ldo, const float* inp, int ldx, const PackedMatrix& w,
                            int k0, int K, const float* bias, int N);
// The same from inputs already quantized (the tests compare kernels on the same quants):
// x8 holds the inputs of the matrix's block types (one Q8Inputs per E the bands use: x8_k for
// 256, x8_0 for 32; either may be null when no band needs it).
void matmul_forward_q8_quantized(Q8Kernel kernel, float* out, int ldo, const Q8Inputs* x8_k, const Q8Inputs* x8_0,
                                 const PackedMatrix& w, int k0, int K, const float* bias, int N);

}  // namespace headlab::model
