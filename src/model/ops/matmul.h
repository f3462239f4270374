// model/ops/matmul.h — the linear layers: c_attn, c_proj, c_fc and the unembedding.
//   forward:  out = inp @ weight^T + bias          weight stored (OC, C) like nn.Linear
//   backward: dinp += dout @ weight;  dweight += dout^T @ inp;  dbias += sum_rows dout
// matmul_forward calls OpenBLAS sgemm with the output columns split over the engine's thread
// pool, except that a forward of few rows (N <= matmul_small_max_rows()) runs
// matmul_forward_small, which streams each weight row once on the pool. (The inference
// forward of a loaded model uses neither for short inputs on AVX-512 CPUs: it reads a packed
// copy of the weights, matmul_packed.h.)
// matmul_backward is one sgemm per product, on the caller (the trainer splits its own). The
// *_naive versions are the plain loops both are tested against. bias and dbias may be null.
#pragma once

namespace headlab::model {

void matmul_forward(float* out,           // (N, OC)
                    const float* inp,     // (N, C)
                    const float* weight,  // (OC, C)
                    const float* bias,    // (OC) or null
                    int N, int C, int OC);
void matmul_backward(float* dinp,          // (N, C)   +=
                     float* dweight,       // (OC, C)  +=
                     float* dbias,         // (OC)     += or null
                     const float* dout,    // (N, OC)
                     const float* inp,     // (N, C)
                     const float* weight,  // (OC, C)
                     int N, int C, int OC);

// Where the small kernel stops paying: it reads each weight row once but re-reads the
// inputs from L2 for every 4 weight rows, while sgemm packs both, so the crossover depends
// on which kernels OpenBLAS runs. Measured on the GPT-2-small layers, 2 cores:
// - OpenBLAS's AVX-512 kernels (SkylakeX and later, Intel Xeon, 2026-12-01): the small
//   kernel 1.3x faster than sgemm at 16 rows, level at 32, sgemm 1.5x faster at 64 and 1.7x
//   at 128: up to 32 rows;
// - its Haswell (AVX2) kernels, which it picks on AMD Zen 4, against the small kernel's
//   AVX-512 build (2026-11-29): the small kernel ahead up to 128 rows.
int matmul_small_max_rows();  // 32 or 128, from blas_core_name(), decided once
bool matmul_small_applies(int N, int C);  // N <= matmul_small_max_rows() and C % 16 == 0
void matmul_forward_small(float* out, const float* inp, const float* weight, const float* bias, int N, int C,
                          int OC);  // any N; requires C % 16 == 0

void matmul_forward_naive(float* out, const float* inp, const float* weight, const float* bias,
                          int N, int C, int OC);
void matmul_backward_naive(float* dinp, float* dweight, float* dbias, const float* dout,
                           const float* inp, const float* weight, int N, int C, int OC);

// The input's gradient alone (attribution needs no weight gradient): dinp (N, C) += dout (N, OC) @ weight (OC, C)
void matmul_backward_input(float* dinp,          // (N, C)   +=
                           const float* dout,    // (N, OC)
                           const float* weight,  // (OC, C)
                           int N, int C, int OC);

}  // namespace headlab::model
