// Tests for the loss metric over some positions (research/patching.h, PatchRequest::loss_positions):
// TransformerLens's loss_per_token[:, from:to], each sweep value against a full forward with a
// hook that overwrites the slice and the losses sliced by hand; every position gives the whole
// loss to the bit; a run patched at p that runs only rows min(p, from).. gives the whole runs'
// values to the bit on every family; attribution patching reads the same positions; bad ranges
// are refused by name.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "model/forward.h"
#include "model/hooks.h"
#include "model/next_token.h"
#include "research/attribution_patching.h"
#include "research/patching.h"
#include "testing/model_fixtures.h"

using namespace headlab::model;
using namespace headlab::research;
using headlab::testing::load_fixture;

namespace {

// T tokens with two changed (at `at` and at+1): the corrupted run's later losses differ.
PatchPair loss_pair_for(const Parameters& p, int T, int at, int salt = 0) {
  const int V = p.config.vocab_size;
  PatchPair pair;
  for (int t = 0; t < T; t++) pair.clean.push_back((13 * t + 3 + salt) % V);
  pair.corrupted = pair.clean;
  for (int t = at; t < at + 2 && t < T; t++) pair.corrupted[std::size_t(t)] = (pair.clean[std::size_t(t)] + 5) % V;
  return pair;
}

// The mean of next_token_losses[from:to], written here apart from patching.cpp.
double sliced_loss(const ForwardOutput& out, const std::vector<int>& ids, int from, int to) {
  const std::vector<float> losses = next_token_losses(out.logits, ids, out.V);
  double sum = 0;
  for (int t = from; t < to; t++) sum += losses[std::size_t(t)];
  return sum / (to - from);
}

}  // namespace

TEST(PatchLossPositions, EachValueIsTheSlicedLossOfTheRunWithTheSlicePatchedByHand) {
  // denoising resid_pre (layer, pos): the corrupted run with the clean run's row written in by a
  // hook, one full forward per index, its losses at positions [2, 5) averaged
  Parameters p = load_fixture("gpt2_tiny", "model.safetensors");
  const PatchPair pair = loss_pair_for(p, 7, 1);
  const int L = p.config.n_layer, T = 7, C = p.config.n_embd, from = 2, to = 5;
  Workspace ws;
  PatchRequest rq;
  rq.metric = PatchMetric::loss;
  rq.loss_positions = LossPositions{from, to};
  auto r = patch(p, {&pair, 1}, rq, ws);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_TRUE(r->loss_positions);
  EXPECT_EQ(r->loss_positions->to, to);
  ForwardOutput clean_out, corrupted_out;
  ASSERT_TRUE(forward(p, pair.clean, {}, clean_out, ws));
  ASSERT_TRUE(forward(p, pair.corrupted, {}, corrupted_out, ws));
  EXPECT_NEAR(r->clean, sliced_loss(clean_out, pair.clean, from, to), 1e-5);
  EXPECT_NEAR(r->corrupted, sliced_loss(corrupted_out, pair.corrupted, from, to), 1e-5);
  std::vector<std::vector<float>> cache(static_cast<std::size_t>(L));  // the clean run's resid_pre, (T, C) per layer
  ForwardHooks rec(L);
  rec.want(HookPoint::resid_pre, HookLayer::every);
  rec.at = [&](HookPoint, int l, const HookView& v) {
    cache[std::size_t(l)].resize(v.size());
    v.copy_to(cache[std::size_t(l)].data());
  };
  ForwardOptions ro;
  ro.hooks = &rec;
  ASSERT_TRUE(forward(p, pair.clean, ro, clean_out, ws));
  double worst = 0;
  for (int l = 0; l < L; l++)
    for (int pos = 0; pos < T; pos++) {
      ForwardHooks hk(L);
      hk.want(HookPoint::resid_pre, l);
      hk.at = [&](HookPoint, int, const HookView& v) {
        for (int i = 0; i < C; i++) v.at(pos, i) = cache[std::size_t(l)][std::size_t(pos) * C + i];
      };
      ForwardOptions o;
      o.hooks = &hk;
      ForwardOutput out;
      ASSERT_TRUE(forward(p, pair.corrupted, o, out, ws));
      const double want = sliced_loss(out, pair.corrupted, from, to);
      worst = std::max(worst, std::fabs(r->values[r->offset({l, pos})] - want));
    }
  EXPECT_LT(worst, 1e-5);
  // a patch after the range's last position read (4) changes none of its losses: the corrupted run's
  EXPECT_EQ(r->values[r->offset({L - 1, 5})], r->corrupted);
  EXPECT_EQ(r->values[r->offset({L - 1, 6})], r->corrupted);
}

TEST(PatchLossPositions, EveryPositionGivesTheWholeLossToTheBit) {
  Parameters p = load_fixture("families/llama", "model.safetensors");
  const PatchPair pair = loss_pair_for(p, 6, 2);
  Workspace ws;
  for (PatchWhat w : {PatchWhat::resid_pre, PatchWhat::z_all_pos, PatchWhat::z_by_pos}) {
    PatchRequest rq;
    rq.what = w, rq.metric = PatchMetric::loss;
    auto whole = patch(p, {&pair, 1}, rq, ws);
    for (LossPositions lp : {LossPositions{0, -1}, LossPositions{0, 5}}) {
      rq.loss_positions = lp;
      auto every = patch(p, {&pair, 1}, rq, ws);
      ASSERT_TRUE(whole && every);
      EXPECT_EQ(every->values, whole->values) << patch_what_name(w) << " " << loss_positions_text(lp);
      EXPECT_EQ(every->clean, whole->clean);
      EXPECT_EQ(every->corrupted, whole->corrupted);
    }
  }
}

TEST(PatchLossPositions, RunningOnlyTheRowsFromThePatchedPositionOrTheRangeGivesTheWholeRunsValuesOnEveryFamily) {
  // A run patched at p runs rows min(p, from).. (the rows before are neither changed nor read),
  // batched with runs that start at other rows, pairs of different lengths: the values without
  // the shortcut, bit for bit, denoising and noising.
  const PatchWhat whats[] = {PatchWhat::resid_pre, PatchWhat::attn_head_by_pos_every, PatchWhat::z_all_pos};
  for (const char* fixture : {"gpt2_tiny", "families/llama", "families/pythia", "families/gemma2", "families/mistral_window"}) {
    Parameters p = load_fixture(fixture, "model.safetensors");
    const PatchPair pairs[] = {loss_pair_for(p, 7, 1), loss_pair_for(p, 5, 0, 9), loss_pair_for(p, 8, 3, 4)};
    Workspace ws;
    for (PatchWhat w : whats)
      for (LossPositions lp : {LossPositions{2, 4}, LossPositions{3, -1}, LossPositions{0, 2}})
        for (bool noising : {false, true}) {
          PatchRequest rq;
          rq.what = w, rq.metric = PatchMetric::loss, rq.noising = noising, rq.loss_positions = lp;
          rq.shortcuts.skip_unchanged = false;  // every position runs
          auto rows = patch(p, pairs, rq, ws);
          rq.shortcuts.reuse_prefix = false;
          auto whole = patch(p, pairs, rq, ws);
          const std::string where = std::string(fixture) + " " + std::string(patch_what_name(w)) + " " +
                                    loss_positions_text(lp) + (noising ? " noising" : "");
          ASSERT_TRUE(rows && whole) << where << ": " << (rows ? whole.error().message : rows.error().message);
          EXPECT_EQ(rows->values, whole->values) << where;
          EXPECT_EQ(rows->clean, whole->clean) << where;
          EXPECT_EQ(rows->corrupted, whole->corrupted) << where;
          rq.shortcuts = {false, false, false, false, false};  // TransformerLens's loop
          auto loop = patch(p, pairs, rq, ws);
          ASSERT_TRUE(loop) << where;
          double d = 0;
          for (std::size_t i = 0; i < loop->values.size(); i++) d = std::max(d, double(std::fabs(loop->values[i] - rows->values[i])));
          EXPECT_LT(d, 1e-5) << where;
        }
  }
}

TEST(PatchLossPositions, AttributionPatchingReadsTheSamePositions) {
  // its unpatched runs' metric is activation patching's, and a patch the range does not read
  // (after its last position) is estimated as no change
  Parameters p = load_fixture("gpt2_tiny", "model.safetensors");
  const PatchPair pair = loss_pair_for(p, 7, 1);
  Workspace ws;
  PatchRequest rq;
  rq.metric = PatchMetric::loss;
  rq.loss_positions = LossPositions{2, 5};
  auto measured = patch(p, {&pair, 1}, rq, ws);
  auto estimated = attribution_patch(p, {&pair, 1}, rq, ws);
  ASSERT_TRUE(measured && estimated) << (measured ? estimated.error().message : measured.error().message);
  EXPECT_NEAR(estimated->clean, measured->clean, 1e-5);
  EXPECT_NEAR(estimated->corrupted, measured->corrupted, 1e-5);
  EXPECT_NE(estimated->clean, attribution_patch(p, {&pair, 1}, PatchRequest{.metric = PatchMetric::loss}, ws)->clean);
  const int L = p.config.n_layer;
  for (int pos : {5, 6}) EXPECT_NEAR(estimated->values[estimated->offset({L - 1, pos})], estimated->corrupted, 1e-6);
}

TEST(PatchLossPositions, BadRangesAreRefusedByName) {
  Parameters p = load_fixture("gpt2_tiny", "model.safetensors");
  Workspace ws;
  const PatchPair pairs[] = {loss_pair_for(p, 7, 1), loss_pair_for(p, 5, 1)};
  auto refused = [&](std::span<const PatchPair> given, PatchMetric m, LossPositions lp, const std::string& says) {
    std::vector<PatchPair> ps(given.begin(), given.end());
    for (PatchPair& pair : ps) pair.answer = 1, pair.wrong = 2;  // what logprob needs besides
    PatchRequest rq;
    rq.metric = m, rq.loss_positions = lp;
    auto r = patch(p, ps, rq, ws);
    ASSERT_FALSE(r) << says;
    EXPECT_EQ(r.error().code, headlab::ErrorCode::invalid_argument);
    EXPECT_NE(r.error().message.find(says), std::string::npos) << r.error().message;
    EXPECT_FALSE(patch_cost(p.config, ps, rq)) << says;
  };
  refused({pairs, 1}, PatchMetric::logprob, {2, 5}, "loss positions 2:5: they say which positions");
  refused({pairs, 1}, PatchMetric::logprob, {2, 5}, "the metric is logprob; add --metric loss");
  refused({pairs, 1}, PatchMetric::loss, {4, 4}, "loss positions 4:4 are empty");
  refused({pairs, 1}, PatchMetric::loss, {5, 2}, "are empty");
  refused({pairs, 1}, PatchMetric::loss, {2, 7}, "past the end of the prompt pair: it has 7 tokens, so its next-token "
                                                  "losses are read at positions 0 to 5");
  refused({pairs, 1}, PatchMetric::loss, {6, -1}, "loss positions 6: are past the end");
  refused(pairs, PatchMetric::loss, {2, 6}, "past the end of pair 2: it has 5 tokens");
  // the forms the CLI and Python take
  EXPECT_EQ(parse_loss_positions("9:16")->from, 9);
  EXPECT_EQ(parse_loss_positions("9:16")->to, 16);
  EXPECT_EQ(parse_loss_positions("9:")->to, -1);
  EXPECT_EQ(parse_loss_positions(":16")->from, 0);
  EXPECT_FALSE(parse_loss_positions("9-16"));
  EXPECT_FALSE(parse_loss_positions("a:3"));
  EXPECT_FALSE(parse_loss_positions("-1:3"));
  EXPECT_EQ(loss_positions_text({9, -1}), "9:");
}
