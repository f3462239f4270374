// Tests for research/path_patching.h: the grids equal the PyTorch float64 reference (full runs
// only, tools/reference/research_reference.py path_patch) on every family fixture; each shortcut
// equals the full runs; senders batched as rows equal one forward each; a batch averages; the
// normalized metric; explicit senders; bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>

#include "formats/model_files.h"
#include "research/path_patching.h"
#include "testing/model_fixtures.h"

using namespace headlab::research;
using headlab::testing::read_json_file;
using nlohmann::json;

namespace {

struct Fixture {
  headlab::model::Parameters params;
  PatchPair pair;
  json expected;
};

// tests/fixtures/research/<name>: the model, its prompt pair and the reference's numbers.
std::optional<Fixture> fixture(const std::string& name) {
  const std::string dir = std::string(HEADLAB_SOURCE_DIR) + "/tests/fixtures/research/" + name;
  if (!std::filesystem::exists(dir + "/expected.json")) return std::nullopt;
  const json prompts = read_json_file(dir + "/prompts.json");
  auto params = headlab::model::model_load(std::string(HEADLAB_SOURCE_DIR) + "/" + prompts["model"].get<std::string>());
  if (!params) return std::nullopt;
  return Fixture{std::move(*params),
                 PatchPair{prompts["clean"].get<std::vector<int>>(), prompts["corrupted"].get<std::vector<int>>(),
                           prompts["answer"].get<int>(), prompts["wrong"].get<int>()},
                 read_json_file(dir + "/expected.json")};
}

// The worst |a - b| / max(1, |b|) of a (L, NH) grid against the reference's [L][NH].
double worst_difference(const PathPatchResult& r, const json& want) {
  double worst = 0;
  for (std::size_t l = 0; l < want.size(); l++)
    for (std::size_t h = 0; h < want[l].size(); h++) {
      const double ref = want[l][h].get<double>();
      const double got = r.values[r.offset(static_cast<int>(l), static_cast<int>(h))];
      worst = std::max(worst, std::fabs(got - ref) / std::max(1.0, std::fabs(ref)));
    }
  return worst;
}

void expect_same_grid(const PathPatchResult& a, const PathPatchResult& b, double tol, const std::string& what) {
  ASSERT_EQ(a.values.size(), b.values.size()) << what;
  for (std::size_t i = 0; i < a.values.size(); i++) {
    if (std::isnan(a.values[i])) {
      EXPECT_TRUE(std::isnan(b.values[i])) << what << " cell " << i;
      continue;
    }
    EXPECT_NEAR(a.values[i], b.values[i], tol * std::max(1.0f, std::fabs(b.values[i]))) << what << " cell " << i;
  }
}

class PathPatchingReference : public ::testing::TestWithParam<const char*> {};

}  // namespace

TEST_P(PathPatchingReference, GridsIntoTheLogitsAndIntoReceiverHeadsMatchTheFloat64Reference) {
  auto f = fixture(GetParam());
  if (!f) GTEST_SKIP() << GetParam() << " is not here";
  const json& want = f->expected["path_patch"];
  headlab::model::Workspace ws;
  PathPatchRequest rq;  // ARENA's direction: orig = clean, new = corrupted
  auto final_grid = path_patch(f->params, {&f->pair, 1}, rq, ws);
  ASSERT_TRUE(final_grid) << final_grid.error().message;
  std::string list;
  for (const auto& r : want["receivers"]) list += (list.empty() ? "" : ",") + r.get<std::string>();
  auto receivers = parse_path_receivers(list);
  ASSERT_TRUE(receivers) << receivers.error().message;
  rq.receivers = *receivers;
  auto heads_grid = path_patch(f->params, {&f->pair, 1}, rq, ws);
  ASSERT_TRUE(heads_grid) << heads_grid.error().message;
  EXPECT_NEAR(final_grid->clean, f->expected["logit_diff"]["clean"].get<double>(), 1e-4);
  const double a = worst_difference(*final_grid, want["final"]), b = worst_difference(*heads_grid, want["heads"]);
  EXPECT_LT(a, 3e-5) << GetParam() << " into the logits";
  EXPECT_LT(b, 3e-5) << GetParam() << " into " << list;
  std::printf("%s: path patching max |headlab - reference| / max(1, |x|): into the logits %.2g, into %s %.2g\n",
              GetParam(), a, list.c_str(), b);
}

INSTANTIATE_TEST_SUITE_P(Models, PathPatchingReference,
                         ::testing::Values("gpt2_tiny", "llama", "gemma2", "pythia", "headlab_tiny"));

TEST(PathPatching, EachShortcutAloneEqualsTheFullRunsOnGqaParallelAndSandwichBlocks) {
  for (const char* model : {"llama", "pythia", "gemma2"}) {  // k and v receivers name KV heads (2 of 4 in Llama, Gemma 2)
    auto f = fixture(model);
    if (!f) GTEST_SKIP();
    headlab::model::Workspace ws;
    for (const char* receivers : {"final", "1.0:q,1.1:k,1.0:v"}) {
      PathPatchRequest rq;
      rq.receivers = *parse_path_receivers(receivers);
      rq.shortcuts = {false, false, false, false};
      auto full = path_patch(f->params, {&f->pair, 1}, rq, ws);
      ASSERT_TRUE(full) << full.error().message;
      EXPECT_EQ(full->skipped, 0u);
      for (int which = 0; which < 5; which++) {  // 4: all of them
        rq.shortcuts = {which == 0 || which == 4, which == 1 || which == 4, which == 2 || which == 4, which == 3 || which == 4};
        auto fast = path_patch(f->params, {&f->pair, 1}, rq, ws);
        ASSERT_TRUE(fast) << fast.error().message;
        expect_same_grid(*fast, *full, 1e-5, std::string(model) + " " + receivers + " shortcut " + std::to_string(which));
        if (rq.shortcuts.skip_unreachable && !rq.receivers.empty())
          EXPECT_EQ(fast->skipped, 4u) << "layer 1's senders reach no layer-1 receiver";
        EXPECT_LE(fast->cost.block_tokens, full->cost.block_tokens);
      }
    }
  }
}

TEST(PathPatching, BatchedSendersGiveTheGridOfOneForwardPerSenderIntoTheLogitsAndIntoHeads) {
  // Two pairs of different lengths, each layer's senders of both as the rows of one batch
  // against one forward per sender (and per run 3): the same grid, bit for bit.
  for (const char* model : {"gpt2_tiny", "llama", "pythia", "gemma2"}) {
    auto f = fixture(model);
    if (!f) GTEST_SKIP();
    PatchPair shorter = f->pair;
    shorter.clean.pop_back(), shorter.corrupted.pop_back();
    shorter.clean[1] = (shorter.clean[1] + 3) % f->params.config.vocab_size;
    const PatchPair pairs[] = {f->pair, shorter};
    headlab::model::Workspace ws;
    for (const char* receivers : {"final", "1.0:q,1.1:k,1.0:v"})
      for (PatchMetric m : {PatchMetric::logit_diff, PatchMetric::logprob}) {
        PathPatchRequest rq;
        rq.receivers = *parse_path_receivers(receivers);
        rq.metric = m;
        auto batched = path_patch(f->params, pairs, rq, ws);
        rq.shortcuts.batch_rows = false;
        auto lone = path_patch(f->params, pairs, rq, ws);
        ASSERT_TRUE(batched && lone);
        const std::string what = std::string(model) + " " + receivers + " " + std::string(patch_metric_name(m));
        expect_same_grid(*batched, *lone, 0.0, what);
        EXPECT_EQ(batched->skipped, lone->skipped) << what;
      }
  }
}

TEST(PathPatching, ABatchAveragesItsPairsAndNormalizedMapsCleanToOneAndCorruptedToZero) {
  auto f = fixture("gpt2_tiny");
  if (!f) GTEST_SKIP();
  PatchPair second = f->pair;
  second.clean[2] = (second.clean[2] + 5) % f->params.config.vocab_size;
  second.corrupted[2] = second.clean[2];
  headlab::model::Workspace ws;
  PathPatchRequest rq;
  auto one = path_patch(f->params, {&f->pair, 1}, rq, ws);
  auto two = path_patch(f->params, {&second, 1}, rq, ws);
  const PatchPair both_pairs[] = {f->pair, second};
  auto both = path_patch(f->params, both_pairs, rq, ws);
  ASSERT_TRUE(one && two && both);
  for (std::size_t i = 0; i < both->values.size(); i++)
    EXPECT_NEAR(both->values[i], (one->values[i] + two->values[i]) / 2, 1e-5);
  rq.metric = PatchMetric::normalized;
  auto norm = path_patch(f->params, both_pairs, rq, ws);
  ASSERT_TRUE(norm) << norm.error().message;
  EXPECT_FLOAT_EQ(norm->clean, 1.0f);
  EXPECT_FLOAT_EQ(norm->corrupted, 0.0f);
  for (std::size_t i = 0; i < both->values.size(); i++)
    EXPECT_NEAR(norm->values[i], (both->values[i] - both->corrupted) / (both->clean - both->corrupted), 1e-4);
}

TEST(PathPatching, NamedSendersGiveTheirCellsOfTheFullGridAndNaNElsewhere) {
  auto f = fixture("pythia");
  if (!f) GTEST_SKIP();
  headlab::model::Workspace ws;
  PathPatchRequest rq;
  auto all = path_patch(f->params, {&f->pair, 1}, rq, ws);
  rq.senders = *parse_path_senders("1.2,0.1");
  auto some = path_patch(f->params, {&f->pair, 1}, rq, ws);
  ASSERT_TRUE(all && some);
  ASSERT_EQ(some->layers, (std::vector<int>{0, 1}));
  for (int l = 0; l < 2; l++)
    for (int h = 0; h < 4; h++) {
      const float v = some->values[some->offset(l, h)];
      if ((l == 0 && h == 1) || (l == 1 && h == 2)) EXPECT_FLOAT_EQ(v, all->values[all->offset(l, h)]);
      else EXPECT_TRUE(std::isnan(v)) << l << "." << h;
    }
  rq.senders = *parse_path_senders("1.*");
  auto layer = path_patch(f->params, {&f->pair, 1}, rq, ws);
  ASSERT_TRUE(layer);
  EXPECT_EQ(layer->layers, std::vector<int>{1});
  EXPECT_EQ(layer->values.size(), 4u);
}

TEST(PathPatching, BadSendersAndReceiversAreRefusedByName) {
  auto f = fixture("llama");
  if (!f) GTEST_SKIP();
  auto message = [&](const char* senders, const char* receivers) {
    auto s = parse_path_senders(senders);
    if (!s) return s.error().message;
    auto r = parse_path_receivers(receivers);
    if (!r) return r.error().message;
    PathPatchRequest rq;
    rq.senders = *s;
    rq.receivers = *r;
    headlab::model::Workspace ws;
    auto out = path_patch(f->params, {&f->pair, 1}, rq, ws);
    return out ? std::string("no error") : out.error().message;
  };
  EXPECT_NE(message("0.9", "final").find("sender 0.9"), std::string::npos);
  EXPECT_NE(message("all", "1.2:k").find("KV heads"), std::string::npos);  // NKV = 2
  EXPECT_NE(message("all", "1.2:x").find("LAYER.HEAD:q"), std::string::npos);
  EXPECT_NE(message("all", "1.1:q,1.1:q").find("twice"), std::string::npos);
  EXPECT_NE(message("all", "5.0:q").find("layer 5"), std::string::npos);
  EXPECT_NE(message("zero", "final").find("LAYER.HEAD"), std::string::npos);
  PatchPair uneven = f->pair;
  uneven.corrupted.pop_back();
  headlab::model::Workspace ws;
  auto r = path_patch(f->params, {&uneven, 1}, PathPatchRequest{}, ws);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("same number of tokens"), std::string::npos);
}

TEST(PathPatching, TheLossOverSomePositionsIsTheMeanOfThoseRowsLossesInEveryRunAndEachShortcutKeepsIt) {
  // The loss over [from, to): over every position it is the plain loss's grid; over a part, the
  // clean and corrupted values are those rows' mean next-token loss of a plain forward, and the
  // shortcuts (batched senders included) give the full runs' grid.
  for (const char* model : {"gpt2_tiny", "llama"}) {
    auto f = fixture(model);
    if (!f) GTEST_SKIP();
    const int T = static_cast<int>(f->pair.clean.size());
    headlab::model::Workspace ws;
    for (const char* receivers : {"final", "1.0:q,1.1:k,1.0:v"}) {
      const std::string where = std::string(model) + " " + receivers;
      PathPatchRequest rq;
      rq.receivers = *parse_path_receivers(receivers);
      rq.metric = PatchMetric::loss;
      auto plain = path_patch(f->params, {&f->pair, 1}, rq, ws);
      rq.loss_positions = LossPositions{0, T - 1};
      auto every = path_patch(f->params, {&f->pair, 1}, rq, ws);
      ASSERT_TRUE(plain && every) << where;
      expect_same_grid(*every, *plain, 1e-6, where + ", every position");
      rq.loss_positions = LossPositions{T / 2, T - 1};
      auto part = path_patch(f->params, {&f->pair, 1}, rq, ws);
      ASSERT_TRUE(part) << part.error().message;
      ASSERT_TRUE(part->loss_positions.has_value());
      for (bool clean : {true, false}) {  // noising: the clean run is orig
        headlab::model::ForwardOptions o;
        headlab::model::ForwardOutput out;
        const std::vector<int>& ids = clean ? f->pair.clean : f->pair.corrupted;
        ASSERT_TRUE(headlab::model::forward(f->params, ids, o, out, ws));
        const double want = patch_loss_over(out, ids, *rq.loss_positions);
        EXPECT_NEAR(clean ? part->clean : part->corrupted, want, 1e-5) << where;
      }
      bool differs = false;  // the part's grid is its own, not the whole loss's
      for (std::size_t i = 0; i < part->values.size(); i++)
        differs = differs || (!std::isnan(part->values[i]) && std::fabs(part->values[i] - plain->values[i]) > 1e-4);
      EXPECT_TRUE(differs) << where;
      rq.shortcuts = {false, false, false, false};
      auto full = path_patch(f->params, {&f->pair, 1}, rq, ws);
      ASSERT_TRUE(full) << full.error().message;
      expect_same_grid(*part, *full, 1e-5, where + ", shortcuts against the full runs");
    }
    PathPatchRequest bad;
    bad.loss_positions = LossPositions{1, 2};  // with the logit difference
    auto refused = path_patch(f->params, {&f->pair, 1}, bad, ws);
    ASSERT_FALSE(refused);
    EXPECT_NE(refused.error().message.find("loss"), std::string::npos) << refused.error().message;
    bad.metric = PatchMetric::loss;
    bad.loss_positions = LossPositions{1, T + 5};
    refused = path_patch(f->params, {&f->pair, 1}, bad, ws);
    ASSERT_FALSE(refused);
    EXPECT_NE(refused.error().message.find("past the end"), std::string::npos) << refused.error().message;
  }
}
