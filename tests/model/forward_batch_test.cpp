// Tests for model/forward.h's forward_batch: several sequences as the rows of one forward give
// each sequence what a lone forward gives, on every family fixture (GPT-2's and the others'),
// with hooks that treat each row its own way and each row started from its own resid_pre.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "model/forward.h"
#include "testing/model_fixtures.h"

using namespace headlab::model;
using headlab::ErrorCode;
using headlab::Status;
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

TEST(ForwardBatch, RefusesInterventionsAcrossSeveralSequencesButRunsOneWithThem) {
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

  std::vector<float> resid(3 * std::size_t(p.config.n_embd), 0.0f);
  ForwardOptions from1;
  from1.start_layer = 1;
  from1.start_resids = {resid.data()};  // one residual for two sequences
  s = forward_batch(p, two, from1, outs, ws);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().message, "start_layer 1: start_resids has 1 residuals for 2 sequences");
  from1.start_resids.clear();
  from1.start_resid = resid.data();  // a lone forward's field: not one per sequence
  s = forward_batch(p, two, from1, outs, ws);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("for each sequence (start_resids)"), std::string::npos) << s.error().message;

  std::vector<int> empty;
  std::vector<std::span<const int>> with_empty = {a, empty};
  s = forward_batch(p, with_empty, ForwardOptions{}, outs, ws);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().message, "sequence 1 has no tokens");
}

// Hooks at every site of the model that keep a copy of each view and change some, each
// sequence its own way: `row` is the sequence the calls stand for (-1: HookView::sequence).
struct RowHooks {
  std::map<std::tuple<int, HookPoint, int>, std::vector<float>> seen;  // (sequence, point, layer) -> the view, dense
  int calls = 0;
  ForwardHooks make(const ModelConfig& c, int row) {
    ForwardHooks h(c.n_layer);
    for (const NamedHook& site : model_hooks(c)) h.want(site.point, site.layer);
    h.at = [this, row, L = c.n_layer](HookPoint p, int layer, const HookView& v) {
      const int s = row < 0 ? v.sequence : row;
      calls++;
      if (v.writable) {  // each sequence its own change, before the copy
        const float k = 0.05f * float(s + 1);
        if (p == HookPoint::resid_pre || p == HookPoint::mlp_post)
          for (int j = 0; j < v.shape[1]; j++) v.at(0, j) += k;
        if (p == HookPoint::z)
          for (int i = 0; i < v.shape[2]; i++) v.at(v.shape[0] - 1, s % v.shape[1], i) *= 1.0f + k;
        if (p == HookPoint::pattern && layer == L - 1) {  // a head's last query attends to every key alike
          const int T = v.shape[1];
          for (int key = 0; key < T; key++) v.at(s % v.shape[0], T - 1, key) = 1.0f / float(T);
        }
      }
      std::vector<float>& dst = seen[{s, p, layer}];
      dst.resize(v.size());
      v.copy_to(dst.data());
    };
    return h;
  }
};

TEST(ForwardBatch, PerRowHooksAndStartLayersGiveEachRowTheAnswerOfALoneForward) {
  for (const char* name : kAllFixtures) {
    auto expected = read_json_file(fixture_dir(name) + "/expected.json");
    Parameters p = load_fixture(name, "model.safetensors");
    const ModelConfig& c = p.config;
    const auto seqs = three_sequences(expected["ids"].get<std::vector<int>>());
    std::vector<std::span<const int>> spans(seqs.begin(), seqs.end());
    Workspace ws;
    // each sequence's own resid_pre at every layer, from an unhooked lone run
    std::vector<ForwardOutput> plain(seqs.size());
    ForwardOptions rec;
    rec.record.residual = true;
    for (std::size_t s = 0; s < seqs.size(); s++) ASSERT_TRUE(forward(p, seqs[s], rec, plain[s], ws)) << name;
    for (int start : {0, c.n_layer - 1}) {
      const std::string where = std::string(name) + ", start_layer " + std::to_string(start);
      auto resid_at = [&](std::size_t s) {
        return plain[s].record.residual.data() + std::size_t(start) * seqs[s].size() * c.n_embd;
      };
      RowHooks batch_hooks;
      const ForwardHooks bh = batch_hooks.make(c, -1);
      ForwardOptions o;
      o.hooks = &bh;
      o.loss = true;
      o.start_layer = start;
      if (start > 0)
        for (std::size_t s = 0; s < seqs.size(); s++) o.start_resids.push_back(resid_at(s));
      std::vector<ForwardOutput> batch;
      ASSERT_TRUE(forward_batch(p, spans, o, batch, ws)) << where;
      RowHooks lone_hooks;
      for (std::size_t s = 0; s < seqs.size(); s++) {
        const ForwardHooks lh = lone_hooks.make(c, static_cast<int>(s));
        ForwardOptions lo;
        lo.hooks = &lh;
        lo.loss = true;
        lo.start_layer = start;
        if (start > 0) lo.start_resid = resid_at(s);
        ForwardOutput lone;
        ASSERT_TRUE(forward(p, seqs[s], lo, lone, ws)) << where;
        EXPECT_EQ(max_diff(batch[s].logits, lone.logits), 0.0) << where << ", sequence " << s;
        EXPECT_EQ(batch[s].loss, lone.loss) << where << ", sequence " << s;
      }
      EXPECT_EQ(batch_hooks.calls, lone_hooks.calls) << where;
      ASSERT_EQ(batch_hooks.seen.size(), lone_hooks.seen.size()) << where;
      for (const auto& [key, view] : lone_hooks.seen) {
        const auto& [s, point, layer] = key;
        EXPECT_EQ(max_diff(batch_hooks.seen[key], view), 0.0)
            << where << ", sequence " << s << ": " << hook_name(point, layer);
      }
    }
  }
}

TEST(ForwardBatch, StartRowsRunOnlyTheLastRowsAndGiveTheirLogitsOfTheWholeForward) {
  // Each sequence from its own row (the middle, the first, the last), with the q, k and v of the
  // rows before from an earlier run's record: the rows that run get the whole forward's logits,
  // from the embedding and from a later block, on every family (the rotary from the start row's
  // position, GQA's KV heads, sliding windows, soft-caps).
  for (const char* name : kAllFixtures) {
    for (bool packed : {true, false}) {
      auto expected = read_json_file(fixture_dir(name) + "/expected.json");
      Parameters p = load_fixture(name, "model.safetensors", {.rows = !packed});
      const ModelConfig& c = p.config;
      const auto seqs = three_sequences(expected["ids"].get<std::vector<int>>());
      std::vector<std::span<const int>> spans(seqs.begin(), seqs.end());
      Workspace ws;
      std::vector<ForwardOutput> whole(seqs.size());
      ForwardOptions rec;
      rec.record.qkv = rec.record.residual = true;
      for (std::size_t s = 0; s < seqs.size(); s++) ASSERT_TRUE(forward(p, seqs[s], rec, whole[s], ws)) << name;
      const std::vector<int> rows = {int(seqs[0].size() / 2), 0, int(seqs[2].size()) - 1};
      for (int start : {0, c.n_layer - 1}) {
        const std::string where = std::string(name) + (packed ? " packed" : " rows") + ", start_layer " + std::to_string(start);
        ForwardOptions o;
        o.start_layer = start;
        o.start_rows = rows;
        for (std::size_t s = 0; s < seqs.size(); s++) {
          o.prefix_qkv.push_back(whole[s].record.qkv.data());
          if (start > 0) o.start_resids.push_back(whole[s].record.residual.data() + std::size_t(start) * seqs[s].size() * c.n_embd);
        }
        std::vector<ForwardOutput> outs;
        ASSERT_TRUE(forward_batch(p, spans, o, outs, ws)) << where;
        for (std::size_t s = 0; s < seqs.size(); s++) {
          const int T = static_cast<int>(seqs[s].size()), f = rows[s], V = c.vocab_size;
          ASSERT_EQ(outs[s].T, T - f) << where;
          const std::vector<float> last(whole[s].logits.begin() + std::ptrdiff_t(std::size_t(f) * V), whole[s].logits.end());
          // unpacked weights go through OpenBLAS's sgemm, which sums one row in another order than
          // a block of rows (1.9e-6 on gpt2_wide's logits on an AVX-512 "Cooperlake" kernel)
          EXPECT_LT(max_diff(outs[s].logits, last), packed ? 1e-6 : 1e-5) << where << ", sequence " << s << " from row " << f;
        }
      }
    }
  }
}

TEST(ForwardBatch, TheLastBlockOnTheLastRowOnlyGivesTheLastRowOfTheWholeForward) {
  // last_row_only: the last block's attention output, MLP, ln_f and unembedding on each
  // sequence's last row only, from the embedding, from the last block, from ln_f alone, with and
  // without start_rows: the last row's logits of the same batch run on every row, and of each
  // sequence's lone forward, bit for bit on the packed weights (the trainer's float32 rows pick
  // sgemm's kernels by the row count: to 1e-5, a few float32 steps of the same batch's logits).
  for (const char* name : kAllFixtures) {
    for (bool packed : {true, false}) {
      auto expected = read_json_file(fixture_dir(name) + "/expected.json");
      Parameters p = load_fixture(name, "model.safetensors", {.rows = !packed});
      const ModelConfig& c = p.config;
      const auto seqs = three_sequences(expected["ids"].get<std::vector<int>>());
      std::vector<std::span<const int>> spans(seqs.begin(), seqs.end());
      Workspace ws;
      std::vector<ForwardOutput> whole(seqs.size());
      ForwardOptions rec;
      rec.record.qkv = rec.record.residual = true;
      for (std::size_t s = 0; s < seqs.size(); s++) ASSERT_TRUE(forward(p, seqs[s], rec, whole[s], ws)) << name;
      for (bool from_rows : {false, true})
        for (int start : {0, c.n_layer - 1, c.n_layer}) {
          const std::string where = std::string(name) + (packed ? " packed" : " rows") + ", start_layer " +
                                    std::to_string(start) + (from_rows ? ", start_rows" : "");
          ForwardOptions o;
          o.last_row_only = true;
          o.start_layer = start;
          for (std::size_t s = 0; s < seqs.size(); s++) {
            if (from_rows) {
              o.start_rows.push_back(int(seqs[s].size()) / 2);
              o.prefix_qkv.push_back(whole[s].record.qkv.data());
            }
            if (start > 0) o.start_resids.push_back(whole[s].record.residual.data() + std::size_t(start) * seqs[s].size() * c.n_embd);
          }
          std::vector<ForwardOutput> outs, every_row;
          ASSERT_TRUE(forward_batch(p, spans, o, outs, ws)) << where;
          o.last_row_only = false;
          ASSERT_TRUE(forward_batch(p, spans, o, every_row, ws)) << where;
          for (std::size_t s = 0; s < seqs.size(); s++) {
            const int T = static_cast<int>(seqs[s].size()), V = c.vocab_size;
            ASSERT_EQ(outs[s].T, 1) << where;
            auto last_row = [&](const ForwardOutput& out) {
              return std::vector<float>(out.logits.end() - V, out.logits.end());
            };
            if (packed) {
              EXPECT_EQ(outs[s].logits, last_row(every_row[s])) << where << ", sequence " << s;
              EXPECT_EQ(outs[s].logits, last_row(whole[s])) << where << ", sequence " << s << " (T " << T << ")";
            } else {
              EXPECT_LT(max_diff(outs[s].logits, last_row(every_row[s])), 1e-5) << where << ", sequence " << s;
            }
          }
        }
    }
  }
}

TEST(ForwardBatch, TheLastRowOnlyIsRefusedWithWhatReadsEveryRow) {
  Parameters p = load_fixture("gpt2_tiny", "model.safetensors");
  const std::vector<int> ids = {1, 2, 3, 4};
  Workspace ws;
  ForwardOutput out;
  ForwardOptions o;
  o.last_row_only = true;
  o.loss = true;
  Status s = forward(p, ids, o, out, ws);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("read other rows"), std::string::npos) << s.error().message;
  o.loss = false;
  o.record.pattern = true;
  ASSERT_FALSE(forward(p, ids, o, out, ws));
  o.record.pattern = false;
  ASSERT_TRUE(forward(p, ids, o, out, ws));
  EXPECT_EQ(out.T, 1);
  EXPECT_EQ(out.logits.size(), std::size_t(p.config.vocab_size));
}

TEST(ForwardBatch, StartRowsAreRefusedWithoutThePrefixOrWithWhatReadsEveryRow) {
  Parameters p = load_fixture("gpt2_tiny", "model.safetensors");
  const std::vector<int> ids = {1, 2, 3, 4};
  Workspace ws;
  ForwardOutput whole, out;
  ForwardOptions rec;
  rec.record.qkv = true;
  ASSERT_TRUE(forward(p, ids, rec, whole, ws));
  ForwardOptions o;
  o.start_rows = {2};
  o.prefix_qkv = {nullptr};
  Status s = forward(p, ids, o, out, ws);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().message, "start row 2 of sequence 0 needs the q, k and v of the rows before it (prefix_qkv)");
  o.prefix_qkv = {whole.record.qkv.data()};
  o.start_rows = {4};
  s = forward(p, ids, o, out, ws);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().message, "start row 4 of sequence 0 is outside its rows 0..3");
  o.start_rows = {2};
  o.loss = true;
  s = forward(p, ids, o, out, ws);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("read every row"), std::string::npos) << s.error().message;
  o.loss = false;
  ASSERT_TRUE(forward(p, ids, o, out, ws));
  EXPECT_EQ(out.T, 2);
}
