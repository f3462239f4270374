// Tests for model/forward.h's forward_batch: several sequences as the rows of one forward give
// each sequence what a lone forward gives, on every family fixture (GPT-2's and the others').
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "model/forward.h"
#include "testing/model_fixtures.h"

using namespace headlab::model;
using headlab::ErrorCode;
using headlab::testing::fixture_dir;
using headlab::testing::load_fixture;
using headlab::testing::read_json_file;

namespace {

// GPT-2 (learned positions, with and without an MLP), Pythia (NeoX: parallel, partial rotary),
// Llama (GQA), Mistral (HS != C/NH; a sliding window), Qwen 2 (MQA, biases), Llama 3.1's
// scaling, Qwen 3 (q/k norm), Gemma 2 (soft-caps, sliding layers) and Gemma 3 (local rotary).
const char* kAllFixtures[] = {"gpt2_tiny",         "attn_only",       "gpt2_wide",         "families/pythia",
                              "families/llama",    "families/mistral", "families/qwen2",   "families/llama3",
                              "families/mistral_window", "families/qwen3", "families/gemma2", "families/gemma3"};

double max_diff(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return INFINITY;
  double m = 0;
  for (std::size_t i = 0; i < a.size(); i++) m = std::max(m, std::fabs(double(a[i]) - double(b[i])));
  return m;
}

// Three sequences of different lengths made from the fixture's ids (their order changed, so
// no two are prefixes of each other at every position).
std::vector<std::vector<int>> three_sequences(const std::vector<int>& ids) {
  const std::size_t n = ids.size();
  std::vector<int> a(ids.begin(), ids.end());
  std::vector<int> b(ids.rbegin(), ids.rend());
  b.resize(std::max<std::size_t>(1, n / 2));
  std::vector<int> c(ids.begin() + n / 3, ids.end());
  std::rotate(c.begin(), c.begin() + c.size() / 2, c.end());
  c.resize(std::max<std::size_t>(1, c.size() - 1));
  return {a, b, c};
}

}  // namespace

TEST(ForwardBatch, ThreeSequencesOfDifferentLengthsGiveEachTheLogitsAndRecordOfALoneForward) {
  for (const char* name : kAllFixtures) {
    for (bool packed : {true, false}) {
      auto expected = read_json_file(fixture_dir(name) + "/expected.json");
      Parameters p = load_fixture(name, "model.safetensors", {.rows = !packed});
      const auto seqs = three_sequences(expected["ids"].get<std::vector<int>>());
      ForwardOptions opt;
      opt.record = {.pattern = true, .scores = true, .qkv = true, .z = true, .head_out = true, .residual = true};
      opt.loss = true;
      std::vector<std::span<const int>> spans(seqs.begin(), seqs.end());
      std::vector<ForwardOutput> batch;
      Workspace ws;
      ASSERT_TRUE(forward_batch(p, spans, opt, batch, ws)) << name;
      ASSERT_EQ(batch.size(), 3u);
      for (std::size_t s = 0; s < seqs.size(); s++) {
        ForwardOutput lone;
        Workspace lone_ws;
        ASSERT_TRUE(forward(p, seqs[s], opt, lone, lone_ws));
        const std::string where = std::string(name) + (packed ? " packed" : " rows") + ", sequence " + std::to_string(s);
        EXPECT_EQ(batch[s].T, lone.T) << where;
        // The packed kernels (a loaded model, the server's) give the same bits. OpenBLAS's sgemm
        // (the trainer's float32 rows) blocks by the row count: gpt2_wide's values move by 3e-5.
        const double tol = packed ? 0.0 : 1e-4;
        EXPECT_LE(max_diff(batch[s].logits, lone.logits), tol) << where;
        EXPECT_LE(std::fabs(batch[s].loss - lone.loss), tol) << where;
        const ActivationRecord &a = batch[s].record, &b = lone.record;
        EXPECT_LE(max_diff(a.pattern, b.pattern), tol) << where;
        EXPECT_LE(max_diff(a.scores, b.scores), tol) << where;
        EXPECT_LE(max_diff(a.qkv, b.qkv), tol) << where;
        EXPECT_LE(max_diff(a.z, b.z), tol) << where;
        EXPECT_LE(max_diff(a.head_out, b.head_out), tol) << where;
        EXPECT_LE(max_diff(a.residual, b.residual), tol) << where;
        EXPECT_EQ(a.window, b.window) << where;
      }
    }
  }
}

TEST(ForwardBatch, OnlyTheAskedLogitColumnsComeBackPerSequence) {
  Parameters p = load_fixture("families/llama", "model.safetensors");
  std::vector<int> a = {1, 5, 9, 2}, b = {7, 3};
  std::vector<std::span<const int>> spans = {a, b};
  ForwardOptions opt;
  opt.logit_tokens = {4, 0};
  std::vector<ForwardOutput> outs;
  Workspace ws;
  ASSERT_TRUE(forward_batch(p, spans, opt, outs, ws));
  ForwardOutput lone;
  ASSERT_TRUE(forward(p, b, opt, lone, ws));
  ASSERT_EQ(outs[1].logits.size(), 2u * 2u);
  EXPECT_EQ(outs[1].logits, lone.logits);
}

TEST(ForwardBatch, RefusesInterventionsAndHooksAcrossSeveralSequencesButRunsOneWithThem) {
  Parameters p = load_fixture("gpt2_tiny", "model.safetensors");
  std::vector<int> a = {1, 2, 3}, b = {4, 5};
  std::vector<std::span<const int>> two = {a, b}, one = {a};
  std::vector<ForwardOutput> outs;
  Workspace ws;
  ForwardOptions ablate;
  ablate.interventions.ablate.push_back({0, 0, Ablation::zero});
  auto s = forward_batch(p, two, ablate, outs, ws);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, ErrorCode::invalid_argument);
  EXPECT_NE(s.error().message.find("interventions cannot run in a batch"), std::string::npos) << s.error().message;
  EXPECT_TRUE(forward_batch(p, one, ablate, outs, ws));

  ForwardHooks hooks(p.config.n_layer);
  hooks.want(HookPoint::z, 0);
  hooks.at = [](HookPoint, int, const HookView&) {};
  ForwardOptions hooked;
  hooked.hooks = &hooks;
  s = forward_batch(p, two, hooked, outs, ws);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("hooks"), std::string::npos);

  std::vector<int> empty;
  std::vector<std::span<const int>> with_empty = {a, empty};
  s = forward_batch(p, with_empty, ForwardOptions{}, outs, ws);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().message, "sequence 1 has no tokens");
}
