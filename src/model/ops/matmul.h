// model/ops/matmul.h — the linear layers: c_attn, c_proj, c_fc and the unembedding.
//   forward:  out = inp @ weight^T + bias          weight stored (OC, C) like nn.Linear
//   backward: dinp += dout @ weight;  dweight += dout^T @ inp;  dbias += sum_rows dout
// matmul_forward and matmul_backward call OpenBLAS sgemm, except that a forward of few rows
// (N <= kMatmulSmallMaxRows, short inputs at inference) runs matmul_forward_small, which
// streams each weight row once on the engine's thread pool; the *_naive versions are the
// plain loops both are tested against. bias and dbias may be null (no bias).
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

inline constexpr int kMatmulSmallMaxRows = 128;
bool matmul_small_applies(int N, int C);  // N <= kMatmulSmallMaxRows and C % 16 == 0
void matmul_forward_small(float* out, const float* inp, const float* weight, const float* bias, int N, int C,
                          int OC);  // requires matmul_small_applies(N, C)

void matmul_forward_naive(float* out, const float* inp, const float* weight, const float* bias,
                          int N, int C, int OC);
void matmul_backward_naive(float* dinp, float* dweight, float* dbias, const float* dout,
                           const float* inp, const float* weight, int N, int C, int OC);

}  // namespace headlab::model
