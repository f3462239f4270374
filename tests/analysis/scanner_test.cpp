#include "analysis/scanner.h"

#include <cstring>
#include <string>

#include <gtest/gtest.h>

#include "model/thread_pool.h"

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

namespace {

// Runs fn with the engine's pool busy, so every thread_pool_run inside it runs its tasks
// inline on one thread (model/thread_pool.h): the scan as one thread computes it.
template <class Fn>
void on_one_thread(Fn fn) {
  model::thread_pool_run(2, [&](int task) {
    if (task == 0) fn();
  });
}

// A model where the parallel parts have several tasks of uneven sizes: C = 40 is not a multiple
// of the 16 rows of G a task owns, V = 600 is two full blocks of 256 vocabulary rows and a part.
model::Parameters wider_model() {
  model::ModelConfig c;
  c.n_layer = 3;
  c.n_head = 4;
  c.n_embd = 40;
  c.n_ctx = 48;
  c.vocab_size = 600;
  c.tied = false;
  c.bos_token_id = c.eos_token_id = 599;
  auto p = model::parameters_allocate(c);
  model::parameters_init_random(p, 5);
  EXPECT_TRUE(model::parameters_pack(p, model::DtypeChoice::bf16));
  return p;
}

ScanProbes wider_probes() {
  std::vector<int> text;
  for (int i = 0; i < 400; ++i) text.push_back((i * 37 + i / 7) % 599);
  std::vector<bool> punct(600, false);
  for (int id = 0; id < 600; id += 11) punct[std::size_t(id)] = true;
  auto probes = scan_probes_build(text, punct, 600, 599, 48, ScanOptions{});
  EXPECT_TRUE(probes);
  return *probes;
}

}  // namespace

TEST(OvGram, TiledOverThePoolEqualsThePlainLoopBitForBit) {
  const model::Parameters p = wider_model();
  const std::vector<double> plain = ov_gram_plain(p);
  const std::vector<double> tiled = ov_gram(p);
  ASSERT_EQ(plain.size(), tiled.size());
  EXPECT_EQ(std::memcmp(plain.data(), tiled.data(), plain.size() * sizeof(double)), 0);
  std::vector<double> one;
  on_one_thread([&] { one = ov_gram(p); });
  EXPECT_EQ(std::memcmp(plain.data(), one.data(), plain.size() * sizeof(double)), 0);
}

TEST(ScanModel, OnThePoolGivesTheReportOfOneThreadBitForBit) {
  ASSERT_GT(model::thread_pool_size(), 1) << "the engine's pool has one thread: nothing to compare";
  const model::Parameters p = wider_model();
  const ScanProbes probes = wider_probes();
  Result<ScanReport> pool = scan_model(p, probes);
  Result<ScanReport> one = make_error(ErrorCode::internal, "not run");
  on_one_thread([&] { one = scan_model(p, probes); });
  ASSERT_TRUE(pool && one);
  ASSERT_EQ(pool->heads.size(), 12u);
  ASSERT_EQ(pool->heads.size(), one->heads.size());
  for (std::size_t i = 0; i < pool->heads.size(); ++i) {
    const HeadReport &a = pool->heads[i], &b = one->heads[i];
    EXPECT_EQ(a.name, b.name);  // the same ranking
    for (const ScoreField& f : score_fields()) {
      EXPECT_EQ((a.scores.*f.member).score, (b.scores.*f.member).score) << a.name << " " << f.name;
      EXPECT_EQ((a.scores.*f.member).chance, (b.scores.*f.member).chance) << a.name << " " << f.name;
    }
    ASSERT_EQ(a.labels.size(), b.labels.size()) << a.name;
    for (std::size_t k = 0; k < a.labels.size(); ++k) EXPECT_EQ(a.labels[k].score, b.labels[k].score);
  }
  EXPECT_EQ(pool->icl.loss_first_copy, one->icl.loss_first_copy);
  EXPECT_EQ(pool->icl.loss_second_copy, one->icl.loss_second_copy);
}

TEST(ScanModel, ReportsEachStageInOrderAndEndsEachAtItsTotal) {
  const model::Parameters p = wider_model();
  const ScanProbes probes = wider_probes();
  std::vector<ScanProgress> seen;
  ASSERT_TRUE(scan_model(p, probes, [&](const ScanProgress& s) { seen.push_back(s); }));
  std::vector<std::string> stages;
  for (const ScanProgress& s : seen) {
    if (stages.empty() || stages.back() != s.stage) stages.push_back(s.stage);
    EXPECT_LE(s.done, s.total) << s.stage;
  }
  EXPECT_EQ(stages, (std::vector<std::string>{"natural text", "repeated random", "three copies", "OV circuits",
                                              "copying scores"}));
  // the OV circuits: 3 blocks of vocabulary rows, counted to the end; the copying scores: 12 heads
  int ov_last = -1, copying_last = -1;
  for (const ScanProgress& s : seen) {
    if (std::string(s.stage) == "OV circuits") {
      ov_last = s.done;
      EXPECT_EQ(s.total, 3);
    }
    if (std::string(s.stage) == "copying scores") {
      copying_last = s.done;
      EXPECT_EQ(s.total, 12);
    }
  }
  EXPECT_EQ(ov_last, 3);
  EXPECT_EQ(copying_last, 12);
}

TEST(OvCopyingScore, ReadingEachRowOfGOnceEqualsThePlainLoopBitForBit) {
  const model::Parameters p = wider_model();
  const std::vector<double> G = ov_gram(p);
  for (int l = 0; l < p.config.n_layer; ++l)
    for (int h = 0; h < p.config.n_head; ++h) {
      const double plain = ov_copying_score_plain(p, G, l, h), fast = ov_copying_score(p, G, l, h);
      EXPECT_EQ(std::memcmp(&plain, &fast, sizeof plain), 0) << l << "." << h << ": " << plain << " vs " << fast;
    }
}
