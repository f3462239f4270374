// bench/matmul_bench.cpp — the linear layers of one forward (every layer's c_attn, attn
// c_proj, mlp c_fc and mlp c_proj, then the unembedding) at a given number of rows, through
// matmul_forward (sgemm on float32 rows, as the trainer runs them) and through the packed
// matrices (matmul_forward_packed) in f32, bf16 and f16, and the bf16 matrices once more with
// their inputs rounded to bfloat16 (--compute bf16: path=bf16-inputs, AVX512_BF16 dot products
// under the avx512bf16 kernel), and as GGUF's blocks, Q8_0, Q4_K and Q6_K unless --quant names
// others (random quants and scales; a 256-weight type only where every C is a multiple of its
// blocks: --shape gpt2), all taking turns on the same inputs.
// Random weights, so nothing finds them in cache. The figures behind the packed path's
// choices (ops/matmul_packed.h).
//
//   headlab_matmul_bench --rows 64 [--repeats 9] [--shape gpt2|qwen|llama-1b] [--layers L] [--kernel avx512bf16|avx512|avx2|portable]
//                        [--quant q8_0,q4_k,q6_k]   (any of q4_0 q4_1 q5_0 q5_1 q8_0 q2_k q3_k q4_k q5_k q6_k, or none)
//                        [--compute q8]   (each --quant type once more with its inputs rounded to 8 bits:
//                                          path=q4_k-q8, ops/matmul_quant_q8.h's integer kernels)
// prints the machine's peaks first (src/model/cpu_peak.h: register-only loops on every thread, one line
// each: peak=f32-avx512 gflops=...), then one line per path: rows=64 path=bf16 ms=... gflops=...
// of_peak=... ratio_to_sgemm=... max_abs_diff=... (of_peak: against the widest float32 loop, and the
// bf16 dot-product loop for bf16-inputs under avx512bf16, the AMX tile loop under amx).
// --shape qwen: Qwen2.5-0.5B's 24 layers (C 896, 14 + 2 x 2 KV heads of 64, SwiGLU F 4864,
// V 151,936), 1 GB of bf16 weights per path; gpt2 (default): GPT-2 small's 12 layers, V 50,257;
// llama-1b: Llama-3.2-1B's layers (C 2,048, 32 + 2 x 8 KV heads of 64, SwiGLU F 8,192, V 128,256:
// the class benchmark's model), 2 of its 16 unless --layers says (each path holds every matrix in
// f32, bf16 and f16: all 16 would be 15 GB); --layers 0 is the unembedding alone.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "model/cpu_peak.h"
#include "model/blas.h"
#include "model/ops/matmul.h"
#include "model/ops/matmul_packed.h"
#include "model/ops/matmul_quant_q8.h"
#include "model/packed_weights.h"
#include "model/quant_blocks.h"
#include "model/thread_pool.h"

using namespace headlab::model;

int main(int argc, char** argv) {
  blas_use_cpu_kernels(argv);  // OpenBLAS's kernels by the CPU's features, as `headlab` chooses them
  int rows = 64, repeats = 9, n_layers = -1;  // -1: the shape's own
  std::string shape = "gpt2";
  PackedKernel kernel = matmul_packed_kernel();
  std::vector<WeightType> quant = {WeightType::q8_0, WeightType::q4_k, WeightType::q6_k};
  bool quant_ok = true, q8 = false;
  // --peak: only the machine's measured peaks (bench/run_class_bench.sh's FLOP bound)
  if (argc == 2 && std::strcmp(argv[1], "--peak") == 0) {
    for (const headlab::model::CpuPeak& p : headlab::model::cpu_peaks())
      std::printf("peak=%s gflops=%.0f threads=%d\n", p.name, p.gflops, thread_pool_size());
    return 0;
  }
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--rows") == 0) rows = std::atoi(argv[i + 1]);
    else if (std::strcmp(argv[i], "--repeats") == 0) repeats = std::atoi(argv[i + 1]);
    else if (std::strcmp(argv[i], "--shape") == 0) shape = argv[i + 1];
    else if (std::strcmp(argv[i], "--layers") == 0) n_layers = std::atoi(argv[i + 1]);
    else if (std::strcmp(argv[i], "--kernel") == 0) {
      for (PackedKernel k : {PackedKernel::portable, PackedKernel::avx2, PackedKernel::avx512, PackedKernel::avx512bf16, PackedKernel::amx})
        if (matmul_packed_kernel_name(k) == argv[i + 1]) kernel = k;
    } else if (std::strcmp(argv[i], "--compute") == 0) {
      q8 = std::strcmp(argv[i + 1], "q8") == 0;
      quant_ok = quant_ok && (q8 || std::strcmp(argv[i + 1], "f32") == 0);
    } else if (std::strcmp(argv[i], "--quant") == 0) {
      quant.clear();
      std::string list = std::string(argv[i + 1]) + ",";
      for (std::size_t at = 0, comma; (comma = list.find(',', at)) != std::string::npos; at = comma + 1) {
        const std::string name = list.substr(at, comma - at);
        bool found = name == "none";  // --quant none: no block types (only sgemm and the 16-bit paths)
        for (WeightType t : {WeightType::q4_0, WeightType::q4_1, WeightType::q5_0, WeightType::q5_1, WeightType::q8_0,
                             WeightType::q2_k, WeightType::q3_k, WeightType::q4_k, WeightType::q5_k, WeightType::q6_k}) {
          std::string lower(weight_type_name(t));
          for (char& c : lower) c = char(std::tolower(static_cast<unsigned char>(c)));
          if (lower == name) quant.push_back(t), found = true;
        }
        quant_ok = quant_ok && found;
      }
    }
  }
  if (!quant_ok || rows < 1 || repeats < 1 || (shape != "gpt2" && shape != "qwen" && shape != "llama-1b") || !matmul_packed_kernel_supported(kernel)) {
    std::fprintf(stderr, "usage: headlab_matmul_bench --rows N [--repeats R] [--shape gpt2|qwen|llama-1b] [--layers L] "
                         "[--kernel avx512bf16|avx512|avx2|portable] [--quant q8_0,q4_k,q6_k] [--compute q8]   (N, R >= 1; a kernel this CPU runs;\n"
                         "       --quant: block types among q4_0 q4_1 q5_0 q5_1 q8_0 q2_k q3_k q4_k q5_k q6_k, or none)\n"
                         "       headlab_matmul_bench --peak   (only the machine's measured peaks)\n");
    return 2;
  }
  struct Layer {
    int C, OC;
    std::vector<float> w, b;
    OwnedPackedMatrix packed[3];
    std::vector<OwnedPackedMatrix> blocks;  // one per --quant type (rows = 0 when C is not whole blocks)
  };
  // random blocks: random bytes, the half scales (quant_scale_offsets: d, and dmin or m) set
  // to 0.01 so every weight is finite and small
  auto random_blocks = [](WeightType t, int rows, int C, std::mt19937& g) {
    std::vector<unsigned char> b(std::size_t(rows) * quant_row_bytes(t, C));
    for (unsigned char& c : b) c = static_cast<unsigned char>(g());
    const std::uint16_t h = f32_to_f16(0.01f);
    const QuantScaleOffsets o = quant_scale_offsets(t);
    for (std::size_t k = 0; k < b.size(); k += std::size_t(quant_block_bytes(t)))
      for (int a : {o.d, o.min})
        if (a >= 0) b[k + std::size_t(a)] = h & 0xff, b[k + std::size_t(a) + 1] = h >> 8;
    return b;
  };
  const WeightType types[3] = {WeightType::f32, WeightType::bf16, WeightType::f16};
  std::vector<Layer> layers;
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-0.1f, 0.1f);
  auto add = [&](int C, int OC, bool bias) {
    Layer l{C, OC, std::vector<float>(std::size_t(OC) * C), std::vector<float>(bias ? OC : 0), {}, {}};
    for (float& x : l.w) x = u(rng);
    for (float& x : l.b) x = u(rng);
    for (int t = 0; t < 3; t++) l.packed[t] = packed_matrix_from_rows(types[t], l.w.data(), OC, C);
    l.blocks.resize(quant.size());
    for (std::size_t q = 0; q < quant.size(); q++) {
      const WeightType t = quant[q];
      if (C % quant_block_elements(t) != 0) continue;
      const RowBand band{t, OC};
      l.blocks[q] = packed_matrix_from_blocks({&band, 1}, C, random_blocks(t, OC, C, rng).data());
    }
    layers.push_back(std::move(l));
  };
  int C = 768, V = 50257, widest = 4 * 768;
  if (shape == "gpt2") {
    for (int l = 0; l < (n_layers >= 0 ? n_layers : 12); l++) add(C, 3 * C, true), add(C, C, true), add(C, 4 * C, true), add(4 * C, C, true);
  } else if (shape == "llama-1b") {
    C = 2048, V = 128256, widest = 2 * 8192;
    for (int l = 0; l < (n_layers >= 0 ? n_layers : 2); l++) add(C, 2048 + 2 * 512, false), add(2048, C, false), add(C, 2 * 8192, false), add(8192, C, false);
  } else {
    C = 896, V = 151936, widest = 2 * 4864;
    for (int l = 0; l < 24; l++) add(C, 896 + 2 * 128, true), add(896, C, false), add(C, 2 * 4864, false), add(4864, C, false);
  }
  add(C, V, false);
  std::vector<float> x(std::size_t(rows) * std::max(widest, C)), y0(std::size_t(rows) * V), y(y0.size());
  for (float& v : x) v = u(rng);
  double flop = 0;
  for (const Layer& l : layers) flop += 2.0 * rows * l.C * l.OC;

  double peak_f32 = 0, peak_bf16 = 0, peak_amx = 0;
  for (const headlab::model::CpuPeak& p : headlab::model::cpu_peaks()) {
    std::printf("peak=%s gflops=%.0f threads=%d\n", p.name, p.gflops, thread_pool_size());
    if (std::string(p.name).rfind("f32", 0) == 0) peak_f32 = std::max(peak_f32, p.gflops);
    else if (std::string(p.name) == "bf16-amx") peak_amx = p.gflops;
    else peak_bf16 = p.gflops;
  }

  auto now = [] { return std::chrono::steady_clock::now(); };
  auto ms = [](auto a, auto b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
  auto cpu_now = [] {  // all threads' CPU time: tells the work apart from waiting on a busy machine
    timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
  };
  auto bias_of = [](const Layer& l) { return l.b.empty() ? nullptr : l.b.data(); };
  const int nq = int(quant.size());
  // sgemm, f32, bf16, f16, bf16 with bf16 inputs, then --quant's, then (--compute q8) --quant's on 8-bit inputs
  const int kPaths = 5 + nq * (q8 ? 2 : 1);
  std::vector<std::vector<double>> t(static_cast<std::size_t>(kPaths)), cpu(t.size());
  std::vector<double> diff(t.size(), 0.0);
  std::vector<bool> have(t.size(), true);
  for (const Layer& l : layers)
    for (std::size_t q = 0; q < std::size_t(kPaths - 5); q++)
      have[5 + q] = have[5 + q] && l.blocks[q % quant.size()].m.rows > 0;
  for (int r = 0; r <= repeats; r++) {  // round 0 warms up
    for (int path = 0; path < kPaths; path++) {
      if (!have[path]) continue;
      auto a = now();
      const double c0 = cpu_now();
      for (const Layer& l : layers) {
        if (path == 0) matmul_forward(y0.data(), x.data(), l.w.data(), bias_of(l), rows, l.C, l.OC);
        else if (path >= 5) {
          PackedMatrix m = l.blocks[std::size_t((path - 5) % nq)].m;  // a view; the second round marks its inputs
          m.q8_inputs = path >= 5 + nq;
          matmul_forward_packed_with(kernel, y.data(), l.OC, x.data(), l.C, m, 0, l.C, bias_of(l), rows);
        }
        else {
          PackedMatrix m = l.packed[path == 4 ? 1 : path - 1].m;  // a view; path 4 marks its inputs
          m.bf16_inputs = path == 4;
          matmul_forward_packed_with(kernel, y.data(), l.OC, x.data(), l.C, m, 0, l.C, bias_of(l), rows);
        }
      }
      auto b = now();
      if (r == 0 && path > 0 && path < 5)  // the unembedding's outputs, against sgemm's (blocks: other weights)
        for (std::size_t i = 0; i < std::size_t(rows) * V; i++) diff[path] = std::max(diff[path], double(std::abs(y0[i] - y[i])));
      if (r > 0) t[path].push_back(ms(a, b)), cpu[path].push_back(cpu_now() - c0);
    }
  }
  std::vector<std::string> names = {"sgemm", "f32", "bf16", "f16", "bf16-inputs"};
  for (WeightType q : quant) {
    std::string lower(weight_type_name(q));
    for (char& c : lower) c = char(std::tolower(static_cast<unsigned char>(c)));
    names.push_back(lower);
  }
  for (int q = 0; q < (q8 ? nq : 0); q++) names.push_back(names[std::size_t(5 + q)] + "-q8");
  for (auto& v : t) std::sort(v.begin(), v.end());
  for (auto& v : cpu) std::sort(v.begin(), v.end());
  const double s = t[0][t[0].size() / 2];
  for (int path = 0; path < kPaths; path++) {
    if (!have[path]) continue;
    const double m = t[path][t[path].size() / 2];
    const double peak = path == 4 && kernel == PackedKernel::avx512bf16 ? peak_bf16
                        : path == 4 && kernel == PackedKernel::amx     ? peak_amx
                                                                       : peak_f32;
    std::printf("rows=%d shape=%s path=%s ms=%.1f min_ms=%.1f cpu_ms=%.1f gflops=%.0f of_peak=%.2f ratio_to_sgemm=%.2f "
                "max_abs_diff=%.2g blas=%s kernel=%s\n",
                rows, shape.c_str(), names[std::size_t(path)].c_str(), m, t[path][0], cpu[path][0], flop / m / 1e6,
                peak > 0 ? flop / m / 1e6 / peak : 0.0, m / s, diff[path],
                blas_core_name(),
                path == 0           ? "sgemm"
                : path >= 5 + nq    ? std::string(matmul_q8_kernel_name(matmul_packed_q8_kernel(kernel))).c_str()
                                    : std::string(matmul_packed_kernel_name(kernel)).c_str());
  }
  return 0;
}
