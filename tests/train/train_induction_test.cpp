// The trainer's end-to-end test: a small attention-only model trained on repeated random
// sequences must grow an induction head (scanner score >= 0.4) within the CI budget.
//
// DISABLED: the recipe below is not yet calibrated. In the runs so far (2 layers, 4 heads,
// C = 64, T = 32, batch 32, GPT-2 init, lr 3e-3 .. 1e-2) the best induction score climbs
// only to 0.25-0.37 in 1,000-2,000 steps and no previous-token head forms; --init-std 0.1
// is being tried. Run it by hand with --gtest_also_run_disabled_tests (HEADLAB_IND_STEPS,
// HEADLAB_IND_LR, HEADLAB_IND_INIT override the recipe).
#include <chrono>
#include <cstdlib>
#include <filesystem>

#include <gtest/gtest.h>

#include "analysis/scanner.h"
#include "model/config.h"
#include "train/bpe_trainer.h"
#include "train/trainer.h"

using namespace headlab;
namespace fs = std::filesystem;

TEST(TrainInduction, DISABLED_SmallModelGrowsAnInductionHead) {
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
  auto env_int = [](const char* name, int fallback) { return std::getenv(name) ? std::atoi(std::getenv(name)) : fallback; };
  c.n_head = env_int("HEADLAB_IND_H", 4);
  c.n_embd = env_int("HEADLAB_IND_C", 64);
  c.n_ctx = env_int("HEADLAB_IND_T", 32);
  c.vocab_size = 257;
  c.mlp = false;
  c.bos_token_id = c.eos_token_id = 256;
  ASSERT_TRUE(model::config_save(c, (dir / "config.json").string()));

  train::TrainOptions o;
  o.config_path = (dir / "config.json").string();
  o.tokenizer_dir = (dir / "tok").string();
  o.out_dir = (dir / "out").string();
  o.steps = std::getenv("HEADLAB_IND_STEPS") ? std::atoi(std::getenv("HEADLAB_IND_STEPS")) : 1500;
  o.batch = 32;
  o.lr = std::getenv("HEADLAB_IND_LR") ? std::atof(std::getenv("HEADLAB_IND_LR")) : 3e-3f;
  o.warmup = 50;
  o.decay = train::LrDecay::constant;
  o.init_std = std::getenv("HEADLAB_IND_INIT") ? std::atof(std::getenv("HEADLAB_IND_INIT")) : 0.1f;
  o.mix.repeated_random = 1.0;
  o.mix.min_span = 3;
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
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("best induction head %d.%d: %.3f; in-context loss ratio %.3f; last loss %.3f; %.1f s\n", best.layer,
              best.head, best.score, report->icl.ratio(), r->last.loss, secs);
  EXPECT_GE(best.score, 0.4);
  EXPECT_LT(report->icl.ratio(), 0.5);
  EXPECT_LT(secs, 120.0);
  fs::remove_all(dir);
}
