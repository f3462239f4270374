// bench/cache_bench.cpp — times `headlab cache`'s work (research/cache.h: one forward with the
// selected hooks copied into their batch-first tensors) on any model headlab loads, the figure
// bench/run_cache_bench.sh sets next to PyTorch's forward with hooks saving the same tensors
// (TransformerLens's run_with_cache). One length per process, so the peak memory is its own.
// The model loads as `headlab cache` loads it by default: from its weights cache beside the model
// (written when missing; formats/weights_cache.h), mapped, so a page of the weights is in memory
// only once a product reads it; --no-cache reads and packs the safetensors into the process's
// own memory. peak_rss_mb is the peak up to the end of the cache runs; the plain forward (logits
// only, for scale; its unembedding reads every row of the embedding) runs after it is read.
//
//   headlab_cache_bench --model DIR --tokens 128 [--repeats 5] [--hooks '*'] [--no-cache]
// prints: tokens=128 median_ms=... min_ms=... cpu_ms=... plain_ms=... peak_rss_mb=... load_rss_mb=...
//         cache_mb=... tensors=... check_sum=... (the sum of the last layer's hook_resid_post)
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench_clock.h"
#include "formats/model_files.h"
#include "model/blas.h"
#include "model/forward.h"
#include "research/cache.h"
#include "research/hook_select.h"

using namespace headlab;

int main(int argc, char** argv) {
  model::blas_use_cpu_kernels(argv);
  std::string model_dir, hooks = "*";
  int tokens = 0, repeats = 5;
  bool weights_cache = true;
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--model") model_dir = next();
    else if (a == "--tokens") tokens = std::atoi(next().c_str());
    else if (a == "--repeats") repeats = std::atoi(next().c_str());
    else if (a == "--hooks") hooks = next();
    else if (a == "--no-cache") weights_cache = false;
    else {
      std::fprintf(stderr, "usage: headlab_cache_bench --model DIR --tokens T [--repeats N] [--hooks GLOBS] [--no-cache]\n");
      return 2;
    }
  }
  if (model_dir.empty() || tokens <= 0 || repeats <= 0) {
    std::fprintf(stderr, "usage: headlab_cache_bench --model DIR --tokens T [--repeats N] [--hooks GLOBS] [--no-cache]\n");
    return 2;
  }
  auto params = model::model_load(model_dir, {.cache = weights_cache});
  if (!params) {
    std::fprintf(stderr, "headlab_cache_bench: %s\n", params.error().message.c_str());
    return 1;
  }
  const double load_peak_mb = bench_peak_rss_mb();
  auto sel = research::hook_select(params->config, hooks);
  if (!sel) {
    std::fprintf(stderr, "headlab_cache_bench: %s\n", sel.error().message.c_str());
    return 2;
  }
  std::vector<int> ids(static_cast<std::size_t>(tokens));
  for (int t = 0; t < tokens; t++) ids[std::size_t(t)] = bench_token_id(t, params->config.vocab_size);
  model::Workspace ws;

  std::vector<double> ms, cpu;
  double check = 0, cache_mb = 0;
  std::size_t tensors = 0;
  for (int r = 0; r < repeats + 1; r++) {  // the first warms up; each cache is freed before the next, as in a loop
    const double c0 = bench_cpu_ms(), t0 = bench_wall_ms();
    auto cache = research::cache_run(*params, {ids}, *sel, research::CacheOptions{.max_bytes = 0}, ws);
    if (!cache) {
      std::fprintf(stderr, "headlab_cache_bench: %s\n", cache.error().message.c_str());
      return 1;
    }
    if (r > 0) ms.push_back(bench_wall_ms() - t0);
    if (r > 0) cpu.push_back(bench_cpu_ms() - c0);
    cache_mb = double(cache->bytes()) / 1048576.0;
    tensors = cache->tensors.size();
    check = 0;
    if (const auto* t = cache->find(model::hook_name(model::HookPoint::resid_post, params->config.n_layer - 1)))
      for (float v : t->values) check += v;
  }
  const double peak_mb = bench_peak_rss_mb();  // the cache runs' peak, before the plain forward's

  // a plain forward (logits only), for scale
  std::vector<double> plain;
  model::ForwardOutput out;
  for (int r = 0; r < repeats + 1; r++) {
    const double t0 = bench_wall_ms();
    if (auto s = model::forward(*params, ids, model::ForwardOptions{}, out, ws); !s) return 1;
    if (r > 0) plain.push_back(bench_wall_ms() - t0);
  }

  // bench_median sorts in place: after it ms[0] is the fastest run (in the printf's own
  // arguments the order of evaluation is unspecified, and min_ms was the first run)
  const double median = bench_median(ms.data(), int(ms.size()));
  std::printf("tokens=%d median_ms=%.1f min_ms=%.1f cpu_ms=%.1f plain_ms=%.1f peak_rss_mb=%.0f load_rss_mb=%.0f "
              "cache_mb=%.1f tensors=%zu check_sum=%.4f blas=%s\n",
              tokens, median, ms[0], bench_median(cpu.data(), int(cpu.size())),
              bench_median(plain.data(), int(plain.size())), peak_mb, load_peak_mb, cache_mb, tensors, check,
              model::blas_core_name());
  return 0;
}
