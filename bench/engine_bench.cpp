// bench/engine_bench.cpp — times headlab's forward on a GPT-2-family model with every
// head's pattern recorded (batch 1), the figure bench/run_engine_bench.sh sets next to
// PyTorch's. One length per process, so the peak memory printed is that length's.
//
//   headlab_engine_bench --make-model DIR [--file-dtype f32|bf16|f16]   random GPT-2-small weights, HF layout
//   headlab_engine_bench --model DIR --tokens 256 --repeats 5 [--dtype auto|f32|bf16|f16] [--rows] [--plain]
// prints: tokens=256 median_ms=... min_ms=... peak_rss_mb=... argmax_last=... logit_sum_last=...
//         weights_mb=... dtype=... blas=... kernels=...
// --dtype is headlab's --dtype (the matrices' type in memory); --rows keeps float32 rows and
// multiplies through sgemm, as before the packed matrices (for A/B runs); --plain records nothing
// (the logits of every position only), as llama.cpp's forward.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <ctime>
#include <vector>

#include "model/blas.h"
#include "model/checkpoint.h"
#include "model/forward.h"
#include "model/ops/matmul_packed.h"

using namespace headlab::model;

namespace {

long peak_rss_kb() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
  return -1;
}

int usage() {
  std::fprintf(stderr,
               "usage: headlab_engine_bench --make-model DIR [--seed N] [--file-dtype f32|bf16|f16]\n"
               "       headlab_engine_bench --model DIR --tokens T [--repeats N] [--dtype auto|f32|bf16|f16] [--rows] [--plain]\n"
               "       headlab_engine_bench --blas     (the OpenBLAS kernels it would use)\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  blas_use_cpu_kernels(argv);  // OpenBLAS's kernels by the CPU's features, as `headlab` chooses them
  std::string make_dir, model_dir, dtype = "auto", file_dtype = "f32";
  bool rows = false, plain = false;
  int tokens = 0, repeats = 5;
  unsigned seed = 1;
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--make-model") make_dir = next();
    else if (a == "--model") model_dir = next();
    else if (a == "--tokens") tokens = std::atoi(next().c_str());
    else if (a == "--repeats") repeats = std::atoi(next().c_str());
    else if (a == "--seed") seed = static_cast<unsigned>(std::atoi(next().c_str()));
    else if (a == "--dtype") dtype = next();
    else if (a == "--file-dtype") file_dtype = next();
    else if (a == "--rows") rows = true;
    else if (a == "--plain") plain = true;
    else if (a == "--blas") {  // the kernels in use: run_engine_bench.sh gives PyTorch the same
      std::printf("%s\n%s\n%s\n", blas_core_name(), blas_kernels_description().c_str(),
                  matmul_packed_kernels_description().c_str());
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
  if (model_dir.empty() || tokens <= 0 || repeats <= 0) return usage();
  auto choice = dtype_choice_parse(dtype);
  if (!choice) {
    std::fprintf(stderr, "headlab_engine_bench: %s\n", choice.error().message.c_str());
    return 2;
  }
  auto params = checkpoint_load(model_dir, {.dtype = *choice, .rows = rows});
  if (!params) {
    std::fprintf(stderr, "headlab_engine_bench: %s\n", params.error().message.c_str());
    return 1;
  }
  // the same ids as the PyTorch peer: 0, 1, ... spread over the vocabulary
  std::vector<int> ids(tokens);
  for (int t = 0; t < tokens; t++) ids[t] = int((std::uint64_t(t) * 7919 + 13) % params->config.vocab_size);
  ForwardOptions opt;
  opt.record.pattern = !plain;
  ForwardOutput out;
  Workspace ws;
  std::vector<double> ms, cpu_ms;
  auto cpu_now = [] {
    timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
  };
  for (int r = 0; r < repeats + 1; r++) {  // the first run warms up and is not counted
    const double c0 = cpu_now();
    auto t0 = std::chrono::steady_clock::now();
    if (auto s = forward(*params, ids, opt, out, ws); !s) {
      std::fprintf(stderr, "headlab_engine_bench: %s\n", s.error().message.c_str());
      return 1;
    }
    auto t1 = std::chrono::steady_clock::now();
    if (r > 0) ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    if (r > 0) cpu_ms.push_back(cpu_now() - c0);
  }
  std::sort(ms.begin(), ms.end());
  std::sort(cpu_ms.begin(), cpu_ms.end());
  const float* last = out.logits.data() + std::size_t(tokens - 1) * out.V;
  double sum = 0;
  for (int v = 0; v < out.V; v++) sum += last[v];
  // cpu_ms (all threads' CPU time) tells the work apart from waiting on a busy machine
  const int qkvw = parameters_index(&ParameterTensors::qkvw);
  std::printf("tokens=%d median_ms=%.1f min_ms=%.1f cpu_ms=%.1f peak_rss_mb=%.0f argmax_last=%d logit_sum_last=%.4f "
              "weights_mb=%.0f dtype=%s blas=%s kernels=%s\n",
              tokens, ms[ms.size() / 2], ms[0], cpu_ms[cpu_ms.size() / 2], peak_rss_kb() / 1024.0,
              top_k(last, out.V, 1)[0], sum, double(parameters_bytes(*params)) / (1 << 20),
              rows ? "f32-rows" : std::string(weight_type_name(parameters_matrix_type(*params, qkvw))).c_str(),
              blas_core_name(), rows ? "sgemm" : std::string(matmul_packed_kernel_name(matmul_packed_kernel())).c_str());
  return 0;
}
