// The trainer's end-to-end test: a small attention-only model trained on the induction
// curriculum must grow a previous-token head and an induction head (scanner scores >= 0.4).
// No clock here: how fast training runs is the training benchmark's claim
// (bench/train/run_train_bench.sh); ctest's --timeout guards against a hang.
//
// The recipe: half the windows are random tokens with a span repeated, half are walks on
// a Markov chain drawn per window (Edelman et al. 2024). Repeated spans alone let a model
// learn in context through other, spread-out circuits; the Markov windows reward looking
// at the previous token, and with both the textbook pair forms (models/README.md).
// The recipe is stated here, in full; experiments with other recipes go through
// `headlab train` (models/README.md).
#include <filesystem>

#include <gtest/gtest.h>

#include "analysis/scanner.h"
#include "model/config.h"
#include "train/bpe_trainer.h"
#include "train/trainer.h"

using namespace headlab;
namespace fs = std::filesystem;

TEST(TrainInduction, SmallModelGrowsAPreviousTokenHeadAndAnInductionHead) {
  const fs::path dir = fs::temp_directory_path() / "headlab_train_induction_test";
  fs::remove_all(dir);
  fs::create_directories(dir / "tok");
  // the byte-level tokenizer (256 bytes + <|endoftext|>): the data are random ids anyway
  train::BpeTrainOptions bo;
  bo.vocab_size = 257;
  ASSERT_TRUE(train::bpe_save(*train::bpe_train({"ab"}, bo), (dir / "tok").string()));
  model::ModelConfig c;
  c.n_layer = 2;
  c.n_head = 4;
  c.n_embd = 128;
  c.n_ctx = 64;
  c.tied = false;
  c.vocab_size = 257;
  c.mlp = false;
  c.bos_token_id = c.eos_token_id = 256;
  ASSERT_TRUE(model::config_save(c, (dir / "config.json").string()));

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
  auto s = train::train_prepare(o);
  ASSERT_TRUE(s) << s.error().message;
  auto r = train::train_run(*s, [](const train::TrainProgress& p) {
    if (p.record && p.record->evaluated)
      std::printf("step %d: loss %.3f, best induction %.2f, previous-token %.2f, in-context ratio %.2f\n", p.step,
                  p.record->loss, p.record->induction, p.record->previous_token, p.record->icl_ratio);
  });
  ASSERT_TRUE(r) << r.error().message;

  // scan with random tokens as the "natural" text: induction is scored on its own probes
  std::vector<int> text;
  train::Rng rng(3);
  for (int i = 0; i < 200; ++i) text.push_back(rng.below(256));
  analysis::ScanOptions so;
  so.random_probes = 8;
  auto probes = analysis::scan_probes_build(text, std::vector<bool>(257, false), 257, 256, c.n_ctx, so);
  ASSERT_TRUE(probes);
  auto report = analysis::scan_model(s->model.params, *probes);
  ASSERT_TRUE(report);
  const auto best = analysis::best_head(*report, &analysis::HeadScores::induction);
  std::printf("best induction head %d.%d: %.3f; in-context loss ratio %.3f; last loss %.3f\n", best.layer, best.head,
              best.score, report->icl.ratio(), r->last.loss);
  const auto previous = analysis::best_head(*report, &analysis::HeadScores::previous_token);
  std::printf("best previous-token head %d.%d: %.3f\n", previous.layer, previous.head, previous.score);
  EXPECT_GE(best.score, 0.4);
  EXPECT_EQ(best.layer, 1) << "an induction head reads a previous-token head of an earlier layer";
  EXPECT_GE(previous.score, 0.4);
  EXPECT_LT(report->icl.ratio(), 0.5);
  fs::remove_all(dir);
}
