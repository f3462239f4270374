// model/ops/matmul.cpp — linear layers through OpenBLAS sgemm, and the plain loops they
// are tested against (see matmul.h).
#include "model/ops/matmul.h"

#include <cblas.h>

#include <cstddef>

namespace headlab::model {

void matmul_forward(float* out, const float* inp, const float* weight, const float* bias, int N, int C,
                    int OC) {
  // out (N, OC) = inp (N, C) @ weight^T (C, OC) [+ bias broadcast over rows]
  float beta = 0.0f;
  if (bias) {
    for (int n = 0; n < N; n++) {
      float* o = out + std::size_t(n) * OC;
      for (int j = 0; j < OC; j++) o[j] = bias[j];
    }
    beta = 1.0f;
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, OC, C, 1.0f, inp, C, weight, C, beta, out, OC);
}

void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                     const float* weight, int N, int C, int OC) {
  // dinp (N, C) += dout (N, OC) @ weight (OC, C)
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, C, OC, 1.0f, dout, OC, weight, C, 1.0f, dinp, C);
  // dweight (OC, C) += dout^T (OC, N) @ inp (N, C)
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, OC, C, N, 1.0f, dout, OC, inp, C, 1.0f, dweight, C);
  if (dbias) {
    for (int n = 0; n < N; n++) {
      const float* d = dout + std::size_t(n) * OC;
      for (int j = 0; j < OC; j++) dbias[j] += d[j];
    }
  }
}

void matmul_forward_naive(float* out, const float* inp, const float* weight, const float* bias, int N,
                          int C, int OC) {
  for (int n = 0; n < N; n++) {
    const float* x = inp + std::size_t(n) * C;
    for (int o = 0; o < OC; o++) {
      const float* w = weight + std::size_t(o) * C;
      float acc = bias ? bias[o] : 0.0f;
      for (int i = 0; i < C; i++) acc += x[i] * w[i];
      out[std::size_t(n) * OC + o] = acc;
    }
  }
}

void matmul_backward_naive(float* dinp, float* dweight, float* dbias, const float* dout,
                           const float* inp, const float* weight, int N, int C, int OC) {
  for (int n = 0; n < N; n++) {
    const float* d = dout + std::size_t(n) * OC;
    const float* x = inp + std::size_t(n) * C;
    float* dx = dinp + std::size_t(n) * C;
    for (int o = 0; o < OC; o++) {
      const float* w = weight + std::size_t(o) * C;
      float* dw = dweight + std::size_t(o) * C;
      for (int i = 0; i < C; i++) {
        dx[i] += d[o] * w[i];
        dw[i] += d[o] * x[i];
      }
      if (dbias) dbias[o] += d[o];
    }
  }
}

}  // namespace headlab::model
