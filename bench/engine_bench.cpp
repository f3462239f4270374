// bench/engine_bench.cpp — times headlab's forward (batch 1) on any model it loads, the figure
// bench/run_engine_bench.sh (GPT-2 small) and bench/run_family_bench.sh (Qwen2.5-0.5B's shape)
// set next to PyTorch's and llama.cpp's. One length per process, so the peak memory printed is
// that length's. Logits are computed for every position (the forward has no last-only mode).
//
//   headlab_engine_bench --make-model DIR [--file-dtype f32|bf16|f16]   random GPT-2-small weights, HF layout
//   headlab_engine_bench --model DIR --tokens 256 --repeats 5              every pattern recorded
//   headlab_engine_bench --model DIR --tokens 256 --repeats 5 --plain      logits only, no record
//       [--dtype auto|f32|bf16|f16]  headlab's --dtype (the matrices' type in memory)
//       [--compute f32|bf16|q8]      headlab's --compute (bf16: the products with bf16 matrices
//                                    round their inputs, AVX512_BF16 dot products where present;
//                                    q8: a GGUF's blocks times inputs rounded to 8 bits)
//       [--rows]                     float32 rows through sgemm, as before the packed matrices (A/B runs)
//       [--calls N]                  N forwards a timed round; prints only the best round's time per
//                                    forward (best_us, best_cpu_us): a small model's calling floor
//   headlab_engine_bench --kernels                   the kernels it would use, and why
// prints: tokens=256 median_ms=... min_ms=... cpu_ms=... peak_rss_mb=... load_rss_mb=...
//         weights_mb=... bytes_per_weight=... load_ms=... argmax_last=... logit_sum_last=...
//         dtype=... compute=... kernels=... blas=...
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "bench_clock.h"
#include "formats/model_files.h"
#include "model/blas.h"
#include "formats/hf/checkpoint.h"
#include "model/forward.h"
#include "model/ops/matmul_packed.h"

using namespace headlab::model;

namespace {

int usage() {
  std::fprintf(stderr,
               "usage: headlab_engine_bench --make-model DIR [--seed N] [--file-dtype f32|bf16|f16]\n"
               "       headlab_engine_bench --model DIR|FILE.gguf --tokens T [--repeats N] [--plain]\n"
               "                            [--dtype auto|f32|bf16|f16] [--compute f32|bf16|q8] [--rows]\n"
               "                            [--dump-last FILE]   (the last position's logits, float32)\n"
               "                            [--calls N]   (N forwards a round: best µs per forward)\n"
               "       headlab_engine_bench --blas      (the OpenBLAS kernels it would use)\n"
               "       headlab_engine_bench --kernels   (every kernel choice, one line)\n");
  return 2;
}

// The CPU features the kernels are chosen by, and which of headlab's kernels run (the packed
// products' kernel, chosen by cpuid; OpenBLAS's for the rest). One line, key=value, for the
// scripts' table.
std::string kernels_line() {
  const CpuFeatures f = cpu_features();
  std::string cpu;
  for (auto [name, has] : {std::pair{"avx2", f.avx2}, {"fma", f.fma}, {"avx512f", f.avx512f}, {"avx512bw", f.avx512bw},
                           {"avx512_bf16", f.avx512_bf16}})
    if (has) cpu += (cpu.empty() ? "" : ",") + std::string(name);
  return "cpu=" + (cpu.empty() ? std::string("none") : cpu) +
         " kernels=packed-" + std::string(matmul_packed_kernel_name(matmul_packed_kernel())) + " blas=" + blas_core_name();
}

}  // namespace

int main(int argc, char** argv) {
  blas_use_cpu_kernels(argv);  // OpenBLAS's kernels by the CPU's features, as `headlab` chooses them
  std::string make_dir, model_dir, dump_last, dtype = "auto", compute = "f32", file_dtype = "f32";
  int tokens = 0, repeats = 5, calls = 1;
  bool plain = false, rows = false;
  unsigned seed = 1;
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--make-model") make_dir = next();
    else if (a == "--model") model_dir = next();
    else if (a == "--tokens") tokens = std::atoi(next().c_str());
    else if (a == "--repeats") repeats = std::atoi(next().c_str());
    else if (a == "--calls") calls = std::atoi(next().c_str());
    else if (a == "--seed") seed = static_cast<unsigned>(std::atoi(next().c_str()));
    else if (a == "--plain") plain = true;
    else if (a == "--dtype") dtype = next();
    else if (a == "--compute") compute = next();
    else if (a == "--file-dtype") file_dtype = next();
    else if (a == "--rows") rows = true;
    else if (a == "--dump-last") dump_last = next();
    else if (a == "--blas") {  // the kernels in use: the scripts give PyTorch the same
      std::printf("%s\n%s\n%s\n", blas_core_name(), blas_kernels_description().c_str(),
                  matmul_packed_kernels_description().c_str());
      return 0;
    } else if (a == "--kernels") {
      std::printf("%s\n", kernels_line().c_str());
      return 0;
    } else return usage();
  }
  if (!make_dir.empty()) {
    Parameters p = parameters_allocate(config_gpt2_small());
    parameters_init_random(p, seed);
    const Dtype d = file_dtype == "bf16" ? Dtype::BF16 : file_dtype == "f16" ? Dtype::F16 : Dtype::F32;
    if (auto s = checkpoint_save(make_dir, p, d); !s) {
      std::fprintf(stderr, "headlab_engine_bench: %s\n", s.error().message.c_str());
      return 1;
    }
    return 0;
  }
  if (model_dir.empty() || tokens <= 0 || repeats <= 0 || calls <= 0) return usage();
  auto choice = dtype_choice_parse(dtype);
  if (!choice) {
    std::fprintf(stderr, "headlab_engine_bench: %s\n", choice.error().message.c_str());
    return 2;
  }
  auto compute_choice = compute_choice_parse(compute);
  if (!compute_choice) {
    std::fprintf(stderr, "headlab_engine_bench: %s\n", compute_choice.error().message.c_str());
    return 2;
  }
  const double rss_before = bench_rss_mb(), load_t0 = bench_wall_ms();
  auto params = model_load(model_dir, {.dtype = *choice, .compute = *compute_choice, .rows = rows});
  const double load_ms = bench_wall_ms() - load_t0;
  if (!params) {
    std::fprintf(stderr, "headlab_engine_bench: %s\n", params.error().message.c_str());
    return 1;
  }
  // What the loaded weights hold, measured by the OS (and the engine's own count, engine_mb):
  // MB, and bytes per weight.
  const double weights_mb = bench_rss_mb() - rss_before;
  const double load_peak_mb = bench_peak_rss_mb();
  const double n_weights = double(parameters_count(params->config));
  std::vector<int> ids(tokens);
  for (int t = 0; t < tokens; t++) ids[t] = bench_token_id(t, params->config.vocab_size);
  ForwardOptions opt;
  opt.record.pattern = !plain;
  ForwardOutput out;
  Workspace ws;
  std::vector<double> ms, cpu_ms;
  for (int r = 0; r < repeats + 1; r++) {  // the first run warms up and is not counted
    const double c0 = bench_cpu_ms(), t0 = bench_wall_ms();
    for (int c = 0; c < calls; c++)
      if (auto s = forward(*params, ids, opt, out, ws); !s) {
        std::fprintf(stderr, "headlab_engine_bench: %s\n", s.error().message.c_str());
        return 1;
      }
    if (r > 0) ms.push_back((bench_wall_ms() - t0) / calls);
    if (r > 0) cpu_ms.push_back((bench_cpu_ms() - c0) / calls);
  }
  const float* last = out.logits.data() + std::size_t(tokens - 1) * out.V;
  double sum = 0;
  for (int v = 0; v < out.V; v++) sum += last[v];
  if (!dump_last.empty() && bench_write_floats(dump_last.c_str(), last, out.V) != 0) {
    std::fprintf(stderr, "headlab_engine_bench: cannot write %s\n", dump_last.c_str());
    return 1;
  }
  const double median = bench_median(ms.data(), int(ms.size()));
  if (calls > 1) {  // a small model's time per call: best of the rounds, in µs
    std::printf("tokens=%d calls=%d best_us=%.1f best_cpu_us=%.1f\n", tokens, calls,
                1e3 * *std::min_element(ms.begin(), ms.end()), 1e3 * *std::min_element(cpu_ms.begin(), cpu_ms.end()));
    return 0;
  }
  const int qkvw = parameters_index(&ParameterTensors::qkvw);
  std::printf("tokens=%d median_ms=%.1f min_ms=%.1f cpu_ms=%.1f peak_rss_mb=%.0f load_rss_mb=%.0f weights_mb=%.0f "
              "bytes_per_weight=%.2f engine_mb=%.0f dtype=%s compute=%s load_ms=%.0f argmax_last=%d logit_sum_last=%.4f mode=%s %s\n",
              tokens, median, ms[0], bench_median(cpu_ms.data(), int(cpu_ms.size())), bench_peak_rss_mb(),
              load_peak_mb, weights_mb, weights_mb * 1048576.0 / n_weights, double(parameters_bytes(*params)) / 1048576.0,
              rows ? "f32-rows" : std::string(weight_type_name(parameters_matrix_type(*params, qkvw))).c_str(),
              parameters_quantizes_inputs(*params) ? "q8" : parameters_rounds_inputs(*params) ? "bf16" : "f32", load_ms,
              bench_argmax(last, out.V), sum,
              plain ? "plain" : "patterns", kernels_line().c_str());
  return 0;
}
