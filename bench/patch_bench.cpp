// bench/patch_bench.cpp — times one activation-patching sweep (research/patching.h) on any model
// headlab loads, the figure bench/run_patch_bench.sh sets next to a TransformerLens-style
// PyTorch loop (bench/torch_patch_bench.py) on the same weights and ids. An IOI-like batch:
// `pairs` prompt pairs of `tokens` ids (bench_token_id, shifted per pair), the corrupted prompt
// changed at positions 2 and 5; the metric is the logit difference of two fixed tokens.
//
//   headlab_patch_bench --model DIR --what resid_pre|z_all_pos|z_by_pos [--pairs 8] [--tokens 15]
//                       [--layers A-B] [--tl-loop]   (TL's loop: a full forward per index)
// prints: what=resid_pre pairs=8 tokens=15 wall_ms=... cpu_ms=... runs=... skipped=...
//         block_tokens=... peak_rss_mb=... checksum=...
#include <cstdio>
#include <string>
#include <vector>

#include "bench_clock.h"
#include "formats/model_files.h"
#include "model/blas.h"
#include "research/patching.h"

using namespace headlab;

int main(int argc, char** argv) {
  model::blas_use_cpu_kernels(argv);
  std::string dir, what = "resid_pre";
  int pairs = 8, tokens = 15, layer_a = -1, layer_b = -1;
  bool tl_loop = false;
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--model") dir = next();
    else if (a == "--what") what = next();
    else if (a == "--pairs") pairs = std::stoi(next());
    else if (a == "--tokens") tokens = std::stoi(next());
    else if (a == "--layers") std::sscanf(next().c_str(), "%d-%d", &layer_a, &layer_b);
    else if (a == "--tl-loop") tl_loop = true;
    else return std::fprintf(stderr, "unknown option %s\n", a.c_str()), 2;
  }
  auto w = research::parse_patch_what(what);
  if (dir.empty() || !w || pairs < 1 || tokens < 6)
    return std::fprintf(stderr, "usage: headlab_patch_bench --model DIR --what W [--pairs N] [--tokens T>=6] "
                                "[--layers A-B] [--tl-loop]\n"), 2;
  auto params = model::model_load(dir);
  if (!params) return std::fprintf(stderr, "%s\n", params.error().message.c_str()), 1;
  const int V = params->config.vocab_size;
  std::vector<research::PatchPair> batch;
  for (int k = 0; k < pairs; k++) {
    research::PatchPair p;
    for (int t = 0; t < tokens; t++) p.clean.push_back(int(bench_token_id(t, V) + 1009u * unsigned(k)) % V);
    p.corrupted = p.clean;
    for (int t : {2, 5}) p.corrupted[std::size_t(t)] = (p.clean[std::size_t(t)] + 4409) % V;
    p.answer = 464 % V, p.wrong = 1757 % V;
    batch.push_back(std::move(p));
  }
  research::PatchRequest rq;
  rq.what = *w;
  if (tl_loop) rq.shortcuts = {false, false, false};
  if (layer_a >= 0)
    for (int l = layer_a; l <= layer_b; l++) rq.layers.push_back(l);
  model::Workspace ws;
  const double c0 = bench_cpu_ms(), t0 = bench_wall_ms();
  auto r = research::patch(*params, batch, rq, ws);
  const double t1 = bench_wall_ms(), c1 = bench_cpu_ms();
  if (!r) return std::fprintf(stderr, "%s\n", r.error().message.c_str()), 1;
  double checksum = 0;
  for (float v : r->values) checksum += v;
  std::printf("what=%s pairs=%d tokens=%d wall_ms=%.1f cpu_ms=%.1f runs=%zu skipped=%zu block_tokens=%zu "
              "peak_rss_mb=%.0f checksum=%.6f tl_loop=%d\n",
              what.c_str(), pairs, tokens, t1 - t0, c1 - c0, r->cost.forwards, r->skipped, r->cost.block_tokens,
              bench_peak_rss_mb(), checksum, int(tl_loop));
  return 0;
}
