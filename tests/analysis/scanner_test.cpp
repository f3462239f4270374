#include "analysis/scanner.h"
#include "analysis/head_scores.h"
#include "model/parameters.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

using namespace headlab;
using namespace headlab::analysis;

namespace {

std::vector<std::string> words() {
  const std::string text =
      "the cat sat on the mat . the dog ran to the park , and the cat saw the dog . "
      "a bird sang in the tree ; the dog barked at the bird , and the bird flew away . "
      "when the rain came , the cat ran home and the dog slept by the door .";
  std::vector<std::string> out;
  std::string w;
  for (char c : text) {
    if (c == ' ') {
      if (!w.empty()) out.push_back(w), w.clear();
    } else {
      w += c;
    }
  }
  if (!w.empty()) out.push_back(w);
  return out;
}

const HeadReport& find(const ScanReport& r, const std::string& name) {
  for (const HeadReport& h : r.heads)
    if (h.name == name) return h;
  ADD_FAILURE() << "no head " << name;
  return r.heads.front();
}

bool has_label(const HeadReport& h, const std::string& label) {
  for (const Label& l : h.labels)
    if (l.name == label) return true;
  return false;
}

double best_other(const ScanReport& r, const std::string& except, Scored HeadScores::*m) {
  double best = 0;
  for (const HeadReport& h : r.heads)
    if (h.name != except) best = std::max(best, (h.scores.*m).score);
  return best;
}

model::ModelConfig tiny_config() {
  model::ModelConfig c;
  c.n_layer = 2;
  c.n_head = 2;
  c.n_embd = 16;
  c.n_ctx = 32;
  c.vocab_size = 40;
  c.mlp = false;
  c.bos_token_id = c.eos_token_id = 39;
  return c;
}

}  // namespace

TEST(ScanConstructedHeads, EachHeadComesOutAsWhatItIs) {
  ScanReport r = scan_constructed_heads(words(), ScanOptions{});
  ASSERT_EQ(r.heads.size(), 5u);
  const HeadReport& prev = find(r, "previous");
  const HeadReport& first = find(r, "first");
  const HeadReport& same = find(r, "same-word");
  const HeadReport& ind = find(r, "induction");
  const HeadReport& punct = find(r, "punctuation");
  EXPECT_EQ(prev.labels.front().name, "previous_token");
  EXPECT_GT(prev.scores.previous_token.score, best_other(r, "previous", &HeadScores::previous_token));
  EXPECT_EQ(first.labels.front().name, "first_token");  // no weights: cannot be told a sink
  EXPECT_GT(first.scores.first_token.score, best_other(r, "first", &HeadScores::first_token));
  EXPECT_TRUE(has_label(same, "duplicate_token"));
  EXPECT_GT(same.scores.duplicate_token.score, best_other(r, "same-word", &HeadScores::duplicate_token));
  EXPECT_TRUE(has_label(ind, "induction"));
  EXPECT_GT(ind.scores.induction.score, best_other(r, "induction", &HeadScores::induction));
  EXPECT_GT(ind.scores.prefix_matching.score, best_other(r, "induction", &HeadScores::prefix_matching));
  EXPECT_TRUE(has_label(punct, "punctuation"));
  EXPECT_FALSE(has_label(prev, "induction"));
}

TEST(ScanModel, RandomModelGetsNoConfidentLabelAndHasEveryScore) {
  auto params = model::parameters_allocate(tiny_config());
  model::parameters_init_random(params, 1);
  std::vector<int> text;
  for (int i = 0; i < 200; ++i) text.push_back((i * 7) % 39);
  std::vector<bool> punct(40, false);
  punct[5] = true;
  auto probes = scan_probes_build(text, punct, 40, 39, 32, ScanOptions{});
  ASSERT_TRUE(probes);
  EXPECT_EQ(probes->R, 15);
  auto r = scan_model(params, *probes);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->heads.size(), 4u);
  for (const HeadReport& h : r->heads) {
    EXPECT_TRUE(h.scores.has_weights);
    EXPECT_NEAR(h.scores.previous_token.score, h.scores.previous_token.chance, 0.1);  // near uniform at init
    EXPECT_TRUE(h.labels.empty()) << h.name << " " << h.labels.front().name;
  }
  ASSERT_TRUE(r->has_icl);
  EXPECT_NEAR(r->icl.ratio(), 1.0, 0.05);  // a random model learns nothing in context
}

TEST(ScanModel, GivesTheSameScoresWhenTheMatricesArePacked) {
  // the copying score reads W_V, W_O, wte and the unembedding through the accessor
  auto rows = model::parameters_allocate(tiny_config());
  model::parameters_init_random(rows, 2);
  auto packed = model::parameters_allocate(tiny_config());
  model::parameters_init_random(packed, 2);
  ASSERT_TRUE(model::parameters_pack(packed));
  std::vector<int> text;
  for (int i = 0; i < 200; ++i) text.push_back((i * 7) % 39);
  auto probes = scan_probes_build(text, std::vector<bool>(40, false), 40, 39, 32, ScanOptions{});
  ASSERT_TRUE(probes);
  auto a = scan_model(rows, *probes);
  auto b = scan_model(packed, *probes);
  ASSERT_TRUE(a && b);
  ASSERT_EQ(a->heads.size(), b->heads.size());
  for (std::size_t i = 0; i < a->heads.size(); ++i) {
    EXPECT_EQ(a->heads[i].name, b->heads[i].name);
    EXPECT_NEAR(a->heads[i].scores.copying.score, b->heads[i].scores.copying.score, 1e-6) << a->heads[i].name;
    EXPECT_NEAR(a->heads[i].scores.previous_token.score, b->heads[i].scores.previous_token.score, 1e-5) << a->heads[i].name;
  }
}

TEST(ScanProbesBuild, RefusesTextShorterThanAWindow) {
  auto probes = scan_probes_build({1, 2, 3}, std::vector<bool>(40, false), 40, 39, 32, ScanOptions{});
  ASSERT_FALSE(probes);
  EXPECT_EQ(probes.error().code, ErrorCode::invalid_argument);
}

TEST(LabelHead, ListsEveryPassingRoleAndTellsASinkFromAReader) {
  HeadScores s;
  s.has_weights = true;
  s.previous_token = {0.7, 0.1};
  s.first_token = {0.6, 0.1};
  s.first_token_value_weighted = {0.05, 0.1};
  s.copying = {0.5, 0};
  s.induction = {0.1, 0.05};
  auto labels = label_head(s);
  ASSERT_EQ(labels.size(), 2u);
  EXPECT_EQ(labels[0].name, "previous_token");  // margin 0.3 beats the sink's 0.1
  EXPECT_EQ(labels[1].name, "sink");
  s.first_token_value_weighted = {0.55, 0.1};
  EXPECT_EQ(label_head(s)[1].name, "first_token");
}

TEST(LabelHead, InductionNeedsAPositiveCopyingScore) {
  HeadScores s;
  s.has_weights = true;
  s.induction = {0.8, 0.05};
  s.copying = {-0.4, 0};
  EXPECT_TRUE(label_head(s).empty());
  s.copying = {0.6, 0};
  EXPECT_EQ(label_head(s).front().name, "induction");
}

// The copying score of one head by plain loops, as the definition reads (Elhage et al. 2021):
// the eigenvalues of M = Wv_h diag(ln1w) E^T Wu diag(lnfw) Wo_h. The scanner computes the same
// with float64 products (dgemm) split over the engine's pool; this is its reference.
double copying_by_loops(const model::Parameters& p, int l, int h) {
  const model::ModelConfig& c = p.config;
  const int C = c.n_embd, HS = c.head_size(), D = c.q_width(), V = c.vocab_size;
  std::vector<float> E(std::size_t(V) * C), Wu(std::size_t(V) * C), wv(std::size_t(HS) * C), wo(std::size_t(C) * D);
  model::parameters_read_rows(p, &model::ParameterTensors::wte, 0, 0, V, E.data());
  model::parameters_read_rows(p, model::parameters_unembedding_tensor(c), 0, 0, V, Wu.data());
  const std::size_t v_row = std::size_t(D) + std::size_t(c.kv_heads()) * HS + std::size_t(c.kv_head_of(h)) * HS;
  model::parameters_read_rows(p, &model::ParameterTensors::qkvw, l, int(v_row), HS, wv.data());
  model::parameters_read_rows(p, &model::ParameterTensors::attprojw, l, 0, C, wo.data());
  std::vector<double> G(std::size_t(C) * C, 0.0);
  for (int v = 0; v < V; ++v)
    for (int i = 0; i < C; ++i)
      for (int j = 0; j < C; ++j) G[std::size_t(i) * C + j] += double(E[std::size_t(v) * C + i]) * Wu[std::size_t(v) * C + j];
  for (int i = 0; i < C; ++i)
    for (int j = 0; j < C; ++j) G[std::size_t(i) * C + j] *= p.t.lnfw[j];
  std::vector<double> M(std::size_t(HS) * HS, 0.0);
  for (int i = 0; i < HS; ++i)
    for (int j = 0; j < HS; ++j) {
      double s = 0.0;
      for (int k = 0; k < C; ++k) {
        double a = 0.0;
        for (int m = 0; m < C; ++m) a += double(wv[std::size_t(i) * C + m]) * p.t.ln1w[std::size_t(l) * C + m] * G[std::size_t(m) * C + k];
        s += a * wo[std::size_t(k) * D + h * HS + j];
      }
      M[std::size_t(i) * HS + j] = s;
    }
  std::vector<double> re, im;
  EXPECT_TRUE(eigenvalues(M, HS, re, im));
  return copying_score_from_eigenvalues(re, im);
}

TEST(ScanModel, CopyingScoresSplitOverThePoolEqualThePlainLoopsOfTheirDefinition) {
  model::ModelConfig c = tiny_config();
  c.n_embd = 32;
  c.n_head = 4;
  c.vocab_size = 2600;  // three blocks of the vocabulary, the last one short
  c.bos_token_id = c.eos_token_id = 2599;
  auto params = model::parameters_allocate(c);
  model::parameters_init_random(params, 3);
  std::vector<int> text;
  for (int i = 0; i < 200; ++i) text.push_back((i * 7) % 39);
  auto probes = scan_probes_build(text, std::vector<bool>(2600, false), 2600, 2599, 32, ScanOptions{});
  ASSERT_TRUE(probes);
  auto r = scan_model(params, *probes);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->heads.size(), 8u);
  for (const HeadReport& h : r->heads)
    EXPECT_NEAR(h.scores.copying.score, copying_by_loops(params, h.layer, h.head), 1e-9) << h.name;
}
