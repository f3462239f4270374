// model/ops/matmul_packed.cpp — the packed-weight linear layer for short inputs (see
// matmul_packed.h for the layout and why).
#include "model/ops/matmul_packed.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "model/thread_pool.h"
#include "util/check.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define HEADLAB_PACKED_X86 1
#else
#define HEADLAB_PACKED_X86 0
#endif

namespace headlab::model {

namespace {

constexpr int kRows = 8;  // rows of out per register tile

#if HEADLAB_PACKED_X86

// out[i][0..32) for i < R, over all C:  acc = bias + sum_k x[i][k] * panel[k][0..32).
// m0, m1 mask the panel's two 16-column halves (the last panel may be partial). While it
// runs, it prefetches `lines` cache lines from `next` (its share of the next panel), spread
// evenly over the k loop so the reads from memory overlap the FMAs.
template <int R>
__attribute__((target("avx512f"), always_inline)) inline void tile(float* out, int ldo, const float* x, int ldx,
                                                                    const float* panel, int C, const float* bias,
                                                                    __mmask16 m0, __mmask16 m1, const char* next,
                                                                    int lines) {
  __m512 acc0[R], acc1[R];
  const __m512 b0 = bias ? _mm512_maskz_loadu_ps(m0, bias) : _mm512_setzero_ps();
  const __m512 b1 = bias ? _mm512_maskz_loadu_ps(m1, bias + 16) : _mm512_setzero_ps();
  for (int i = 0; i < R; i++) acc0[i] = b0, acc1[i] = b1;
  const float* xr[R];
  for (int i = 0; i < R; i++) xr[i] = x + std::size_t(i) * ldx;

  const int per = lines > C ? 2 : 1;                               // lines per prefetch step
  const int every = next ? std::max(1, C * per / std::max(1, lines)) : (1 << 30);  // k steps apart
  int countdown = every;
  for (int k = 0; k < C; k++) {
    const __m512 w0 = _mm512_loadu_ps(panel + std::size_t(k) * kPanel);
    const __m512 w1 = _mm512_loadu_ps(panel + std::size_t(k) * kPanel + 16);
    for (int i = 0; i < R; i++) {
      const __m512 xi = _mm512_set1_ps(xr[i][k]);
      acc0[i] = _mm512_fmadd_ps(xi, w0, acc0[i]);
      acc1[i] = _mm512_fmadd_ps(xi, w1, acc1[i]);
    }
    if (--countdown == 0) {
      countdown = every;
      _mm_prefetch(next, _MM_HINT_T0);
      if (per == 2) _mm_prefetch(next + 64, _MM_HINT_T0);
      next += 64 * per;
    }
  }
  for (int i = 0; i < R; i++) {
    _mm512_mask_storeu_ps(out + std::size_t(i) * ldo, m0, acc0[i]);
    _mm512_mask_storeu_ps(out + std::size_t(i) * ldo + 16, m1, acc1[i]);
  }
}

// Panels [p0, p1) of out: every row tile of each panel, with the next panel prefetched.
__attribute__((target("avx512f"))) void panels(float* out, const float* inp, const float* packed, const float* bias,
                                               int N, int C, int OC, int p0, int p1) {
  const int tiles = (N + kRows - 1) / kRows;
  const std::size_t panel_floats = std::size_t(C) * kPanel;
  const long panel_lines = long(panel_floats) * 4 / 64;
  for (int p = p0; p < p1; p++) {
    const int n0 = p * kPanel, nn = std::min(kPanel, OC - n0);
    const __mmask16 m0 = nn >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << nn) - 1);
    const __mmask16 m1 = nn >= 32 ? __mmask16(0xFFFF) : nn <= 16 ? __mmask16(0) : __mmask16((1u << (nn - 16)) - 1);
    const float* panel = packed + std::size_t(p) * panel_floats;
    const float* b = bias ? bias + n0 : nullptr;
    for (int t = 0; t < tiles; t++) {
      const int rows = std::min(kRows, N - t * kRows);
      const char* next = nullptr;
      int lines = 0;
      if (p + 1 < p1) {  // this tile's share of the next panel
        const long a = panel_lines * t / tiles, e = panel_lines * (t + 1) / tiles;
        next = reinterpret_cast<const char*>(panel + panel_floats) + a * 64;
        lines = int(e - a);
      }
      float* o = out + std::size_t(t) * kRows * OC + n0;
      const float* x = inp + std::size_t(t) * kRows * C;
      switch (rows) {
        case 8: tile<8>(o, OC, x, C, panel, C, b, m0, m1, next, lines); break;
        case 7: tile<7>(o, OC, x, C, panel, C, b, m0, m1, next, lines); break;
        case 6: tile<6>(o, OC, x, C, panel, C, b, m0, m1, next, lines); break;
        case 5: tile<5>(o, OC, x, C, panel, C, b, m0, m1, next, lines); break;
        case 4: tile<4>(o, OC, x, C, panel, C, b, m0, m1, next, lines); break;
        case 3: tile<3>(o, OC, x, C, panel, C, b, m0, m1, next, lines); break;
        case 2: tile<2>(o, OC, x, C, panel, C, b, m0, m1, next, lines); break;
        default: tile<1>(o, OC, x, C, panel, C, b, m0, m1, next, lines); break;
      }
    }
  }
}

#endif  // HEADLAB_PACKED_X86

}  // namespace

bool matmul_packed_supported() {
#if HEADLAB_PACKED_X86
  static const bool yes = [] {
    const char* env = std::getenv("HEADLAB_PACKED");  // "0": off, for A/B benchmarks
    if (env && std::strcmp(env, "0") == 0) return false;
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") != 0;
  }();
  return yes;
#else
  return false;
#endif
}

int matmul_packed_max_rows() { return 256; }

std::size_t matmul_packed_size(int OC, int C) { return std::size_t((OC + kPanel - 1) / kPanel) * kPanel * C; }

void matmul_pack(float* packed, const float* weight, int OC, int C) {
  const int n_panels = (OC + kPanel - 1) / kPanel;
  const std::size_t panel_floats = std::size_t(C) * kPanel;
  thread_pool_run(thread_pool_size(), [&](int part) {
    const int p0 = int(std::int64_t(n_panels) * part / thread_pool_size());
    const int p1 = int(std::int64_t(n_panels) * (part + 1) / thread_pool_size());
    for (int p = p0; p < p1; p++) {
      float* dst = packed + std::size_t(p) * panel_floats;
      for (int j = 0; j < kPanel; j++) {
        const int o = p * kPanel + j;
        if (o >= OC) {
          for (int k = 0; k < C; k++) dst[std::size_t(k) * kPanel + j] = 0.0f;
          continue;
        }
        const float* w = weight + std::size_t(o) * C;
        for (int k = 0; k < C; k++) dst[std::size_t(k) * kPanel + j] = w[k];
      }
    }
  });
}

void matmul_forward_packed(float* out, const float* inp, const float* packed, const float* bias, int N, int C,
                           int OC) {
  HEADLAB_CHECK(matmul_packed_supported());
#if HEADLAB_PACKED_X86
  // out (N, OC) = inp (N, C) @ weight^T + bias, the panels split over the pool
  const int n_panels = (OC + kPanel - 1) / kPanel;
  const int parts = std::max(1, std::min(thread_pool_size(), n_panels));
  thread_pool_run(parts, [&](int part) {
    const int p0 = int(std::int64_t(n_panels) * part / parts), p1 = int(std::int64_t(n_panels) * (part + 1) / parts);
    panels(out, inp, packed, bias, N, C, OC, p0, p1);
  });
#else
  (void)out, (void)inp, (void)packed, (void)bias, (void)N, (void)C, (void)OC;
#endif
}

}  // namespace headlab::model
