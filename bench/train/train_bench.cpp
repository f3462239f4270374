// bench/train/train_bench.cpp — training throughput (tokens/s of forward + backward +
// clipped AdamW) for the shapes; bench/train/run_train_bench.sh prints it next to
// PyTorch training the same model on the same machine in the same run.
//   headlab_train_bench [attn|mlp|builtin] [steps]
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "model/config.h"
#include "train/gpt_train.h"
#include "train/rng.h"
#include "train/trainer.h"

using namespace headlab;

int main(int argc, char** argv) {
  const std::string which = argc > 1 ? argv[1] : "attn";
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
  std::printf("%s %.0f\n", which.c_str(), B * T / median);  // config tokens/s (median step)
  return 0;
}
