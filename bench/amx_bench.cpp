// bench/amx_bench.cpp — issue 25: where `--compute bf16`'s AMX tile products stand on this CPU,
// against the ceilings the machine measures, and (bench/run_amx_bench.sh) against PyTorch's bf16
// matmul, which is oneDNN's AMX kernel on such a CPU.
//
//   headlab_amx_bench [--rows 1280] [--repeats 5]
//   headlab_amx_bench --blas          (the OpenBLAS kernels in use, for bench_torch_setup)
//
// First the ceilings, every pool thread at once (src/model/cpu_peak.h is the first):
//   ceiling=registers  the tile loop with its operands in tile registers: the class benchmark's
//                      FLOP bound (cpu_peak.h's bf16-amx)
//   ceiling=l1         the same loop, each tdpbf16ps's operand tiles reloaded from 8 KB a thread
//   ceiling=l2         ... reloaded from 1 MB a thread read in order (4 KB a step of four products)
//   ceiling=memory     ... from 256 MB a thread read in order (each byte once a pass)
// each line with of_peak, its fraction of the first. A product whose weights do not fit in L2
// (every matrix of a 1 B model) has its tiles fed from L2 at best, from memory at first reading.
// Then headlab's packed product with bf16 weights and bf16 inputs (matmul_forward_packed on the
// amx kernel) for each matrix of Llama-3.2-1B at --rows rows (1,280: the class burst's 40 texts
// of 32 tokens), the unembedding as the server runs it (matmul_forward_packed_groups, one group
// per 32-row text): matrix=NAME rows= k= n= ms= (the best of --repeats) gflops= of_peak=.
// Random weights in N(0, 0.02), inputs in N(0, 1).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "model/blas.h"
#include "model/cpu_peak.h"
#include "model/ops/amx_tiles.h"
#include "model/ops/matmul_packed.h"
#include "model/packed_weights.h"
#include "model/thread_pool.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define HEADLAB_AMX_BENCH 1
#else
#define HEADLAB_AMX_BENCH 0
#endif

using namespace headlab::model;

namespace {

constexpr double kTileFlops = 16.0 * 16 * 32 * 2;  // a tdpbf16ps: 16 x 16 outputs, 32 products each

#if HEADLAB_AMX_BENCH
// `steps` steps of four tile products into four accumulators (the packed kernel's 32 x 32 block),
// each step's four operand tiles (two inputs, two weights: 4 KB) loaded from buf at the next 4 KB,
// wrapping at `bytes`. Returns a sum so the loop is kept.
__attribute__((target("amx-tile,amx-bf16"))) float fed_loop(const unsigned char* buf, std::size_t bytes, long steps) {
  amx_configure_tiles();
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  std::size_t at = 0;
  for (long i = 0; i < steps; i++) {
    const unsigned char* p = buf + at;
    _tile_loadd(4, p, 64);
    _tile_loadd(6, p + 1024, 64);
    _tile_dpbf16ps(0, 4, 6);
    _tile_loadd(7, p + 2048, 64);
    _tile_dpbf16ps(1, 4, 7);
    _tile_loadd(5, p + 3072, 64);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
    at += 4096;
    if (at + 4096 > bytes) at = 0;
  }
  alignas(64) float out[16 * 16];
  _tile_stored(0, out, 64);
  _tile_release();
  return out[0];
}

// GFLOPS of fed_loop on every pool thread at once over a buffer of `bytes` each (small bf16
// values: the sums stay finite), best of three after a warm-up pass.
double fed_ceiling(std::size_t bytes, long steps) {
  const int threads = thread_pool_size();
  std::vector<std::vector<std::uint16_t>> bufs(static_cast<std::size_t>(threads));
  thread_pool_run(threads, [&](int t) {  // each thread writes its own (its pages near it)
    bufs[std::size_t(t)].assign(bytes / 2 + 32, 0x3c00);  // bf16 0.0078
  });
  auto aligned = [&](int t) {
    auto a = reinterpret_cast<std::uintptr_t>(bufs[std::size_t(t)].data());
    return reinterpret_cast<const unsigned char*>((a + 63) / 64 * 64);
  };
  volatile float sink = 0;
  thread_pool_run(threads, [&](int t) { sink = sink + fed_loop(aligned(t), bytes, long(bytes / 4096)); });
  double best = 0;
  for (int r = 0; r < 3; r++) {
    const auto a = std::chrono::steady_clock::now();
    thread_pool_run(threads, [&](int t) { sink = sink + fed_loop(aligned(t), bytes, steps); });
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count();
    best = std::max(best, double(steps) * 4 * kTileFlops * threads / s / 1e9);
  }
  return best;
}
#endif

}  // namespace

int main(int argc, char** argv) {
  int rows = 1280, repeats = 5;
  for (int i = 1; i < argc; i++) {
    if (std::strcmp(argv[i], "--blas") == 0) {
      std::printf("%s\n%s\n", blas_core_name(), blas_kernels_description().c_str());
      return 0;
    }
    if (i + 1 < argc && std::strcmp(argv[i], "--rows") == 0) rows = std::atoi(argv[++i]);
    else if (i + 1 < argc && std::strcmp(argv[i], "--repeats") == 0) repeats = std::atoi(argv[++i]);
    else rows = -1;
  }
  if (rows < 32 || rows % 32 != 0 || repeats < 1) {
    std::fprintf(stderr, "usage: headlab_amx_bench [--rows N] [--repeats R]   (N a multiple of 32, >= 32: texts of 32 tokens; R >= 1)\n"
                         "       headlab_amx_bench --blas\n");
    return 2;
  }
  if (matmul_packed_kernel() != PackedKernel::amx) {
    std::printf("note: this CPU has no AMX-BF16 (or Linux did not grant its tiles): kernel=%s, nothing to measure\n",
                std::string(matmul_packed_kernel_name(matmul_packed_kernel())).c_str());
    return 0;
  }
  double peak = 0;
  for (const CpuPeak& p : cpu_peaks())
    if (std::string(p.name) == "bf16-amx") peak = p.gflops;
  std::printf("ceiling=registers gflops=%.0f of_peak=1.00 threads=%d\n", peak, thread_pool_size());
#if HEADLAB_AMX_BENCH
  const struct {
    const char* name;
    std::size_t bytes;
    long steps;
  } feeds[] = {{"l1", 8u << 10, 1L << 18}, {"l2", 1u << 20, 1L << 18}, {"memory", 256u << 20, 1L << 16}};
  for (const auto& f : feeds) {
    const double g = fed_ceiling(f.bytes, f.steps);
    std::printf("ceiling=%s buffer_kb=%zu gflops=%.0f of_peak=%.2f\n", f.name, f.bytes >> 10, g, g / peak);
  }
#endif

  // Llama-3.2-1B's matrices: (name, k = inputs, n = outputs)
  const struct {
    const char* name;
    int k, n;
  } mats[] = {{"qkv", 2048, 2048 + 2 * 512}, {"o", 2048, 2048}, {"gate_up", 2048, 2 * 8192}, {"down", 8192, 2048}, {"unembed", 2048, 128256}};
  std::mt19937 rng(1);
  std::normal_distribution<float> wdist(0.0f, 0.02f), xdist(0.0f, 1.0f);
  std::vector<float> x(std::size_t(rows) * 8192), y(std::size_t(rows) * 128256);
  for (float& v : x) v = xdist(rng);
  std::fill(y.begin(), y.end(), 0.0f);  // the pages touched before the clock
  double total_flop = 0, total_s = 0;
  for (const auto& m : mats) {
    std::vector<float> w(std::size_t(m.n) * m.k);
    for (float& v : w) v = wdist(rng);
    OwnedPackedMatrix packed = packed_matrix_from_rows(WeightType::bf16, w.data(), m.n, m.k);
    PackedMatrix view = packed.m;
    view.bf16_inputs = true;
    const bool grouped = std::string(m.name) == "unembed";
    std::vector<PackedGroup> groups;
    for (int g = 0; g < rows / 32; g++)
      groups.push_back({y.data() + std::size_t(g) * 32 * m.n, m.n, x.data() + std::size_t(g) * 32 * m.k, m.k, 32});
    double best = 1e30;
    for (int r = 0; r <= repeats; r++) {  // round 0 warms up
      const auto a = std::chrono::steady_clock::now();
      if (grouped) matmul_forward_packed_groups(groups, view);
      else matmul_forward_packed(y.data(), x.data(), view, nullptr, rows);
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count();
      if (r > 0) best = std::min(best, s);
    }
    const double flop = 2.0 * rows * m.k * m.n;
    total_flop += flop * (grouped ? 1 : 16), total_s += best * (grouped ? 1 : 16);
    std::printf("matrix=%s rows=%d k=%d n=%d ms=%.2f gflops=%.0f of_peak=%.2f%s\n", m.name, rows, m.k, m.n, best * 1e3,
                flop / best / 1e9, flop / best / 1e9 / peak, grouped ? " groups_of=32" : "");
  }
  std::printf("matrix=forward rows=%d ms=%.1f gflops=%.0f of_peak=%.2f (16 layers and the unembedding)\n", rows, total_s * 1e3,
              total_flop / total_s / 1e9, total_flop / total_s / 1e9 / peak);
  return 0;
}
