// testing/induction_recipe.h — the one recipe of the trainer's end-to-end claim: a small
// attention-only model on the induction curriculum grows a previous-token head and an
// induction head. tests/train/train_induction_test.cpp asserts the heads form;
// bench/train/train_bench.cpp (`headlab_train_bench induction`) times the same run.
//
// Half the windows are random tokens with a span repeated, half are walks on a Markov chain
// drawn per window (Edelman et al. 2024). Repeated spans alone let a model learn in context
// through other, spread-out circuits; the Markov windows reward looking at the previous
// token, and with both the textbook pair forms (models/README.md).
//
//   auto o = testing::induction_recipe_write(dir);   // dir/tok, dir/config.json; out in dir/out
//   auto s = train::train_prepare(*o);
#pragma once

#include <filesystem>
#include <string>

#include "formats/hf/config_json.h"
#include "model/config.h"
#include "train/bpe_trainer.h"
#include "train/trainer.h"
#include "util/result.h"

namespace headlab::testing {

// 2 layers x 4 heads, C = 128, T = 64, attention-only, untied, over the 256 bytes +
// <|endoftext|> (the data are random ids anyway).
inline model::ModelConfig induction_recipe_config() {
  model::ModelConfig c;
  c.n_layer = 2;
  c.n_head = 4;
  c.n_embd = 128;
  c.n_ctx = 64;
  c.tied = false;
  c.vocab_size = 257;
  c.mlp = false;
  c.bos_token_id = c.eos_token_id = 256;
  return c;
}

// Writes the byte-level tokenizer (dir/tok) and the config (dir/config.json), and returns
// the training options: 1,000 steps at batch 32, lr 1e-3 after 50 warm-up steps, constant,
// no weight decay, GPT-2's initial 0.02, half Markov and half repeated-random windows.
inline Result<train::TrainOptions> induction_recipe_write(const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir / "tok");
  train::BpeTrainOptions bo;
  bo.vocab_size = 257;
  auto vocab = train::bpe_train({"ab"}, bo);
  if (!vocab) return tl::unexpected(vocab.error());
  if (Status s = train::bpe_save(*vocab, (dir / "tok").string()); !s) return tl::unexpected(s.error());
  const model::ModelConfig c = induction_recipe_config();
  if (Status s = model::config_save(c, (dir / "config.json").string()); !s) return tl::unexpected(s.error());
  train::TrainOptions o;
  o.config_path = (dir / "config.json").string();
  o.tokenizer_dir = (dir / "tok").string();
  o.out_dir = (dir / "out").string();
  o.steps = 1000;
  o.batch = 32;
  o.lr = 1e-3f;
  o.warmup = 50;
  o.decay = train::LrDecay::constant;
  o.weight_decay = 0.0f;
  o.init_std = 0.0f;  // GPT-2's 0.02
  o.mix.markov = 0.5;
  o.mix.repeated_random = 1.0 - o.mix.markov;
  o.mix.min_span = 8;
  o.mix.max_span = c.n_ctx / 2;
  o.log_every = 50;
  o.eval_every = 250;
  o.checkpoint_every = 0;
  return o;
}

}  // namespace headlab::testing
