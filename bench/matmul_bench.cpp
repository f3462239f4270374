// bench/matmul_bench.cpp — the linear layers of one GPT-2-small forward (12 layers of
// c_attn, attn.c_proj, mlp.c_fc, mlp.c_proj, then the 50,257-wide unembedding) at a given
// number of rows, through matmul_forward (sgemm) and through the packed weights
// (matmul_forward_packed), the two taking turns on the same inputs. Random weights, 500 MB
// per side, so neither finds them in cache. The figure behind matmul_packed_max_rows().
//
//   headlab_matmul_bench --rows 64 [--repeats 9]
// prints: rows=64 unpacked_ms=... packed_ms=... ratio=... (packed / unpacked, median of each)
// "unpacked" is matmul_forward as the trainer and unpacked models run it: sgemm, or the
// small-row kernel up to matmul_small_max_rows().
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "model/blas.h"
#include "model/ops/matmul.h"
#include "model/ops/matmul_packed.h"

using namespace headlab::model;

int main(int argc, char** argv) {
  blas_use_cpu_kernels(argv);  // OpenBLAS's kernels by the CPU's features, as `headlab` chooses them
  int rows = 64, repeats = 9;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--rows") == 0) rows = std::atoi(argv[i + 1]);
    else if (std::strcmp(argv[i], "--repeats") == 0) repeats = std::atoi(argv[i + 1]);
  }
  if (rows < 1 || repeats < 1) {
    std::fprintf(stderr, "usage: headlab_matmul_bench --rows N [--repeats R]   (N, R >= 1)\n");
    return 2;
  }
  if (!matmul_packed_supported()) {
    std::fprintf(stderr, "this CPU has no AVX-512F (or HEADLAB_PACKED=0): there is no packed kernel to time\n");
    return 1;
  }
  struct Layer { int C, OC; std::vector<float> w, packed, b; };
  std::vector<Layer> layers;
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-0.1f, 0.1f);
  auto add = [&](int C, int OC) {
    Layer l{C, OC, std::vector<float>(std::size_t(OC) * C), std::vector<float>(matmul_packed_size(OC, C)),
            std::vector<float>(OC)};
    for (float& x : l.w) x = u(rng);
    for (float& x : l.b) x = u(rng);
    matmul_pack(l.packed.data(), l.w.data(), OC, C);
    layers.push_back(std::move(l));
  };
  const int C = 768;
  for (int l = 0; l < 12; l++) add(C, 3 * C), add(C, C), add(C, 4 * C), add(4 * C, C);
  add(C, 50257);
  std::vector<float> x(std::size_t(rows) * 4 * C), y1(std::size_t(rows) * 50257), y2(y1.size());
  for (float& v : x) v = u(rng);
  double flop = 0;
  for (const Layer& l : layers) flop += 2.0 * rows * l.C * l.OC;

  auto now = [] { return std::chrono::steady_clock::now(); };
  auto ms = [](auto a, auto b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
  std::vector<double> t_sgemm, t_packed;
  double max_diff = 0;
  for (int r = 0; r <= repeats; r++) {  // round 0 warms up
    auto a = now();
    for (const Layer& l : layers) matmul_forward(y1.data(), x.data(), l.w.data(), l.b.data(), rows, l.C, l.OC);
    auto b = now();
    for (const Layer& l : layers)
      matmul_forward_packed(y2.data(), x.data(), l.packed.data(), l.b.data(), rows, l.C, l.OC);
    auto c = now();
    if (r == 0) {
      for (std::size_t i = 0; i < std::size_t(rows) * 50257; i++)
        max_diff = std::max(max_diff, double(std::abs(y1[i] - y2[i])));
      continue;
    }
    t_sgemm.push_back(ms(a, b));
    t_packed.push_back(ms(b, c));
  }
  std::sort(t_sgemm.begin(), t_sgemm.end());
  std::sort(t_packed.begin(), t_packed.end());
  const double s = t_sgemm[t_sgemm.size() / 2], p = t_packed[t_packed.size() / 2];
  std::printf("rows=%d unpacked_ms=%.1f packed_ms=%.1f ratio=%.2f unpacked_gflops=%.0f packed_gflops=%.0f "
              "max_abs_diff_unembedding=%.2g blas=%s\n",
              rows, s, p, p / s, flop / s / 1e6, flop / p / 1e6, max_diff, blas_core_name());
  return 0;
}
