// model/cpu_peak.cpp — register-only multiply-add loops on every pool thread (see cpu_peak.h).
#include "model/cpu_peak.h"

#include <algorithm>
#include <chrono>
#include <cstdint>

#include "model/blas.h"  // cpu_features
#include "model/ops/amx_tiles.h"
#include "model/ops/matmul_packed.h"  // the kernel in use (AMX or not)
#include "model/thread_pool.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define HEADLAB_PEAK_X86 1
// GCC 12 warns about its own _mm512_undefined_* inside _mm512_reduce_add_ps: a known false
// positive (as in src/model/ops/matmul_packed.cpp).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#else
#define HEADLAB_PEAK_X86 0
#endif

namespace headlab::model {

namespace {

constexpr long kIters = 1L << 24;  // per thread and chain: 30-150 ms per loop

#if HEADLAB_PEAK_X86
// Each chain is a <- a * m + c: with m = 0.5 and c = 1 it settles at 2, never overflowing or
// going subnormal. The sum at the end keeps the compiler from dropping the loop.
__attribute__((target("avx2,fma"))) float loop_avx2(long iters) {
  constexpr int kChains = 12;  // 16 ymm registers: 12 chains, m, c
  __m256 a[kChains];
  for (int j = 0; j < kChains; j++) a[j] = _mm256_set1_ps(float(j));
  const __m256 m = _mm256_set1_ps(0.5f), c = _mm256_set1_ps(1.0f);
  for (long i = 0; i < iters; i++)
    for (int j = 0; j < kChains; j++) a[j] = _mm256_fmadd_ps(a[j], m, c);
  __m256 s = a[0];
  for (int j = 1; j < kChains; j++) s = _mm256_add_ps(s, a[j]);
  return _mm256_cvtss_f32(s);
}

__attribute__((target("avx512f"))) float loop_avx512(long iters) {
  constexpr int kChains = 16;
  __m512 a[kChains];
  for (int j = 0; j < kChains; j++) a[j] = _mm512_set1_ps(float(j));
  const __m512 m = _mm512_set1_ps(0.5f), c = _mm512_set1_ps(1.0f);
  for (long i = 0; i < iters; i++)
    for (int j = 0; j < kChains; j++) a[j] = _mm512_fmadd_ps(a[j], m, c);
  __m512 s = a[0];
  for (int j = 1; j < kChains; j++) s = _mm512_add_ps(s, a[j]);
  return _mm512_reduce_add_ps(s);
}

// a <- a + x0*y0 + x1*y1 per lane with tiny bf16 pairs: the sums grow by 2e-6 a step.
__attribute__((target("avx512f,avx512bf16"))) float loop_bf16(long iters) {
  constexpr int kChains = 16;
  __m512 a[kChains];
  for (int j = 0; j < kChains; j++) a[j] = _mm512_set1_ps(float(j));
  const __m512bh x = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-3f), _mm512_set1_ps(1e-3f));
  for (long i = 0; i < iters; i++)
    for (int j = 0; j < kChains; j++) a[j] = _mm512_dpbf16_ps(a[j], x, x);
  __m512 s = a[0];
  for (int j = 1; j < kChains; j++) s = _mm512_add_ps(s, a[j]);
  return _mm512_reduce_add_ps(s);
}

// AMX: four accumulator tiles, each += a 16 x 32 bf16 tile times a 32 x 16 one per tdpbf16ps
// (16 x 16 x 32 products), the operands never reloaded. Each thread configures its tiles.
__attribute__((target("amx-tile,amx-bf16"))) float loop_amx(long iters) {
  amx_configure_tiles();
  alignas(64) static const std::uint16_t x[16 * 32] = {};  // zeros: the sums stay 0
  alignas(64) float out[16 * 16];
  _tile_loadd(4, x, 64);
  _tile_loadd(5, x, 64);
  _tile_loadd(6, x, 64);
  _tile_loadd(7, x, 64);
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  for (long i = 0; i < iters / 4; i++) {
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  _tile_stored(0, out, 64);
  _tile_release();
  return out[0];
}
constexpr double kAmxFlops = 16.0 * 16 * 32 * 2;  // a tdpbf16ps
constexpr long kAmxShare = 16;  // a tile product is 64 times a vdpbf16ps: a sixteenth as many
float loop_amx_share(long iters) { return loop_amx(iters / kAmxShare); }
#endif

// GFLOPS of `loop` run at once on every pool thread, best of three; `flops` per thread.
template <typename Loop>
double measure(Loop loop, double flops) {
  const int threads = thread_pool_size();
  double best = 0;
  for (int r = 0; r < 3; r++) {
    volatile float sink = 0;
    const auto a = std::chrono::steady_clock::now();
    thread_pool_run(threads, [&](int) { sink = sink + loop(kIters); });
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count();
    best = std::max(best, flops * threads / s / 1e9);
  }
  return best;
}

}  // namespace

std::vector<CpuPeak> cpu_peaks() {
  std::vector<CpuPeak> out;
#if HEADLAB_PEAK_X86
  const CpuFeatures f = cpu_features();
  if (f.avx2 && f.fma) out.push_back({"f32-avx2", measure(loop_avx2, double(kIters) * 12 * 8 * 2)});
  if (f.avx512f) out.push_back({"f32-avx512", measure(loop_avx512, double(kIters) * 16 * 16 * 2)});
  if (f.avx512f && f.avx512_bf16) out.push_back({"bf16-avx512", measure(loop_bf16, double(kIters) * 16 * 16 * 4)});
  // the AMX kernel's, where matmul_packed runs it (the CPU has AMX-BF16 and Linux granted it)
  if (matmul_packed_kernel() == PackedKernel::amx) out.push_back({"bf16-amx", measure(loop_amx_share, double(kIters / kAmxShare) * kAmxFlops)});
#endif
  return out;
}

double cpu_bf16_speedup() {
#if HEADLAB_PEAK_X86
  const CpuFeatures f = cpu_features();
  if (!f.avx512f || !f.avx512_bf16) return 0.0;
  // the shortest of three runs of each (the least disturbed), alternating; 1-4 ms a loop. The
  // bf16 loop is the one the packed kernel runs: AMX's tiles where it has them.
  constexpr long kQuickIters = 1L << 19;
  const bool amx = matmul_packed_kernel() == PackedKernel::amx;
  double f32 = 1e30, bf16 = 1e30;
  volatile float sink = 0;
  for (int r = 0; r < 3; r++) {
    auto time = [&](float (*loop)(long)) {
      const auto a = std::chrono::steady_clock::now();
      sink = sink + loop(kQuickIters);
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count();
    };
    f32 = std::min(f32, time(loop_avx512));
    bf16 = std::min(bf16, time(amx ? loop_amx_share : loop_bf16));
  }
  // flops per iteration: f32 16 chains x 16 lanes x 2, bf16 16 x 16 x 4; AMX kAmxFlops per tile
  // product, kQuickIters / kAmxShare of them
  const double bf16_flops = amx ? double(kQuickIters / kAmxShare) * kAmxFlops : double(kQuickIters) * 16 * 16 * 4;
  return (bf16_flops / bf16) / (double(kQuickIters) * 16 * 16 * 2 / f32);
#else
  return 0.0;
#endif
}

}  // namespace headlab::model
