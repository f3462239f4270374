// The trainer's end-to-end test: a small attention-only model trained on repeated random
// sequences must grow an induction head (scanner score >= 0.4) within the CI budget.
#include <chrono>
#include <filesystem>

#include <gtest/gtest.h>

#include "analysis/scanner.h"
#include "model/config.h"
#include "train/bpe_trainer.h"
#include "train/trainer.h"

using namespace headlab;
namespace fs = std::filesystem;

TEST(TrainInduction, SmallModelGrowsAnInductionHead) {
  const auto t0 = std::chrono::steady_clock::now();
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
  c.n_embd = 64;
  c.n_ctx = 64;
  c.vocab_size = 257;
  c.mlp = false;
  c.bos_token_id = c.eos_token_id = 256;
  ASSERT_TRUE(model::config_save(c, (dir / "config.json").string()));

  train::TrainOptions o;
  o.config_path = (dir / "config.json").string();
  o.tokenizer_dir = (dir / "tok").string();
  o.out_dir = (dir / "out").string();
  o.steps = 400;
  o.batch = 8;
  o.lr = 3e-3f;
  o.warmup = 20;
  o.decay = train::LrDecay::constant;
  o.mix.repeated_random = 1.0;
  o.mix.min_span = 4;
  o.mix.max_span = 24;
  o.log_every = 50;
  o.eval_every = 0;
  o.checkpoint_every = 0;
  auto s = train::train_prepare(o);
  ASSERT_TRUE(s) << s.error().message;
  auto r = train::train_run(*s, nullptr);
  ASSERT_TRUE(r) << r.error().message;

  // scan with random tokens as the "natural" text: induction is scored on its own probes
  std::vector<int> text;
  train::Rng rng(3);
  for (int i = 0; i < 200; ++i) text.push_back(rng.below(256));
  analysis::ScanOptions so;
  so.random_probes = 8;
  auto probes = analysis::scan_probes_build(text, std::vector<bool>(257, false), 257, 256, 64, so);
  ASSERT_TRUE(probes);
  auto report = analysis::scan_model(s->model.params, *probes);
  ASSERT_TRUE(report);
  const auto best = analysis::best_head(*report, &analysis::HeadScores::induction);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("best induction head %d.%d: %.3f; in-context loss ratio %.3f; last loss %.3f; %.1f s\n", best.layer,
              best.head, best.score, report->icl.ratio(), r->last.loss, secs);
  EXPECT_GE(best.score, 0.4);
  EXPECT_LT(report->icl.ratio(), 0.5);
  EXPECT_LT(secs, 120.0);
  fs::remove_all(dir);
}
