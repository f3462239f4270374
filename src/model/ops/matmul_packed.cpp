// model/ops/matmul_packed.cpp — the linear layers over packed matrices: an AVX-512 kernel, an
// AVX2 + FMA + F16C kernel and portable loops, each for f32, bf16 and f16 weights (see
// matmul_packed.h; the layout is in packed_weights.h).
#include "model/ops/matmul_packed.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "model/blas.h"  // cpu_features
#include "model/ops/amx_tiles.h"
#include "model/ops/matmul_quant_q8.h"
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
// 5, CPU time, 2026-12-02): 5.4 s blocked against 5.8-6.1 s unblocked; level at 256 rows. The
// AVX-512 tiles keep k whole up to 2,048 (Llama-3.2-1B's C): on the Intel Xeon VM (2026-12-07,
// 1,280 rows, float32 arithmetic on bf16 weights) its q/k/v, o and gate/up products ran at 385-395
// GFLOPS against 321-357 with k in blocks of 512, and the class burst under --compute f32 at 0.60-0.71
// of its FLOP bound against 0.58-0.62; the AVX2 tile (16 registers) was level or slower, so it keeps 1,024.
constexpr int kShortRows = 64;
constexpr int kMaxK = 1024;               // k up to this is one block (the AVX2 tile)
constexpr int kMaxKAvx512 = 2048;         // ... for the AVX-512 tiles (float32 FMAs, bf16 dot products)
constexpr int kBlockK = 512;              // else blocks of kc (a down projection: few outputs)
constexpr int kInputBytes = 512 << 10;    // the rows' block of inputs
// matmul_forward_packed_groups: the panels a thread multiplies by every group before the next
// chunk (about L2: the chunk stays in cache while each group's inputs stream past it)
constexpr std::size_t kGroupChunkBytes = 512 << 10;
// AMX's inputs go in whole tiles of 16 rows: N rows padded with zero rows (run_amx)
int amx_pad_rows(int N) { return (N + 15) / 16 * 16; }

struct Blocks {
  int kc, mc;
};
Blocks blocks_for(int N, int K, int tile, int max_k) {
  if (N <= kShortRows) return {std::max(1, K), N};
  const int kc = K <= max_k ? std::max(1, K) : kBlockK;
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

// Row k of a panel (32 weights of `T`) as float32, columns in order.
template <WeightType T>
inline void widen_row(const unsigned char* panel, int k, float* w) {
  if constexpr (T == WeightType::f32) {
    std::memcpy(w, panel + std::size_t(k) * kPanel * sizeof(float), kPanel * sizeof(float));
  } else {
    const auto* h = reinterpret_cast<const std::uint16_t*>(panel);
    for (int j = 0; j < kPanel; j++) {
      const std::uint16_t b = h[packed_element(T, k, j)];
      w[j] = T == WeightType::bf16 ? weight_from_bf16(b) : weight_from_f16(b);
    }
  }
}

template <WeightType T>
void run_portable(const Job& j, int p0, int p1) {
  const PackedMatrix& w = *j.w;
  float wr[kPanel];
  for (int p = p0; p < p1; p++) {
    const int n0 = p * kPanel, nn = std::min(kPanel, w.rows - n0);
    const unsigned char* panel = w.panel(p);
    for (int r0 = 0; r0 < j.N; r0 += 4) {
      const int R = std::min(4, j.N - r0);
      float acc[4][kPanel];
      for (int i = 0; i < R; i++)
        for (int c = 0; c < kPanel; c++) acc[i][c] = j.bias && c < nn ? j.bias[n0 + c] : 0.0f;
      for (int k = 0; k < j.K; k++) {
        widen_row<T>(panel, j.k0 + k, wr);
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

// Spreads prefetches of `lines` cache lines from `next` (a share of the next panel) over the
// K steps of a tile, so the reads from memory overlap the arithmetic.
struct Prefetch {
  const char* next;
  int per, every, countdown;
  Prefetch(const char* n, int lines, int K)
      : next(n), per(lines > K ? 2 : 1), every(n ? std::max(1, K * per / std::max(1, lines)) : (1 << 30)), countdown(every) {}
  inline void step() {
    if (--countdown) return;
    countdown = every;
    _mm_prefetch(next, _MM_HINT_T0);
    if (per == 2) _mm_prefetch(next + 64, _MM_HINT_T0);
    next += 64 * per;
  }
};

// A tile's 8 x 32 accumulators at the start: out's values (a later block of k adds to them),
// else the bias, else 0; and at the end, back to out. m0, m1 mask the two 16-column halves.
template <int R>
__attribute__((target("avx512f"), always_inline)) inline void tile512_start(__m512* acc0, __m512* acc1, const float* out,
                                                                             int ldo, const float* bias, bool accumulate,
                                                                             __mmask16 m0, __mmask16 m1) {
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
}
template <int R>
__attribute__((target("avx512f"), always_inline)) inline void tile512_end(const __m512* acc0, const __m512* acc1,
                                                                           float* out, int ldo, __mmask16 m0,
                                                                           __mmask16 m1) {
  for (int i = 0; i < R; i++) {
    _mm512_mask_storeu_ps(out + std::size_t(i) * ldo, m0, acc0[i]);
    _mm512_mask_storeu_ps(out + std::size_t(i) * ldo + 16, m1, acc1[i]);
  }
}

// acc{0,1}[i] += x[i][k] * w{0,1} for the R rows: one k of the 8 x 32 tile.
template <int R>
__attribute__((target("avx512f"), always_inline)) inline void fma512(__m512* acc0, __m512* acc1, const float* const* xr,
                                                                      int k, __m512 w0, __m512 w1) {
  for (int i = 0; i < R; i++) {
    const __m512 xi = _mm512_set1_ps(xr[i][k]);
    acc0[i] = _mm512_fmadd_ps(xi, w0, acc0[i]);
    acc1[i] = _mm512_fmadd_ps(xi, w1, acc1[i]);
  }
}

// out[i][0..32) for i < R over k in [ks, ks + K) of `panel`:
//   acc = (out or bias or 0) + sum_k x[i][k - ks] * panel[k][..]
// m0, m1 mask the two 16-column halves (the last panel may be partial). Every weight type adds
// its products in the same order (k ascending), so a 16-bit weight gives the float32 result of
// its widened value exactly. bf16 reads a pair block (k, k + 1) per two loads: the shift widens
// the even k, the mask the odd one.
template <WeightType T, int R>
__attribute__((target("avx512f"), always_inline)) inline void tile512(float* out, int ldo, const float* x, int ldx,
                                                                       const unsigned char* panel, int ks, int K,
                                                                       const float* bias, bool accumulate, __mmask16 m0,
                                                                       __mmask16 m1, const char* next, int lines) {
  __m512 acc0[R], acc1[R];
  tile512_start<R>(acc0, acc1, out, ldo, bias, accumulate, m0, m1);
  const float* xr[R];
  for (int i = 0; i < R; i++) xr[i] = x + std::size_t(i) * ldx;
  Prefetch pf(next, lines, K);

  if constexpr (T == WeightType::bf16) {
    const __m512i odd = _mm512_set1_epi32(int(0xFFFF0000u));
    auto pair = [panel](int kabs, int half) __attribute__((target("avx512f"), always_inline)) {  // kabs even
      return _mm512_loadu_si512(panel + std::size_t(kabs) * kPanel * 2 + 64 * half);
    };
    int k = 0;
    if (ks & 1) {  // an odd first k: the high halves of the pair before it
      fma512<R>(acc0, acc1, xr, 0, _mm512_castsi512_ps(_mm512_and_si512(pair(ks - 1, 0), odd)),
                _mm512_castsi512_ps(_mm512_and_si512(pair(ks - 1, 1), odd)));
      pf.step();
      k = 1;
    }
    for (; k + 1 < K; k += 2) {
      const __m512i v0 = pair(ks + k, 0), v1 = pair(ks + k, 1);
      fma512<R>(acc0, acc1, xr, k, _mm512_castsi512_ps(_mm512_slli_epi32(v0, 16)),
                _mm512_castsi512_ps(_mm512_slli_epi32(v1, 16)));
      fma512<R>(acc0, acc1, xr, k + 1, _mm512_castsi512_ps(_mm512_and_si512(v0, odd)),
                _mm512_castsi512_ps(_mm512_and_si512(v1, odd)));
      pf.step();
      pf.step();
    }
    if (k < K)  // an even last k: the low halves of its pair
      fma512<R>(acc0, acc1, xr, k, _mm512_castsi512_ps(_mm512_slli_epi32(pair(ks + k, 0), 16)),
                _mm512_castsi512_ps(_mm512_slli_epi32(pair(ks + k, 1), 16)));
  } else {
    constexpr int rb = kPanel * (T == WeightType::f32 ? 4 : 2);
    const unsigned char* rows = panel + std::size_t(ks) * rb;
    for (int k = 0; k < K; k++) {
      const unsigned char* r = rows + std::size_t(k) * rb;
      __m512 w0, w1;
      if constexpr (T == WeightType::f32) {
        w0 = _mm512_loadu_ps(r);
        w1 = _mm512_loadu_ps(r + 64);
      } else {
        w0 = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(r)));
        w1 = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(r + 32)));
      }
      fma512<R>(acc0, acc1, xr, k, w0, w1);
      pf.step();
    }
  }
  tile512_end<R>(acc0, acc1, out, ldo, m0, m1);
}

template <WeightType T>
__attribute__((target("avx512f"))) void tile512_rows(int rows, float* o, int ldo, const float* x, int ldx,
                                                     const unsigned char* panel, int ks, int K, const float* b, bool acc,
                                                     __mmask16 m0, __mmask16 m1, const char* next, int lines) {
  switch (rows) {
    case 8: tile512<T, 8>(o, ldo, x, ldx, panel, ks, K, b, acc, m0, m1, next, lines); break;
    case 7: tile512<T, 7>(o, ldo, x, ldx, panel, ks, K, b, acc, m0, m1, next, lines); break;
    case 6: tile512<T, 6>(o, ldo, x, ldx, panel, ks, K, b, acc, m0, m1, next, lines); break;
    case 5: tile512<T, 5>(o, ldo, x, ldx, panel, ks, K, b, acc, m0, m1, next, lines); break;
    case 4: tile512<T, 4>(o, ldo, x, ldx, panel, ks, K, b, acc, m0, m1, next, lines); break;
    case 3: tile512<T, 3>(o, ldo, x, ldx, panel, ks, K, b, acc, m0, m1, next, lines); break;
    case 2: tile512<T, 2>(o, ldo, x, ldx, panel, ks, K, b, acc, m0, m1, next, lines); break;
    default: tile512<T, 1>(o, ldo, x, ldx, panel, ks, K, b, acc, m0, m1, next, lines); break;
  }
}

inline void panel_masks(const PackedMatrix& w, int p, __mmask16& m0, __mmask16& m1) {
  const int nn = std::min(kPanel, w.rows - p * kPanel);
  m0 = nn >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << nn) - 1);
  m1 = nn >= 32 ? __mmask16(0xFFFF) : nn <= 16 ? __mmask16(0) : __mmask16((1u << (nn - 16)) - 1);
}

template <WeightType T>
__attribute__((target("avx512f"))) void run_avx512(const Job& j, int p0, int p1) {
  constexpr int kTile = 8;
  const PackedMatrix& w = *j.w;
  const int rb = row_bytes(T);
  // rows in blocks of mc, k in blocks of kc; each panel block read once per row block, with the
  // next panel's block prefetched meanwhile (spread over this block's row tiles)
  const Blocks b = blocks_for(j.N, j.K, kTile, kMaxKAvx512);
  for (int r0 = 0; r0 < j.N; r0 += b.mc) {
    const int rn = std::min(b.mc, j.N - r0);
    const int tiles = (rn + kTile - 1) / kTile;
    for (int kb = 0; kb < j.K; kb += b.kc) {
      const int kn = std::min(b.kc, j.K - kb);
      const long panel_lines = long(kn) * rb / 64;
      for (int p = p0; p < p1; p++) {
        __mmask16 m0, m1;
        panel_masks(w, p, m0, m1);
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
                          j.inp + std::size_t(r) * j.ldx + kb, j.ldx, w.panel(p), j.k0 + kb, kn,
                          j.bias && kb == 0 ? j.bias + p * kPanel : nullptr, kb > 0, m0, m1, next, lines);
        }
      }
    }
  }
}

// ---- AVX-512 BF16: bfloat16 inputs times bf16 weights (--compute bf16) -----------------------
//
// vdpbf16ps multiplies 16 lanes of (bf16, bf16) pairs by 16 lanes of pairs and adds both
// products to float32 accumulators: one instruction does two k of an FMA's work. The weights'
// pair blocks are already its operand; the inputs are rounded to bfloat16 once per product
// (round to nearest even), laid out as pairs aligned with the weights' (an input k outside the
// product's range is 0), and broadcast a pair (32 bits) at a time.

// xb (N, P) pairs, row i pair q = (x[i][2(q0+q) - ks], x[i][2(q0+q) + 1 - ks]) with q0 = ks / 2,
// 0 outside [0, K). Rows [n0, n1).
__attribute__((target("avx512f,avx512bf16"))) void bf16_pairs(std::uint32_t* xb, int P, const float* x, int ldx,
                                                              int ks, int K, int n0, int n1) {
  for (int n = n0; n < n1; n++) {
    const float* xr = x + std::size_t(n) * ldx;
    std::uint32_t* o = xb + std::size_t(n) * P;
    if (ks % 2 == 0) {  // 32 inputs (16 pairs) per conversion
      for (int k = 0; k < K; k += 32) {
        const int left = K - k;
        const __mmask16 lo = left >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << left) - 1);
        const __mmask16 hi = left >= 32 ? __mmask16(0xFFFF) : left <= 16 ? __mmask16(0) : __mmask16((1u << (left - 16)) - 1);
        const __m512bh v = _mm512_cvtne2ps_pbh(_mm512_maskz_loadu_ps(hi, xr + k + 16), _mm512_maskz_loadu_ps(lo, xr + k));
        const int pairs = std::min(16, (left + 1) / 2);
        _mm512_mask_storeu_epi32(o + k / 2, __mmask16(pairs >= 16 ? 0xFFFF : (1u << pairs) - 1), __m512i(v));
      }
    } else {  // an odd first k: its pair starts with a 0
      for (int q = 0; q < P; q++) {
        const int ka = 2 * q - 1, kb = 2 * q;  // the pair's inputs, relative to ks
        const std::uint16_t a = ka >= 0 && ka < K ? weight_to_bf16(xr[ka]) : 0;
        const std::uint16_t b = kb < K ? weight_to_bf16(xr[kb]) : 0;
        o[q] = std::uint32_t(a) | std::uint32_t(b) << 16;
      }
    }
  }
}

template <int R>
__attribute__((target("avx512f,avx512bf16"), always_inline)) inline void tile_dot(float* out, int ldo,
                                                                                   const std::uint32_t* xb, int ldxb,
                                                                                   const unsigned char* pairs, int Q,
                                                                                   const float* bias, bool accumulate,
                                                                                   __mmask16 m0, __mmask16 m1,
                                                                                   const char* next, int lines) {
  __m512 acc0[R], acc1[R];
  tile512_start<R>(acc0, acc1, out, ldo, bias, accumulate, m0, m1);
  Prefetch pf(next, lines, Q);
  for (int q = 0; q < Q; q++) {
    const __m512bh w0 = __m512bh(_mm512_loadu_si512(pairs + std::size_t(q) * 128));
    const __m512bh w1 = __m512bh(_mm512_loadu_si512(pairs + std::size_t(q) * 128 + 64));
    for (int i = 0; i < R; i++) {
      const __m512bh xi = __m512bh(_mm512_set1_epi32(int(xb[std::size_t(i) * ldxb + q])));
      acc0[i] = _mm512_dpbf16_ps(acc0[i], xi, w0);
      acc1[i] = _mm512_dpbf16_ps(acc1[i], xi, w1);
    }
    pf.step();
  }
  tile512_end<R>(acc0, acc1, out, ldo, m0, m1);
}

__attribute__((target("avx512f,avx512bf16"))) void tile_dot_rows(int rows, float* o, int ldo, const std::uint32_t* xb,
                                                                 int ldxb, const unsigned char* pairs, int Q,
                                                                 const float* b, bool acc, __mmask16 m0, __mmask16 m1,
                                                                 const char* next, int lines) {
  switch (rows) {
    case 8: tile_dot<8>(o, ldo, xb, ldxb, pairs, Q, b, acc, m0, m1, next, lines); break;
    case 7: tile_dot<7>(o, ldo, xb, ldxb, pairs, Q, b, acc, m0, m1, next, lines); break;
    case 6: tile_dot<6>(o, ldo, xb, ldxb, pairs, Q, b, acc, m0, m1, next, lines); break;
    case 5: tile_dot<5>(o, ldo, xb, ldxb, pairs, Q, b, acc, m0, m1, next, lines); break;
    case 4: tile_dot<4>(o, ldo, xb, ldxb, pairs, Q, b, acc, m0, m1, next, lines); break;
    case 3: tile_dot<3>(o, ldo, xb, ldxb, pairs, Q, b, acc, m0, m1, next, lines); break;
    case 2: tile_dot<2>(o, ldo, xb, ldxb, pairs, Q, b, acc, m0, m1, next, lines); break;
    default: tile_dot<1>(o, ldo, xb, ldxb, pairs, Q, b, acc, m0, m1, next, lines); break;
  }
}

// The pairs [q0, q0 + P) of the weights against xb (N, P): the AVX-512 kernel's blocks, in pairs.
__attribute__((target("avx512f,avx512bf16"))) void run_dot(const Job& j, const std::uint32_t* xb, int P, int p0, int p1) {
  constexpr int kTile = 8;
  const PackedMatrix& w = *j.w;
  const int q0 = j.k0 / 2;
  const Blocks b = blocks_for(j.N, 2 * P, kTile, kMaxKAvx512);
  const int qc = std::max(1, b.kc / 2);
  for (int r0 = 0; r0 < j.N; r0 += b.mc) {
    const int rn = std::min(b.mc, j.N - r0);
    const int tiles = (rn + kTile - 1) / kTile;
    for (int qb = 0; qb < P; qb += qc) {
      const int qn = std::min(qc, P - qb);
      const long panel_lines = long(qn) * 2;  // 128 bytes a pair
      for (int p = p0; p < p1; p++) {
        __mmask16 m0, m1;
        panel_masks(w, p, m0, m1);
        const unsigned char* pairs = w.panel(p) + std::size_t(q0 + qb) * 128;
        for (int t = 0; t < tiles; t++) {
          const char* next = nullptr;
          int lines = 0;
          if (p + 1 < p1) {
            const long a = panel_lines * t / tiles, e = panel_lines * (t + 1) / tiles;
            next = reinterpret_cast<const char*>(w.panel(p + 1) + std::size_t(q0 + qb) * 128) + a * 64;
            lines = int(e - a);
          }
          const int r = r0 + t * kTile;
          tile_dot_rows(std::min(kTile, rn - t * kTile), j.out + std::size_t(r) * j.ldo + p * kPanel, j.ldo,
                        xb + std::size_t(r) * P + qb, P, pairs, qn, j.bias && qb == 0 ? j.bias + p * kPanel : nullptr,
                        qb > 0, m0, m1, next, lines);
        }
      }
    }
  }
}

// ---- AMX: bfloat16 tile products (--compute bf16 on a CPU with AMX-BF16) --------------------
//
// tdpbf16ps multiplies a 16 x 32 bf16 tile of inputs (16 rows, 16 pairs of k) by a 16 x 32 tile
// of weights (16 pairs of k, 16 columns, each a pair) into 16 x 16 float32 accumulators: 16,384
// products an instruction. A bf16 panel is already the weights' tile layout (a pair block of 16
// columns is 64 bytes, the next pair's 128 bytes on), and bf16_pairs' rows are the inputs'. A
// block of 32 rows x one panel is four accumulator tiles, two input tiles and two weight tiles
// (all eight). The pairs past the last whole 16 are added by the AVX512_BF16 tile after. The
// inputs are padded with zero rows to a multiple of 16 (amx_pad_rows), so a row's sums never
// depend on the rows beside it: a batch's rows equal each sequence run alone, bit for bit.

// Linux hands out AMX's tile state only to a process that asks (arch_prctl, once).
bool amx_permitted() {
#if defined(__linux__)
  static const bool ok = [] {
    constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
    return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
  }();
  return ok;
#else
  return false;
#endif
}

// Panels [p0, p1) for the rows of j (inputs xb, N rounded up to 16 rows of P pairs, zeros past
// N), all k: out = bias + x . W over the first Pfull pairs by tiles, then the rest by tile_dot.
__attribute__((target("amx-tile,amx-bf16,avx512f,avx512bf16"))) void run_amx(const Job& j, const std::uint32_t* xb,
                                                                             int P, int p0, int p1) {
  const PackedMatrix& w = *j.w;
  const int q0 = j.k0 / 2, Pfull = P / 16 * 16, Npad = amx_pad_rows(j.N);
  amx_configure_tiles();
  alignas(64) float c[32][32];
  // rows in blocks whose inputs stay in L2 (as the other kernels), each block through every panel
  const int mc = std::max(32, (kInputBytes * 2) / std::max(1, P * 4) / 32 * 32);
  for (int r0 = 0; r0 < Npad; r0 += mc) {
    const int r1 = std::min(Npad, r0 + mc);
    for (int p = p0; p < p1; p++) {
      __mmask16 m0, m1;
      panel_masks(w, p, m0, m1);
      const int nn = std::min(kPanel, w.rows - p * kPanel);
      const unsigned char* pairs = w.panel(p) + std::size_t(q0) * 128;
      for (int r = r0; r < r1; r += 32) {
        const bool two = r + 16 < r1;  // a second 16 rows in this block
        const std::uint32_t* x = xb + std::size_t(r) * P;
        _tile_zero(0);
        _tile_zero(1);
        _tile_zero(2);
        _tile_zero(3);
        for (int q = 0; q < Pfull; q += 16) {
          _tile_loadd(6, pairs + std::size_t(q) * 128, 128);
          _tile_loadd(7, pairs + std::size_t(q) * 128 + 64, 128);
          _tile_loadd(4, x + q, P * 4);
          _tile_dpbf16ps(0, 4, 6);
          _tile_dpbf16ps(1, 4, 7);
          if (two) {
            _tile_loadd(5, x + std::size_t(16) * P + q, P * 4);
            _tile_dpbf16ps(2, 5, 6);
            _tile_dpbf16ps(3, 5, 7);
          }
        }
        _tile_stored(0, &c[0][0], 128);
        _tile_stored(1, &c[0][16], 128);
        if (two) {
          _tile_stored(2, &c[16][0], 128);
          _tile_stored(3, &c[16][16], 128);
        }
        const int rows = std::min(two ? 32 : 16, j.N - r);
        const float* bias = j.bias ? j.bias + p * kPanel : nullptr;
        for (int i = 0; i < rows; i++) {
          float* o = j.out + std::size_t(r + i) * j.ldo + p * kPanel;
          for (int k = 0; k < nn; k++) o[k] = bias ? c[i][k] + bias[k] : c[i][k];
        }
        if (Pfull < P)  // the pairs past the last whole tile, added to out
          for (int i = 0; i < rows; i += 8)
            tile_dot_rows(std::min(8, rows - i), j.out + std::size_t(r + i) * j.ldo + p * kPanel, j.ldo,
                          x + std::size_t(i) * P + Pfull, P, pairs + std::size_t(Pfull) * 128, P - Pfull, nullptr, true,
                          m0, m1, nullptr, 0);
      }
    }
  }
  _tile_release();
}

// ---- AVX2 + FMA + F16C -----------------------------------------------------------------------

// acc{0,1}[i] += x[i][k] * g{0,1} for the R rows: one k of the 6 x 16 tile.
template <int R>
__attribute__((target("avx2,fma"), always_inline)) inline void fma256(__m256* a0, __m256* a1, const float* const* xr, int k,
                                                                      __m256 g0, __m256 g1) {
  for (int i = 0; i < R; i++) {
    const __m256 xi = _mm256_broadcast_ss(xr[i] + k);
    a0[i] = _mm256_fmadd_ps(xi, g0, a0[i]);
    a1[i] = _mm256_fmadd_ps(xi, g1, a1[i]);
  }
}

// The lanes of a group that are real columns (the last panel may be partial).
__attribute__((target("avx2"))) inline __m256i lane_mask(int valid) {
  const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(valid), idx);
}

// Half h (columns 16h..16h+15, as two groups of 8) of a 32-column tile over k in [ks, ks + K):
// the order of the AVX-512 tile (k ascending), bf16 in pair blocks.
template <WeightType T, int R>
__attribute__((target("avx2,fma,f16c"), always_inline)) inline void tile256(float* out, int ldo, const float* x,
                                                                            int ldx, const unsigned char* panel, int ks,
                                                                            int K, int h, const float* bias,
                                                                            bool accumulate, int nn) {
  const int c0 = 16 * h, c1 = 16 * h + 8;
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
  if constexpr (T == WeightType::bf16) {
    const __m256i odd = _mm256_set1_epi32(int(0xFFFF0000u));
    auto group = [panel, h](int kabs, int g) __attribute__((target("avx2"), always_inline)) {  // kabs even
      return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(panel + std::size_t(kabs) * kPanel * 2 + 64 * h + 32 * g));
    };
    auto even = [](__m256i v) __attribute__((target("avx2"), always_inline)) { return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16)); };
    auto high = [odd](__m256i v) __attribute__((target("avx2"), always_inline)) { return _mm256_castsi256_ps(_mm256_and_si256(v, odd)); };
    int k = 0;
    if (ks & 1) {
      fma256<R>(a0, a1, xr, 0, high(group(ks - 1, 0)), high(group(ks - 1, 1)));
      k = 1;
    }
    for (; k + 1 < K; k += 2) {
      const __m256i v0 = group(ks + k, 0), v1 = group(ks + k, 1);
      fma256<R>(a0, a1, xr, k, even(v0), even(v1));
      fma256<R>(a0, a1, xr, k + 1, high(v0), high(v1));
    }
    if (k < K) fma256<R>(a0, a1, xr, k, even(group(ks + k, 0)), even(group(ks + k, 1)));
  } else {
    constexpr int rb = kPanel * (T == WeightType::f32 ? 4 : 2);
    const unsigned char* rows = panel + std::size_t(ks) * rb;
    for (int k = 0; k < K; k++) {
      const unsigned char* r = rows + std::size_t(k) * rb;
      __m256 g0, g1;
      if constexpr (T == WeightType::f32) {
        g0 = _mm256_loadu_ps(reinterpret_cast<const float*>(r + 64 * h));
        g1 = _mm256_loadu_ps(reinterpret_cast<const float*>(r + 64 * h + 32));
      } else {
        g0 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(r + 32 * h)));
        g1 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(r + 32 * h + 16)));
      }
      fma256<R>(a0, a1, xr, k, g0, g1);
    }
  }
  for (int i = 0; i < R; i++) {
    _mm256_maskstore_ps(out + std::size_t(i) * ldo + c0, k0, a0[i]);
    _mm256_maskstore_ps(out + std::size_t(i) * ldo + c1, k1, a1[i]);
  }
}

template <WeightType T>
__attribute__((target("avx2,fma,f16c"))) void tile256_rows(int rows, float* o, int ldo, const float* x, int ldx,
                                                            const unsigned char* panel, int ks, int K, int h,
                                                            const float* b, bool acc, int nn) {
  switch (rows) {
    case 6: tile256<T, 6>(o, ldo, x, ldx, panel, ks, K, h, b, acc, nn); break;
    case 5: tile256<T, 5>(o, ldo, x, ldx, panel, ks, K, h, b, acc, nn); break;
    case 4: tile256<T, 4>(o, ldo, x, ldx, panel, ks, K, h, b, acc, nn); break;
    case 3: tile256<T, 3>(o, ldo, x, ldx, panel, ks, K, h, b, acc, nn); break;
    case 2: tile256<T, 2>(o, ldo, x, ldx, panel, ks, K, h, b, acc, nn); break;
    default: tile256<T, 1>(o, ldo, x, ldx, panel, ks, K, h, b, acc, nn); break;
  }
}

template <WeightType T>
__attribute__((target("avx2,fma,f16c"))) void run_avx2(const Job& j, int p0, int p1) {
  constexpr int kTile = 6;
  const PackedMatrix& w = *j.w;
  // the AVX-512 kernel's blocks with k whole only up to kMaxK; each panel block is read for both halves and every row tile
  const Blocks b = blocks_for(j.N, j.K, kTile, kMaxK);
  for (int r0 = 0; r0 < j.N; r0 += b.mc) {
    const int rn = std::min(b.mc, j.N - r0);
    for (int kb = 0; kb < j.K; kb += b.kc) {
      const int kn = std::min(b.kc, j.K - kb);
      for (int p = p0; p < p1; p++) {
        const int nn = std::min(kPanel, w.rows - p * kPanel);
        for (int h = 0; h < 2; h++)
          for (int t = 0; t < rn; t += kTile) {
            const int r = r0 + t;
            tile256_rows<T>(std::min(kTile, rn - t), j.out + std::size_t(r) * j.ldo + p * kPanel, j.ldo,
                            j.inp + std::size_t(r) * j.ldx + kb, j.ldx, w.panel(p), j.k0 + kb, kn, h,
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
  if (kernel == PackedKernel::avx512 || kernel == PackedKernel::avx512bf16 || kernel == PackedKernel::amx)
    return run_avx512<T>(j, p0, p1);
  if (kernel == PackedKernel::avx2) return run_avx2<T>(j, p0, p1);
#endif
  (void)kernel;
  run_portable<T>(j, p0, p1);
}

// The block decoders of a kernel's instruction set (the tests force each kernel, so each decoder).
QuantDecoder decoder_for(PackedKernel kernel) {
  return kernel == PackedKernel::portable ? QuantDecoder::scalar
         : kernel == PackedKernel::avx2   ? QuantDecoder::avx2
                                          : QuantDecoder::avx512;
}

// A quantized matrix (packed_weights.h): each panel's 32 rows, the k asked for only, widened
// into a float32 panel of this thread's (exactly: quant_blocks.h) by the block decoders of the
// kernel's instruction set (packed_quant_panel, quant_simd.h), then the f32 kernel on it. The
// widening is once per panel and product, shared by all N rows. (Widening 256 k at a time into
// an L1-sized panel, the kernel adding each piece to the last, measured no faster: 2026-12-06.)
// A thread's float32 panel (K, 32) for run_quantized's widening, grown as needed and kept.
float* widened_panel(int K) {
  struct Scratch {
    float* panel = nullptr;
    std::size_t floats = 0;
    ~Scratch() { std::free(panel); }
  };
  thread_local Scratch s;
  const std::size_t need = std::size_t(std::max(1, K)) * kPanel;
  if (s.floats < need) {
    std::free(s.panel);
    s.panel = static_cast<float*>(std::aligned_alloc(64, (need * sizeof(float) + 63) / 64 * 64));
    HEADLAB_CHECK(s.panel != nullptr);
    s.floats = need;
  }
  return s.panel;
}

// Panels [p0, p1) of a quantized matrix, each widened once and multiplied by every job (one
// product, or matmul_forward_packed_groups' groups: the same k0, K and matrix).
void run_quantized(PackedKernel kernel, std::span<const Job> jobs, int p0, int p1) {
  const PackedMatrix& w = *jobs[0].w;
  const int k0 = jobs[0].k0, K = jobs[0].K;
  const QuantDecoder decoder = decoder_for(kernel);
  float* widened = widened_panel(K);
  for (int p = p0; p < p1; p++) {
    const int n0 = p * kPanel, nn = std::min(kPanel, w.rows - n0);
    packed_quant_panel(decoder, w, p, k0, K, widened);  // the columns past the last row: zeros
    PackedMatrix panel;
    panel.type = WeightType::f32, panel.rows = nn, panel.cols = K, panel.data = reinterpret_cast<unsigned char*>(widened);
    for (const Job& j : jobs) {
      const Job one{j.out + n0, j.ldo, j.inp, j.ldx, &panel, 0, K, j.bias ? j.bias + n0 : nullptr, j.N};
      run<WeightType::f32>(kernel, one, 0, 1);
    }
  }
}

void run_quantized(PackedKernel kernel, const Job& j, int p0, int p1) { run_quantized(kernel, std::span<const Job>(&j, 1), p0, p1); }

constexpr PackedKernel kAllKernels[] = {PackedKernel::portable, PackedKernel::avx2, PackedKernel::avx512,
                                        PackedKernel::avx512bf16, PackedKernel::amx};

// Decided once: cpuid is slow (in a virtual machine it traps to the hypervisor).
PackedKernel best_kernel() {
  static const PackedKernel best = [] {
    const CpuFeatures f = cpu_features();
#if HEADLAB_PACKED_X86
    if (f.avx512f && f.avx512_bf16 && f.amx_bf16 && amx_permitted()) return PackedKernel::amx;
#endif
    if (HEADLAB_PACKED_X86 && f.avx512f && f.avx512_bf16) return PackedKernel::avx512bf16;
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
  for (PackedKernel k : kAllKernels)
    if (matmul_packed_kernel_name(k) == env && matmul_packed_kernel_supported(k)) return env;
  return nullptr;
}

// Inputs rounded to bfloat16 and back (what --compute bf16 multiplies), for kernels without
// AVX512_BF16: out (N, K) = bf16(x[:, 0:K]).
void round_inputs(float* out, const float* x, int ldx, int K, int N) {
  for (int n = 0; n < N; n++)
    for (int k = 0; k < K; k++) out[std::size_t(n) * K + k] = weight_from_bf16(weight_to_bf16(x[std::size_t(n) * ldx + k]));
}

}  // namespace

Q8Kernel matmul_packed_q8_kernel(PackedKernel kernel) {
  if (kernel == PackedKernel::portable) return Q8Kernel::portable;
  if (kernel != PackedKernel::avx2 && matmul_q8_kernel_supported(Q8Kernel::avx512vnni)) return Q8Kernel::avx512vnni;
  return matmul_q8_kernel_supported(Q8Kernel::avx2) ? Q8Kernel::avx2 : Q8Kernel::portable;
}

bool matmul_packed_kernel_supported(PackedKernel kernel) { return int(kernel) <= int(best_kernel()); }

std::string_view matmul_packed_kernel_name(PackedKernel kernel) {
  switch (kernel) {
    case PackedKernel::amx: return "amx";
    case PackedKernel::avx512bf16: return "avx512bf16";
    case PackedKernel::avx512: return "avx512";
    case PackedKernel::avx2: return "avx2";
    case PackedKernel::portable: return "portable";
  }
  return "?";
}

PackedKernel matmul_packed_kernel() {
  static const PackedKernel kernel = [] {
    if (const char* asked = kernels_asked())
      for (PackedKernel k : kAllKernels)
        if (matmul_packed_kernel_name(k) == asked) return k;
    return best_kernel();
  }();
  return kernel;
}

std::string matmul_packed_kernels_description() {
  const PackedKernel k = matmul_packed_kernel();
  const char* what = k == PackedKernel::amx          ? "AVX-512F, AVX512_BF16, AMX-BF16"
                     : k == PackedKernel::avx512bf16 ? "AVX-512F, AVX512_BF16"
                     : k == PackedKernel::avx512   ? "AVX-512F"
                     : k == PackedKernel::avx2     ? "AVX2, FMA, F16C"
                                                   : "plain loops";
  std::string line = "packed-weight kernels " + std::string(matmul_packed_kernel_name(k)) + " (" + what +
                     "; f32, bf16 and f16 weights, and GGUF's quantized blocks widened 32 rows at a time by " +
                     std::string(quant_decoder_name(decoder_for(k))) +
                     " block decoders; float32 "
                     "activations and arithmetic, or under --compute q8 inputs rounded to 8 bits for " +
                     std::string(matmul_q8_kernel_name(matmul_packed_q8_kernel(k))) + " integer dot products; " +
                     (k == PackedKernel::amx          ? "AMX bf16 tile products under --compute bf16; "
                      : k == PackedKernel::avx512bf16 ? "bf16 dot products under --compute bf16; "
                                                      : "--compute bf16 rounds the inputs, no faster; ");
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
  const int n_panels = w.panels();
  const int parts = thread_pool_parts(std::size_t(N) * K * w.rows, n_panels);
  auto split = [&](int part, int& p0, int& p1) {
    p0 = int(std::int64_t(n_panels) * part / parts), p1 = int(std::int64_t(n_panels) * (part + 1) / parts);
  };
  if (w.quantized() && w.q8_inputs && matmul_q8_applies(w, k0, K))
    return matmul_forward_q8_with(matmul_packed_q8_kernel(kernel), out, ldo, inp, ldx, w, k0, K, bias, N);
  if (w.quantized()) {
    const Job job{out, ldo, inp, ldx, &w, k0, K, bias, N};
    thread_pool_run(parts, [&](int part) {
      int p0, p1;
      split(part, p0, p1);
      if (p0 < p1) run_quantized(kernel, job, p0, p1);
    });
    return;
  }
  if (w.type == WeightType::bf16 && w.bf16_inputs && K > 0) {
    thread_local std::vector<float> rounded;  // the inputs rounded, or their pairs (as uint32)
#if HEADLAB_PACKED_X86
    if (kernel == PackedKernel::avx512bf16 || kernel == PackedKernel::amx) {
      const bool amx = kernel == PackedKernel::amx;
      const int P = (k0 + K + 1) / 2 - k0 / 2;  // the weights' pairs the product touches
      const int rows = amx ? amx_pad_rows(N) : N;  // AMX: zero rows up to whole tiles
      rounded.resize(std::size_t(rows) * P);
      auto* xb = reinterpret_cast<std::uint32_t*>(rounded.data());
      std::fill(xb + std::size_t(N) * P, xb + std::size_t(rows) * P, 0u);
      const int row_parts = thread_pool_parts(std::size_t(N) * K, N / 16);
      thread_pool_run(row_parts, [&](int part) {
        bf16_pairs(xb, P, inp, ldx, k0, K, int(std::int64_t(N) * part / row_parts), int(std::int64_t(N) * (part + 1) / row_parts));
      });
      const Job job{out, ldo, inp, ldx, &w, k0, K, bias, N};
      thread_pool_run(parts, [&](int part) {
        int p0, p1;
        split(part, p0, p1);
        if (p0 >= p1) return;
        if (amx) run_amx(job, xb, P, p0, p1);
        else run_dot(job, xb, P, p0, p1);
      });
      return;
    }
#endif
    rounded.resize(std::size_t(N) * K);
    round_inputs(rounded.data(), inp, ldx, K, N);
    const Job job{out, ldo, rounded.data(), K, &w, k0, K, bias, N};
    thread_pool_run(parts, [&](int part) {
      int p0, p1;
      split(part, p0, p1);
      if (p0 < p1) run<WeightType::bf16>(kernel, job, p0, p1);
    });
    return;
  }
  const Job job{out, ldo, inp, ldx, &w, k0, K, bias, N};
  thread_pool_run(parts, [&](int part) {
    int p0, p1;
    split(part, p0, p1);
    if (p0 >= p1) return;
    switch (w.type) {
      case WeightType::f32: run<WeightType::f32>(kernel, job, p0, p1); break;
      case WeightType::bf16: run<WeightType::bf16>(kernel, job, p0, p1); break;
      case WeightType::f16: run<WeightType::f16>(kernel, job, p0, p1); break;
      default: break;  // quantized: above
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

namespace headlab::model {

void matmul_forward_packed_groups(std::span<const PackedGroup> groups, const PackedMatrix& w) {
  matmul_forward_packed_groups_with(matmul_packed_kernel(), groups, w);
}

void matmul_forward_packed_groups_with(PackedKernel kernel, std::span<const PackedGroup> groups, const PackedMatrix& w) {
  HEADLAB_CHECK(matmul_packed_kernel_supported(kernel));
  const int K = w.cols;
  std::size_t rows = 0;
  for (const PackedGroup& g : groups) {
    HEADLAB_CHECK(g.N >= 1 && g.ldo >= w.rows && g.ldx >= K);
    rows += std::size_t(g.N);
  }
  // One group, or inputs rounded to 8 bits per product: each product on its own.
  if (groups.size() <= 1 || K == 0 || (w.quantized() && w.q8_inputs && matmul_q8_applies(w, 0, K))) {
    for (const PackedGroup& g : groups) matmul_forward_packed_with(kernel, g.out, g.ldo, g.inp, g.ldx, w, 0, K, nullptr, g.N);
    return;
  }
  const int n_panels = w.panels();
  const int parts = thread_pool_parts(rows * std::size_t(K) * std::size_t(w.rows), n_panels);
  auto split = [&](int part, int& p0, int& p1) {
    p0 = int(std::int64_t(n_panels) * part / parts), p1 = int(std::int64_t(n_panels) * (part + 1) / parts);
  };
  // each group's first row in a buffer of all groups' rows (AMX's padded to whole tiles), and the total
  auto row_offsets = [&](bool pad) {
    std::vector<std::size_t> at(groups.size() + 1, 0);
    for (std::size_t g = 0; g < groups.size(); g++) at[g + 1] = at[g] + std::size_t(pad ? amx_pad_rows(groups[g].N) : groups[g].N);
    return at;
  };
  auto job = [&](std::size_t g, const float* inp, int ldx) {
    return Job{groups[g].out, groups[g].ldo, inp, ldx, &w, 0, K, nullptr, groups[g].N};
  };
  // each thread: its panels a chunk at a time, every group multiplied by the chunk
  auto over_chunks = [&](int chunk, const auto& product) {
    thread_pool_run(parts, [&](int part) {
      int p0, p1;
      split(part, p0, p1);
      for (int c0 = p0; c0 < p1; c0 += chunk)
        for (std::size_t g = 0; g < groups.size(); g++) product(g, c0, std::min(p1, c0 + chunk));
    });
  };
  if (w.quantized()) {  // each panel widened once, then every group multiplied by it
    std::vector<Job> jobs;
    for (std::size_t g = 0; g < groups.size(); g++) jobs.push_back(job(g, groups[g].inp, groups[g].ldx));
    thread_pool_run(parts, [&](int part) {
      int p0, p1;
      split(part, p0, p1);
      if (p0 < p1) run_quantized(kernel, jobs, p0, p1);
    });
    return;
  }
  const int chunk = std::max(1, int(kGroupChunkBytes / std::max<std::size_t>(1, w.panel_bytes())));
  thread_local std::vector<float> rounded;  // the inputs rounded (or their bf16 pairs), all groups' rows
  if (w.type == WeightType::bf16 && w.bf16_inputs) {
#if HEADLAB_PACKED_X86
    if (kernel == PackedKernel::avx512bf16 || kernel == PackedKernel::amx) {
      const bool amx = kernel == PackedKernel::amx;
      const int P = (K + 1) / 2;
      const std::vector<std::size_t> at = row_offsets(amx);  // AMX's pad rows are zeros
      rounded.resize(at.back() * std::size_t(P));
      auto* xb = reinterpret_cast<std::uint32_t*>(rounded.data());  // the caller's buffer, shared with the workers
      thread_pool_for_parts(groups.size(), [&](std::size_t g0, std::size_t g1) {
        for (std::size_t g = g0; g < g1; g++) {
          std::uint32_t* rows_g = xb + at[g] * P;
          bf16_pairs(rows_g, P, groups[g].inp, groups[g].ldx, 0, K, 0, groups[g].N);
          std::fill(rows_g + std::size_t(groups[g].N) * P, xb + at[g + 1] * P, 0u);
        }
      }, std::size_t(K) * std::size_t(groups[0].N));
      over_chunks(chunk, [&](std::size_t g, int c0, int c1) {
        if (amx) run_amx(job(g, groups[g].inp, groups[g].ldx), xb + at[g] * P, P, c0, c1);
        else run_dot(job(g, groups[g].inp, groups[g].ldx), xb + at[g] * P, P, c0, c1);
      });
      return;
    }
#endif
    const std::vector<std::size_t> at = row_offsets(false);
    rounded.resize(at.back() * std::size_t(K));
    float* xr = rounded.data();  // the caller's (a worker's thread_local is another)
    for (std::size_t g = 0; g < groups.size(); g++) round_inputs(xr + at[g] * K, groups[g].inp, groups[g].ldx, K, groups[g].N);
    over_chunks(chunk, [&](std::size_t g, int c0, int c1) { run<WeightType::bf16>(kernel, job(g, xr + at[g] * K, K), c0, c1); });
    return;
  }
  switch (w.type) {
    case WeightType::f32:
      over_chunks(chunk, [&](std::size_t g, int c0, int c1) { run<WeightType::f32>(kernel, job(g, groups[g].inp, groups[g].ldx), c0, c1); });
      break;
    case WeightType::bf16:
      over_chunks(chunk, [&](std::size_t g, int c0, int c1) { run<WeightType::bf16>(kernel, job(g, groups[g].inp, groups[g].ldx), c0, c1); });
      break;
    case WeightType::f16:
      over_chunks(chunk, [&](std::size_t g, int c0, int c1) { run<WeightType::f16>(kernel, job(g, groups[g].inp, groups[g].ldx), c0, c1); });
      break;
    default: break;
  }
}

}  // namespace headlab::model
