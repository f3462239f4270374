// The trainer's end-to-end test: a small attention-only model trained on the induction
// curriculum must grow a previous-token head and an induction head (scanner scores >= 0.4).
// No clock here: how fast training runs is the training benchmark's claim
// (bench/train/run_train_bench.sh); ctest's --timeout guards against a hang.
//
// The recipe, stated in full, is tests/testing/induction_recipe.h (the benchmark times the
// same one); experiments with other recipes go through `headlab train` (models/README.md).
#include <filesystem>

#include <gtest/gtest.h>

#include "analysis/scanner.h"
#include "testing/induction_recipe.h"
#include "train/trainer.h"

using namespace headlab;
namespace fs = std::filesystem;

TEST(TrainInduction, SmallModelGrowsAPreviousTokenHeadAndAnInductionHead) {
  const fs::path dir = fs::temp_directory_path() / "headlab_train_induction_test";
  fs::remove_all(dir);
  auto o = headlab::testing::induction_recipe_write(dir);
  ASSERT_TRUE(o) << o.error().message;
  const model::ModelConfig c = headlab::testing::induction_recipe_config();
  auto s = train::train_prepare(*o);
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
