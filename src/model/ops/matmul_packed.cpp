// model/ops/matmul_packed.cpp — the linear layers over packed matrices: an AVX-512 kernel, an
// AVX2 + FMA + F16C kernel and portable loops, each for f32, bf16 and f16 weights (see
// matmul_packed.h; the layout is in packed_weights.h).
#include "model/ops/matmul_packed.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "model/blas.h"  // cpu_features
#include "model/thread_pool.h"
#include "util/check.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define HEADLAB_PACKED_X86 1
// GCC 12 warns about its own _mm512_undefined_* (a self-initialised variable) inside
// _mm512_slli_epi32 and _mm512_cvtph_ps: a known false positive, not this file's.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#else
#define HEADLAB_PACKED_X86 0
#endif

namespace headlab::model {

namespace {

// Blocking (see matmul_packed.h). Up to kShortRows rows, one block of everything: each panel is
// streamed from memory once, the next one prefetched. Beyond, the output tile stays in registers
// over all of k unless k is long (kMaxK), so each output is written once (the unembedding's
// outputs outweigh its weights); the rows go in blocks whose inputs (mc x kc floats, kInputBytes)
// fit in L2 beside the panel being read, so a panel is read once per block of rows and its inputs
// come from L2. Measured with headlab_matmul_bench on Qwen2.5-0.5B's shape at 1,024 rows (AMD Zen
// 5, CPU time, 2026-12-02): 5.4 s blocked against 5.8-6.1 s unblocked; level at 256 rows.
constexpr int kShortRows = 64;
constexpr int kMaxK = 1024;               // k up to this is one block
constexpr int kBlockK = 512;              // else blocks of kc (a down projection: few outputs)
constexpr int kInputBytes = 512 << 10;    // the rows' block of inputs

struct Blocks {
  int kc, mc;
};
Blocks blocks_for(int N, int K, int tile) {
  if (N <= kShortRows) return {std::max(1, K), N};
  const int kc = K <= kMaxK ? std::max(1, K) : kBlockK;
  int mc = kInputBytes / (4 * kc) / tile * tile;
  mc = std::max(tile, std::min(mc, N));
  return {kc, mc};
}

// One product: out (N, OC) [ldo] = inp (N, K) [ldx] @ W[:, k0:k0+K]^T + bias.
struct Job {
  float* out;
  int ldo;
  const float* inp;
  int ldx;
  const PackedMatrix* w;
  int k0, K;
  const float* bias;
  int N;
};

int row_bytes(WeightType t) { return kPanel * weight_type_size(t); }

// ---- portable --------------------------------------------------------------------------------

// Panel row `r` (32 weights of `T`) as float32, columns in order.
template <WeightType T>
inline void widen_row(const unsigned char* r, float* w) {
  if constexpr (T == WeightType::f32) {
    std::memcpy(w, r, kPanel * sizeof(float));
  } else {
    std::uint16_t h[kPanel];
    std::memcpy(h, r, sizeof h);
    if constexpr (T == WeightType::bf16) {
      for (int i = 0; i < 16; i++) w[i] = weight_from_bf16(h[2 * i]), w[16 + i] = weight_from_bf16(h[2 * i + 1]);
    } else {
      for (int j = 0; j < kPanel; j++) w[j] = weight_from_f16(h[j]);
    }
  }
}

template <WeightType T>
void run_portable(const Job& j, int p0, int p1) {
  const PackedMatrix& w = *j.w;
  const int rb = row_bytes(T);
  float wr[kPanel];
  for (int p = p0; p < p1; p++) {
    const int n0 = p * kPanel, nn = std::min(kPanel, w.rows - n0);
    const unsigned char* panel = w.panel(p) + std::size_t(j.k0) * rb;
    for (int r0 = 0; r0 < j.N; r0 += 4) {
      const int R = std::min(4, j.N - r0);
      float acc[4][kPanel];
      for (int i = 0; i < R; i++)
        for (int c = 0; c < kPanel; c++) acc[i][c] = j.bias && c < nn ? j.bias[n0 + c] : 0.0f;
      for (int k = 0; k < j.K; k++) {
        widen_row<T>(panel + std::size_t(k) * rb, wr);
        for (int i = 0; i < R; i++) {
          const float xi = j.inp[std::size_t(r0 + i) * j.ldx + k];
          for (int c = 0; c < kPanel; c++) acc[i][c] += xi * wr[c];
        }
      }
      for (int i = 0; i < R; i++) std::copy(acc[i], acc[i] + nn, j.out + std::size_t(r0 + i) * j.ldo + n0);
    }
  }
}

#if HEADLAB_PACKED_X86

// ---- AVX-512 ---------------------------------------------------------------------------------

// One panel row as two 16-column halves, widened to float32.
template <WeightType T>
__attribute__((target("avx512f"), always_inline)) inline void load512(const unsigned char* r, __m512& lo, __m512& hi) {
  if constexpr (T == WeightType::f32) {
    lo = _mm512_loadu_ps(r);
    hi = _mm512_loadu_ps(r + 64);
  } else if constexpr (T == WeightType::bf16) {
    // element 2i holds column i, 2i+1 column 16+i: a bfloat16 is a float32's top half
    const __m512i v = _mm512_loadu_si512(r);
    lo = _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
    hi = _mm512_castsi512_ps(_mm512_and_si512(v, _mm512_set1_epi32(int(0xFFFF0000u))));
  } else {
    lo = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(r)));
    hi = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(r + 32)));
  }
}

// out[i][0..32) for i < R over k in [0, K):  acc = (out or bias or 0) + sum_k x[i][k] * panel[k][..].
// m0, m1 mask the two halves (the last panel may be partial). While it runs it prefetches
// `lines` cache lines from `next` (its share of the next panel), spread over the k loop, so the
// reads from memory overlap the FMAs.
template <WeightType T, int R>
__attribute__((target("avx512f"), always_inline)) inline void tile512(float* out, int ldo, const float* x, int ldx,
                                                                       const unsigned char* panel, int K,
                                                                       const float* bias, bool accumulate, __mmask16 m0,
                                                                       __mmask16 m1, const char* next, int lines) {
  constexpr int rb = kPanel * (T == WeightType::f32 ? 4 : 2);
  __m512 acc0[R], acc1[R];
  if (accumulate) {
    for (int i = 0; i < R; i++) {
      acc0[i] = _mm512_maskz_loadu_ps(m0, out + std::size_t(i) * ldo);
      acc1[i] = _mm512_maskz_loadu_ps(m1, out + std::size_t(i) * ldo + 16);
    }
  } else {
    const __m512 b0 = bias ? _mm512_maskz_loadu_ps(m0, bias) : _mm512_setzero_ps();
    const __m512 b1 = bias ? _mm512_maskz_loadu_ps(m1, bias + 16) : _mm512_setzero_ps();
    for (int i = 0; i < R; i++) acc0[i] = b0, acc1[i] = b1;
  }
  const float* xr[R];
  for (int i = 0; i < R; i++) xr[i] = x + std::size_t(i) * ldx;

  const int per = lines > K ? 2 : 1;                                                // lines per prefetch step
  const int every = next ? std::max(1, K * per / std::max(1, lines)) : (1 << 30);  // k steps apart
  int countdown = every;
  for (int k = 0; k < K; k++) {
    __m512 w0, w1;
    load512<T>(panel + std::size_t(k) * rb, w0, w1);
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

template <WeightType T>
__attribute__((target("avx512f"))) void tile512_rows(int rows, float* o, int ldo, const float* x, int ldx,
                                                     const unsigned char* panel, int K, const float* b, bool acc,
                                                     __mmask16 m0, __mmask16 m1, const char* next, int lines) {
  switch (rows) {
    case 8: tile512<T, 8>(o, ldo, x, ldx, panel, K, b, acc, m0, m1, next, lines); break;
    case 7: tile512<T, 7>(o, ldo, x, ldx, panel, K, b, acc, m0, m1, next, lines); break;
    case 6: tile512<T, 6>(o, ldo, x, ldx, panel, K, b, acc, m0, m1, next, lines); break;
    case 5: tile512<T, 5>(o, ldo, x, ldx, panel, K, b, acc, m0, m1, next, lines); break;
    case 4: tile512<T, 4>(o, ldo, x, ldx, panel, K, b, acc, m0, m1, next, lines); break;
    case 3: tile512<T, 3>(o, ldo, x, ldx, panel, K, b, acc, m0, m1, next, lines); break;
    case 2: tile512<T, 2>(o, ldo, x, ldx, panel, K, b, acc, m0, m1, next, lines); break;
    default: tile512<T, 1>(o, ldo, x, ldx, panel, K, b, acc, m0, m1, next, lines); break;
  }
}

template <WeightType T>
__attribute__((target("avx512f"))) void run_avx512(const Job& j, int p0, int p1) {
  constexpr int kTile = 8;
  const PackedMatrix& w = *j.w;
  const int rb = row_bytes(T);
  auto masks = [&](int p, __mmask16& m0, __mmask16& m1) {
    const int nn = std::min(kPanel, w.rows - p * kPanel);
    m0 = nn >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << nn) - 1);
    m1 = nn >= 32 ? __mmask16(0xFFFF) : nn <= 16 ? __mmask16(0) : __mmask16((1u << (nn - 16)) - 1);
  };
  // rows in blocks of mc, k in blocks of kc; each panel block read once per row block, with the
  // next panel's block prefetched meanwhile (spread over this block's row tiles)
  const Blocks b = blocks_for(j.N, j.K, kTile);
  for (int r0 = 0; r0 < j.N; r0 += b.mc) {
    const int rn = std::min(b.mc, j.N - r0);
    const int tiles = (rn + kTile - 1) / kTile;
    for (int kb = 0; kb < j.K; kb += b.kc) {
      const int kn = std::min(b.kc, j.K - kb);
      const long panel_lines = long(kn) * rb / 64;
      for (int p = p0; p < p1; p++) {
        __mmask16 m0, m1;
        masks(p, m0, m1);
        const unsigned char* panel = w.panel(p) + std::size_t(j.k0 + kb) * rb;
        for (int t = 0; t < tiles; t++) {
          const char* next = nullptr;
          int lines = 0;
          if (p + 1 < p1) {  // this tile's share of the next panel's block
            const long a = panel_lines * t / tiles, e = panel_lines * (t + 1) / tiles;
            next = reinterpret_cast<const char*>(w.panel(p + 1) + std::size_t(j.k0 + kb) * rb) + a * 64;
            lines = int(e - a);
          }
          const int r = r0 + t * kTile;
          tile512_rows<T>(std::min(kTile, rn - t * kTile), j.out + std::size_t(r) * j.ldo + p * kPanel, j.ldo,
                          j.inp + std::size_t(r) * j.ldx + kb, j.ldx, panel, kn,
                          j.bias && kb == 0 ? j.bias + p * kPanel : nullptr, kb > 0, m0, m1, next, lines);
        }
      }
    }
  }
}

// ---- AVX2 + FMA + F16C -----------------------------------------------------------------------

// Half h of a panel row as two groups of 8 columns, widened; their first columns in c0, c1.
template <WeightType T>
__attribute__((target("avx2,fma,f16c"), always_inline)) inline void load256(const unsigned char* r, int h, __m256& g0,
                                                                            __m256& g1) {
  if constexpr (T == WeightType::f32) {
    g0 = _mm256_loadu_ps(reinterpret_cast<const float*>(r + 64 * h));
    g1 = _mm256_loadu_ps(reinterpret_cast<const float*>(r + 64 * h + 32));
  } else if constexpr (T == WeightType::bf16) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(r + 32 * h));
    g0 = _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
    g1 = _mm256_castsi256_ps(_mm256_and_si256(v, _mm256_set1_epi32(int(0xFFFF0000u))));
  } else {
    g0 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(r + 32 * h)));
    g1 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(r + 32 * h + 16)));
  }
}
template <WeightType T>
constexpr int group_column(int h, int g) {  // the first column of group g of half h
  return T == WeightType::bf16 ? 8 * h + 16 * g : 16 * h + 8 * g;
}

// The lanes of a group that are real columns (the last panel may be partial).
__attribute__((target("avx2"))) inline __m256i lane_mask(int valid) {
  const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(valid), idx);
}

template <WeightType T, int R>
__attribute__((target("avx2,fma,f16c"), always_inline)) inline void tile256(float* out, int ldo, const float* x,
                                                                            int ldx, const unsigned char* panel, int K,
                                                                            int h, const float* bias, bool accumulate,
                                                                            int nn) {
  constexpr int rb = kPanel * (T == WeightType::f32 ? 4 : 2);
  const int c0 = group_column<T>(h, 0), c1 = group_column<T>(h, 1);
  const __m256i k0 = lane_mask(nn - c0), k1 = lane_mask(nn - c1);
  __m256 a0[R], a1[R];
  if (accumulate) {
    for (int i = 0; i < R; i++) {
      a0[i] = _mm256_maskload_ps(out + std::size_t(i) * ldo + c0, k0);
      a1[i] = _mm256_maskload_ps(out + std::size_t(i) * ldo + c1, k1);
    }
  } else {
    const __m256 b0 = bias ? _mm256_maskload_ps(bias + c0, k0) : _mm256_setzero_ps();
    const __m256 b1 = bias ? _mm256_maskload_ps(bias + c1, k1) : _mm256_setzero_ps();
    for (int i = 0; i < R; i++) a0[i] = b0, a1[i] = b1;
  }
  const float* xr[R];
  for (int i = 0; i < R; i++) xr[i] = x + std::size_t(i) * ldx;
  for (int k = 0; k < K; k++) {
    __m256 g0, g1;
    load256<T>(panel + std::size_t(k) * rb, h, g0, g1);
    for (int i = 0; i < R; i++) {
      const __m256 xi = _mm256_broadcast_ss(xr[i] + k);
      a0[i] = _mm256_fmadd_ps(xi, g0, a0[i]);
      a1[i] = _mm256_fmadd_ps(xi, g1, a1[i]);
    }
  }
  for (int i = 0; i < R; i++) {
    _mm256_maskstore_ps(out + std::size_t(i) * ldo + c0, k0, a0[i]);
    _mm256_maskstore_ps(out + std::size_t(i) * ldo + c1, k1, a1[i]);
  }
}

template <WeightType T>
__attribute__((target("avx2,fma,f16c"))) void tile256_rows(int rows, float* o, int ldo, const float* x, int ldx,
                                                            const unsigned char* panel, int K, int h, const float* b,
                                                            bool acc, int nn) {
  switch (rows) {
    case 6: tile256<T, 6>(o, ldo, x, ldx, panel, K, h, b, acc, nn); break;
    case 5: tile256<T, 5>(o, ldo, x, ldx, panel, K, h, b, acc, nn); break;
    case 4: tile256<T, 4>(o, ldo, x, ldx, panel, K, h, b, acc, nn); break;
    case 3: tile256<T, 3>(o, ldo, x, ldx, panel, K, h, b, acc, nn); break;
    case 2: tile256<T, 2>(o, ldo, x, ldx, panel, K, h, b, acc, nn); break;
    default: tile256<T, 1>(o, ldo, x, ldx, panel, K, h, b, acc, nn); break;
  }
}

template <WeightType T>
__attribute__((target("avx2,fma,f16c"))) void run_avx2(const Job& j, int p0, int p1) {
  constexpr int kTile = 6;
  const PackedMatrix& w = *j.w;
  const int rb = row_bytes(T);
  // the blocks of the AVX-512 kernel; each panel block is read for both halves and every row tile
  const Blocks b = blocks_for(j.N, j.K, kTile);
  for (int r0 = 0; r0 < j.N; r0 += b.mc) {
    const int rn = std::min(b.mc, j.N - r0);
    for (int kb = 0; kb < j.K; kb += b.kc) {
      const int kn = std::min(b.kc, j.K - kb);
      for (int p = p0; p < p1; p++) {
        const int nn = std::min(kPanel, w.rows - p * kPanel);
        const unsigned char* panel = w.panel(p) + std::size_t(j.k0 + kb) * rb;
        for (int h = 0; h < 2; h++)
          for (int t = 0; t < rn; t += kTile) {
            const int r = r0 + t;
            tile256_rows<T>(std::min(kTile, rn - t), j.out + std::size_t(r) * j.ldo + p * kPanel, j.ldo,
                            j.inp + std::size_t(r) * j.ldx + kb, j.ldx, panel, kn, h,
                            j.bias && kb == 0 ? j.bias + p * kPanel : nullptr, kb > 0, nn);
          }
      }
    }
  }
}

#endif  // HEADLAB_PACKED_X86

template <WeightType T>
void run(PackedKernel kernel, const Job& j, int p0, int p1) {
#if HEADLAB_PACKED_X86
  if (kernel == PackedKernel::avx512) return run_avx512<T>(j, p0, p1);
  if (kernel == PackedKernel::avx2) return run_avx2<T>(j, p0, p1);
#endif
  (void)kernel;
  run_portable<T>(j, p0, p1);
}

// Decided once: cpuid is slow (in a virtual machine it traps to the hypervisor).
PackedKernel best_kernel() {
  static const PackedKernel best = [] {
    const CpuFeatures f = cpu_features();
    if (HEADLAB_PACKED_X86 && f.avx512f) return PackedKernel::avx512;
    if (HEADLAB_PACKED_X86 && f.avx2 && f.fma && f.f16c) return PackedKernel::avx2;
    return PackedKernel::portable;
  }();
  return best;
}

// HEADLAB_KERNELS, when it names a kernel this CPU runs at or below its best; else empty.
const char* kernels_asked() {
  const char* env = std::getenv("HEADLAB_KERNELS");
  if (!env) return nullptr;
  for (PackedKernel k : {PackedKernel::portable, PackedKernel::avx2, PackedKernel::avx512})
    if (matmul_packed_kernel_name(k) == env && matmul_packed_kernel_supported(k)) return env;
  return nullptr;
}

}  // namespace

bool matmul_packed_kernel_supported(PackedKernel kernel) { return int(kernel) <= int(best_kernel()); }

std::string_view matmul_packed_kernel_name(PackedKernel kernel) {
  switch (kernel) {
    case PackedKernel::avx512: return "avx512";
    case PackedKernel::avx2: return "avx2";
    case PackedKernel::portable: return "portable";
  }
  return "?";
}

PackedKernel matmul_packed_kernel() {
  static const PackedKernel kernel = [] {
    if (const char* asked = kernels_asked())
      for (PackedKernel k : {PackedKernel::portable, PackedKernel::avx2, PackedKernel::avx512})
        if (matmul_packed_kernel_name(k) == asked) return k;
    return best_kernel();
  }();
  return kernel;
}

std::string matmul_packed_kernels_description() {
  const PackedKernel k = matmul_packed_kernel();
  const char* what = k == PackedKernel::avx512 ? "AVX-512F" : k == PackedKernel::avx2 ? "AVX2, FMA, F16C" : "plain loops";
  std::string line = "packed-weight kernels " + std::string(matmul_packed_kernel_name(k)) + " (" + what +
                     "; f32, bf16 and f16 weights, float32 arithmetic; ";
  if (kernels_asked()) return line + "HEADLAB_KERNELS set by the user)";
  if (std::getenv("HEADLAB_KERNELS"))
    return line + "chosen from the CPU's features: HEADLAB_KERNELS=" + std::getenv("HEADLAB_KERNELS") +
           " is not one this CPU runs)";
  return line + "chosen from the CPU's features)";
}

void matmul_forward_packed_with(PackedKernel kernel, float* out, int ldo, const float* inp, int ldx,
                                const PackedMatrix& w, int k0, int K, const float* bias, int N) {
  HEADLAB_CHECK(matmul_packed_kernel_supported(kernel));
  HEADLAB_CHECK(N >= 1 && k0 >= 0 && K >= 0 && k0 + K <= w.cols && ldo >= w.rows && ldx >= K);
  const Job job{out, ldo, inp, ldx, &w, k0, K, bias, N};
  const int n_panels = w.panels();
  const int parts = std::max(1, std::min(thread_pool_size(), n_panels));
  thread_pool_run(parts, [&](int part) {
    const int p0 = int(std::int64_t(n_panels) * part / parts), p1 = int(std::int64_t(n_panels) * (part + 1) / parts);
    if (p0 >= p1) return;
    switch (w.type) {
      case WeightType::f32: run<WeightType::f32>(kernel, job, p0, p1); break;
      case WeightType::bf16: run<WeightType::bf16>(kernel, job, p0, p1); break;
      case WeightType::f16: run<WeightType::f16>(kernel, job, p0, p1); break;
    }
  });
}

void matmul_forward_packed(float* out, const float* inp, const PackedMatrix& w, const float* bias, int N) {
  matmul_forward_packed_with(matmul_packed_kernel(), out, w.rows, inp, w.cols, w, 0, w.cols, bias, N);
}

void matmul_forward_packed_part(float* out, const float* inp, int ldx, const PackedMatrix& w, int k0, int K, int N) {
  matmul_forward_packed_with(matmul_packed_kernel(), out, w.rows, inp, ldx, w, k0, K, nullptr, N);
}

}  // namespace headlab::model
