// bench/train/train_bench.cpp — training throughput (tokens/s of forward + backward +
// clipped AdamW) for the shapes; bench/train/run_train_bench.sh prints it next to
// PyTorch training the same model on the same machine in the same run.
//   headlab_train_bench [attn|mlp|builtin] [steps]   -> "<name> <tokens/s> blas=<kernels>"
//   headlab_train_bench induction                   -> the wall time of TrainInduction's recipe
//   headlab_train_bench blas                        -> the OpenBLAS kernels it uses
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>

#include <unistd.h>

#include "model/blas.h"
#include "model/config.h"
#include "testing/induction_recipe.h"
#include "train/gpt_train.h"
#include "train/rng.h"
#include "train/trainer.h"

using namespace headlab;

namespace {

// The recipe of tests/train/train_induction_test.cpp, tests/testing/induction_recipe.h (the
// unit test has no clock: its time is this benchmark's): 1,000 steps of a 2-layer, 4-head,
// C = 128, T = 64 attention-only model at batch 32 on the induction curriculum, evaluations
// included.
int time_induction_recipe() {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("headlab_train_bench_induction_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  auto o = testing::induction_recipe_write(dir);
  if (!o) {
    std::fprintf(stderr, "cannot write the recipe in %s: %s\n", dir.c_str(), o.error().message.c_str());
    return 1;
  }
  const auto t0 = std::chrono::steady_clock::now();
  auto s = train::train_prepare(*o);
  if (!s) {
    std::fprintf(stderr, "%s\n", s.error().message.c_str());
    return 1;
  }
  double induction = 0, previous = 0;
  auto r = train::train_run(*s, [&](const train::TrainProgress& p) {
    if (p.record && p.record->evaluated) induction = p.record->induction, previous = p.record->previous_token;
  });
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  fs::remove_all(dir);
  if (!r) {
    std::fprintf(stderr, "%s\n", r.error().message.c_str());
    return 1;
  }
  std::printf("induction_recipe seconds=%.1f last_loss=%.3f best_induction=%.2f best_previous_token=%.2f blas=%s\n",
              seconds, r->last.loss, induction, previous, model::blas_core_name());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  model::blas_use_cpu_kernels(argv);  // OpenBLAS's kernels by the CPU's features, as `headlab` chooses them
  const std::string which = argc > 1 ? argv[1] : "attn";
  if (which == "blas") {
    std::printf("%s\n%s\n", model::blas_core_name(), model::blas_kernels_description().c_str());
    return 0;
  }
  if (which == "induction") return time_induction_recipe();
  const int steps = argc > 2 ? std::atoi(argv[2]) : 10;
  model::ModelConfig c;
  int B = 16, T = 256;
  c.n_layer = 2;
  c.n_head = 8;
  c.n_embd = 256;
  c.n_ctx = 256;
  c.vocab_size = 256;
  c.mlp = which == "mlp";
  if (which == "builtin") {  // models/headlab-tiny/train_config.json at its training batch
    c.n_head = 4;
    c.n_embd = 128;
    c.n_ctx = 128;
    c.vocab_size = 4096;
    c.tied = false;
    B = 32;
    T = 128;
  }
  c.bos_token_id = c.eos_token_id = c.vocab_size - 1;
  auto m = train::train_model_create(c, B, T);
  if (!m) {
    std::fprintf(stderr, "%s\n", m.error().message.c_str());
    return 1;
  }
  model::parameters_init_random(m->params, 1);
  train::Rng rng(1);
  std::vector<int> x(B * T), y(B * T);
  for (int i = 0; i < B * T; ++i) x[i] = rng.below(c.vocab_size), y[i] = rng.below(c.vocab_size);
  std::vector<float> mom(m->params.memory.size(), 0.0f), vel(m->params.memory.size(), 0.0f);
  train::TrainOptions o;
  o.lr = 1e-4f;
  o.warmup = 0;
  auto step = [&](int s) {
    train::train_forward(*m, x.data(), y.data());
    train::train_zero_grad(*m);
    train::train_backward(*m);
    train::optimizer_step(*m, mom, vel, o, s);
  };
  step(0);  // warm-up: first touch of every buffer
  std::vector<double> times;
  for (int s = 1; s <= steps; ++s) {
    auto t0 = std::chrono::steady_clock::now();
    step(s);
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(times.begin(), times.end());
  const double median = times[times.size() / 2];
  std::printf("%s %.0f blas=%s\n", which.c_str(), B * T / median, model::blas_core_name());  // tokens/s (median step)
  return 0;
}
