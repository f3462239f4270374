// model/ops/matmul.cpp — linear layers through OpenBLAS sgemm, and the plain loops they
// are tested against (see matmul.h).
#include "model/ops/matmul.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "model/blas.h"
#include "model/ops/fast_exp.h"  // HEADLAB_MULTIVERSION
#include "model/thread_pool.h"

namespace headlab::model {

namespace {

// 16 floats: AVX-512 in one register, AVX2 in two, SSE in four (GCC vector extension).
typedef float v16 __attribute__((vector_size(64)));

inline v16 load16(const float* p) {
  v16 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

inline float hsum(v16 v) {
  float s = 0.0f;
  for (int i = 0; i < 16; i++) s += v[i];
  return s;
}

// out[n, o] for o in [o0, o1), all n: 4 weight rows x 4 input rows per step, so each
// weight row is read from memory once and reused from L1 for every input row.
HEADLAB_MULTIVERSION
void matmul_small_rows(float* out, const float* inp, const float* weight, const float* bias, int N, int C, int OC,
                       int o0, int o1) {
  int o = o0;
  for (; o + 4 <= o1; o += 4) {
    const float* w0 = weight + std::size_t(o) * C;
    const float* w1 = w0 + C;
    const float* w2 = w1 + C;
    const float* w3 = w2 + C;
    const float b[4] = {bias ? bias[o] : 0.0f, bias ? bias[o + 1] : 0.0f, bias ? bias[o + 2] : 0.0f,
                        bias ? bias[o + 3] : 0.0f};
    int n = 0;
    for (; n + 4 <= N; n += 4) {
      const float* x0 = inp + std::size_t(n) * C;
      const float* x1 = x0 + C;
      const float* x2 = x1 + C;
      const float* x3 = x2 + C;
      v16 a[4][4] = {};
      for (int k = 0; k < C; k += 16) {
        const v16 W[4] = {load16(w0 + k), load16(w1 + k), load16(w2 + k), load16(w3 + k)};
        const v16 X[4] = {load16(x0 + k), load16(x1 + k), load16(x2 + k), load16(x3 + k)};
        for (int i = 0; i < 4; i++)
          for (int j = 0; j < 4; j++) a[i][j] += W[i] * X[j];
      }
      for (int j = 0; j < 4; j++)
        for (int i = 0; i < 4; i++) out[std::size_t(n + j) * OC + o + i] = hsum(a[i][j]) + b[i];
    }
    for (; n < N; n++) {  // leftover input rows
      const float* x = inp + std::size_t(n) * C;
      v16 a[4] = {};
      for (int k = 0; k < C; k += 16) {
        const v16 X = load16(x + k);
        a[0] += load16(w0 + k) * X;
        a[1] += load16(w1 + k) * X;
        a[2] += load16(w2 + k) * X;
        a[3] += load16(w3 + k) * X;
      }
      for (int i = 0; i < 4; i++) out[std::size_t(n) * OC + o + i] = hsum(a[i]) + b[i];
    }
  }
  for (; o < o1; o++) {  // leftover weight rows
    const float* w = weight + std::size_t(o) * C;
    for (int n = 0; n < N; n++) {
      const float* x = inp + std::size_t(n) * C;
      v16 a = {};
      for (int k = 0; k < C; k += 16) a += load16(w + k) * load16(x + k);
      out[std::size_t(n) * OC + o] = hsum(a) + (bias ? bias[o] : 0.0f);
    }
  }
}

}  // namespace

int matmul_small_max_rows() {
  static const int rows = [] {
    const std::string core = blas_core_name();
    for (const char* avx512 : {"SkylakeX", "Cooperlake", "SapphireRapids"})
      if (core.find(avx512) != std::string::npos) return 32;
    return 128;
  }();
  return rows;
}

bool matmul_small_applies(int N, int C) { return N <= matmul_small_max_rows() && C % 16 == 0; }

void matmul_forward_small(float* out, const float* inp, const float* weight, const float* bias, int N, int C,
                          int OC) {
  // split the output columns over the pool, in chunks of whole 4-row blocks (one, when small)
  const int parts = thread_pool_parts(std::size_t(N) * C * OC, OC / 64);
  const int chunks = parts == 1 ? 1 : std::min(parts * 4, OC / 64);
  const int per = ((OC + chunks - 1) / chunks + 3) / 4 * 4;
  thread_pool_run(chunks, [&](int c) {
    const int o0 = std::min(OC, c * per), o1 = std::min(OC, o0 + per);
    if (o0 < o1) matmul_small_rows(out, inp, weight, bias, N, C, OC, o0, o1);
  });
}

void matmul_forward(float* out, const float* inp, const float* weight, const float* bias, int N, int C,
                    int OC) {
  // out (N, OC) = inp (N, C) @ weight^T (C, OC) [+ bias broadcast over rows]
  if (matmul_small_applies(N, C)) {
    matmul_forward_small(out, inp, weight, bias, N, C, OC);
    return;
  }
  // the output columns split over the pool: each thread reads only its part of the weights
  const int parts = thread_pool_parts(std::size_t(N) * C * OC, OC / 64);
  thread_pool_run(parts, [&](int part) {
    const int o0 = int(std::int64_t(OC) * part / parts), o1 = int(std::int64_t(OC) * (part + 1) / parts);
    float beta = 0.0f;
    if (bias) {
      for (int n = 0; n < N; n++) std::copy(bias + o0, bias + o1, out + std::size_t(n) * OC + o0);
      beta = 1.0f;
    }
    blas_sgemm(false, true, N, o1 - o0, C, 1.0f, inp, C, weight + std::size_t(o0) * C, C, beta, out + o0, OC);
  });
}

void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                     const float* weight, int N, int C, int OC) {
  // dinp (N, C) += dout (N, OC) @ weight (OC, C)
  blas_sgemm(false, false, N, C, OC, 1.0f, dout, OC, weight, C, 1.0f, dinp, C);
  // dweight (OC, C) += dout^T (OC, N) @ inp (N, C)
  blas_sgemm(true, false, OC, C, N, 1.0f, dout, OC, inp, C, 1.0f, dweight, C);
  if (dbias) {
    for (int n = 0; n < N; n++) {
      const float* d = dout + std::size_t(n) * OC;
      for (int j = 0; j < OC; j++) dbias[j] += d[j];
    }
  }
}

void matmul_backward_input(float* dinp, const float* dout, const float* weight, int N, int C, int OC) {
  blas_sgemm(false, false, N, C, OC, 1.0f, dout, OC, weight, C, 1.0f, dinp, C);
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
