// Tests for composition scores and circuits (research/composition.h): the factored scores
// equal TransformerLens's definition computed on the full (C, C) matrices, the head weights
// reproduce the forward's q, v and result, the built-in model's induction circuit shows, and
// the circuits' top pairs and eigenvalues match a brute-force (V, V) computation.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "formats/model_files.h"
#include "model/forward.h"
#include "model/hooks.h"
#include "research/composition.h"
#include "testing/model_fixtures.h"

using namespace headlab;
using namespace headlab::model;
using namespace headlab::research;
using headlab::testing::load_fixture;

namespace {

// (n, m) = (n, k) @ (k, m), double
std::vector<double> mul(const std::vector<double>& a, const std::vector<double>& b, int n, int k, int m) {
  std::vector<double> c(std::size_t(n) * m, 0.0);
  for (int i = 0; i < n; i++)
    for (int x = 0; x < k; x++)
      for (int j = 0; j < m; j++) c[std::size_t(i) * m + j] += a[std::size_t(i) * k + x] * b[std::size_t(x) * m + j];
  return c;
}
std::vector<double> transpose(const std::vector<float>& a, int n, int m) {
  std::vector<double> t(std::size_t(n) * m);
  for (int i = 0; i < n; i++)
    for (int j = 0; j < m; j++) t[std::size_t(j) * n + i] = a[std::size_t(i) * m + j];
  return t;
}
std::vector<double> widen(const std::vector<float>& a) { return {a.begin(), a.end()}; }
double fro(const std::vector<double>& a) {
  double s = 0;
  for (double x : a) s += x * x;
  return std::sqrt(s);
}

// TL's definition on the full (C, C) matrices: ||A B|| / (||A|| ||B||).
double brute_score(const HeadWeights& s, const HeadWeights& r, CompositionKind kind) {
  const int C = s.C, HS = s.HS;
  const auto ov = mul(widen(s.W_V), widen(s.W_O), C, HS, C);
  std::vector<double> right;
  if (kind == CompositionKind::q) right = mul(widen(r.W_Q), transpose(r.W_K, C, HS), C, HS, C);
  if (kind == CompositionKind::k) right = mul(widen(r.W_K), transpose(r.W_Q, C, HS), C, HS, C);
  if (kind == CompositionKind::v) right = mul(widen(r.W_V), widen(r.W_O), C, HS, C);
  return fro(mul(ov, right, C, C, C)) / (fro(ov) * fro(right));
}

}  // namespace

TEST(CompositionScores, EqualTransformerLensDefinitionOnTheFullMatrices) {
  for (const char* name : {"gpt2_tiny", "families/llama", "families/pythia", "families/gemma2"}) {
    SCOPED_TRACE(name);
    Parameters p = load_fixture(name, "model.safetensors");
    for (bool fold : {false, true}) {
      auto s = composition_scores(p, {.fold_ln = fold, .baseline_samples = 4});
      ASSERT_TRUE(s) << s.error().message;
      EXPECT_EQ(s->fold_ln, fold);
      const int L = p.config.n_layer, NH = p.config.n_head;
      for (int l1 = 0; l1 < L; l1++)
        for (int h1 = 0; h1 < NH; h1++)
          for (int l2 = 0; l2 < L; l2++)
            for (int h2 = 0; h2 < NH; h2++)
              for (CompositionKind kind : {CompositionKind::q, CompositionKind::k, CompositionKind::v}) {
                const float got = s->at(kind, l1, h1, l2, h2);
                if (l1 >= l2) {
                  EXPECT_EQ(got, 0.0f);
                  continue;
                }
                const double want = brute_score(head_weights(p, l1, h1, fold), head_weights(p, l2, h2, fold), kind);
                EXPECT_NEAR(got, want, 1e-4) << composition_kind_name(kind) << " " << l1 << "." << h1 << " -> " << l2
                                             << "." << h2;
              }
    }
  }
}

// The raw head weights in TL's orientation give the forward's own q, v (before the rotary) and
// result: v_h = ln_1(x) @ W_V + b_v,  result_h = z_h @ W_O.
TEST(HeadWeights, ReproduceTheForwardsQueriesValuesAndResults) {
  for (const char* name : {"gpt2_tiny", "families/llama", "families/pythia"}) {
    SCOPED_TRACE(name);
    Parameters p = load_fixture(name, "model.safetensors", {.rows = true});
    const ModelConfig& c = p.config;
    const int C = c.n_embd, HS = c.head_size(), NH = c.n_head, QKV = c.qkv_width(), D = c.q_width();
    const std::vector<int> ids = {1, 5, 9, 3};
    const int T = 4, l = c.n_layer - 1;
    ForwardHooks hooks(c.n_layer);
    std::vector<float> ln, q, v, z, result;
    for (HookPoint pt : {HookPoint::ln1_normalized, HookPoint::q, HookPoint::v, HookPoint::z, HookPoint::result}) hooks.want(pt, l);
    hooks.at = [&](HookPoint pt, int, const HookView& view) {
      std::vector<float>& dst = pt == HookPoint::ln1_normalized ? ln : pt == HookPoint::q ? q : pt == HookPoint::v ? v
                                : pt == HookPoint::z ? z : result;
      dst.resize(view.size());
      view.copy_to(dst.data());
    };
    ForwardOptions opt;
    opt.hooks = &hooks;
    ForwardOutput out;
    Workspace ws;
    ASSERT_TRUE(forward(p, ids, opt, out, ws));
    double worst = 0;
    for (int h = 0; h < NH; h++) {
      const HeadWeights w = head_weights(p, l, h, false);
      const int kvh = c.kv_head_of(h);
      for (int t = 0; t < T; t++)
        for (int j = 0; j < HS; j++) {
          double qs = c.qkv_bias ? p.t.qkvb[std::size_t(l) * QKV + h * HS + j] : 0.0;
          double vs = c.qkv_bias ? p.t.qkvb[std::size_t(l) * QKV + D + c.kv_heads() * HS + kvh * HS + j] : 0.0;
          for (int i = 0; i < C; i++) {
            qs += double(ln[std::size_t(t) * C + i]) * w.W_Q[std::size_t(i) * HS + j];
            vs += double(ln[std::size_t(t) * C + i]) * w.W_V[std::size_t(i) * HS + j];
          }
          worst = std::max(worst, std::fabs(qs - q[(std::size_t(t) * NH + h) * HS + j]));
          worst = std::max(worst, std::fabs(vs - v[(std::size_t(t) * c.kv_heads() + kvh) * HS + j]));
        }
      for (int t = 0; t < T; t++)
        for (int i = 0; i < C; i++) {
          double r = 0;
          for (int j = 0; j < HS; j++) r += double(z[(std::size_t(t) * NH + h) * HS + j]) * w.W_O[std::size_t(j) * C + i];
          worst = std::max(worst, std::fabs(r - result[(std::size_t(t) * NH + h) * C + i]));
        }
    }
    EXPECT_LT(worst, 1e-4);
  }
}

// Elhage et al.'s induction circuit in the built-in model: the previous-token head 0.3 writes
// what the induction head 1.2's keys read (K-composition), far above random matrices'.
TEST(CompositionScores, ThePreviousTokenHeadFeedsTheInductionHeadsKeysInTheBuiltInModel) {
  auto p = model_load(std::string(HEADLAB_SOURCE_DIR) + "/models/headlab-tiny");
  ASSERT_TRUE(p) << p.error().message;
  int last_done = -1, last_total = -1;
  auto s = composition_scores(*p, {.progress = [&](int done, int total) { last_done = done, last_total = total; }});
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(last_done, 1);  // every receiver layer reported: layer 1 of 1
  EXPECT_EQ(last_total, 1);
  const float k03_12 = s->at(CompositionKind::k, 0, 3, 1, 2);
  std::printf("headlab-tiny K-composition 0.3 -> 1.2: %.4f; Q: %.4f; V: %.4f; random baseline %.4f +- %.4f (%d samples)\n",
              k03_12, s->at(CompositionKind::q, 0, 3, 1, 2), s->at(CompositionKind::v, 0, 3, 1, 2), s->baseline_mean,
              s->baseline_std, s->baseline_samples);
  EXPECT_GT(k03_12, s->baseline_mean + 5 * s->baseline_std);
  EXPECT_GT(k03_12, 2 * s->baseline_mean);
  // and 0.3 is the layer-0 head whose output 1.2's keys read most
  for (int h = 0; h < 4; h++)
    if (h != 3) {
      EXPECT_GT(k03_12, s->at(CompositionKind::k, 0, h, 1, 2)) << "head 0." << h;
    }
}

TEST(HeadCircuits, TopPairsAndTheEigenvalueSumMatchTheFullVocabularyMatrices) {
  Parameters p = load_fixture("gpt2_tiny", "model.safetensors", {.rows = true});
  const ModelConfig& c = p.config;
  const int V = c.vocab_size, C = c.n_embd, HS = c.head_size();
  auto r = head_circuits(p, 1, 0, {.top = 5});
  ASSERT_TRUE(r) << r.error().message;
  const HeadWeights w = head_weights(p, 1, 0, false);
  const std::vector<double> E = widen(std::vector<float>(p.t.wte, p.t.wte + std::size_t(V) * C));  // (V, C)
  const std::vector<double> U = transpose(std::vector<float>(p.t.wte, p.t.wte + std::size_t(V) * C), V, C);  // (C, V)
  const auto ov = mul(mul(mul(E, widen(w.W_V), V, C, HS), widen(w.W_O), V, HS, C), U, V, C, V);
  const auto qk = mul(mul(mul(E, widen(w.W_Q), V, C, HS), transpose(w.W_K, C, HS), V, HS, C), U, V, C, V);
  auto check_top = [&](const std::vector<double>& full, const std::vector<TokenPair>& top) {
    std::vector<double> sorted = full;
    std::sort(sorted.rbegin(), sorted.rend());
    ASSERT_EQ(top.size(), 5u);
    for (int i = 0; i < 5; i++) {
      EXPECT_NEAR(top[i].value, sorted[i], 1e-4);
      EXPECT_NEAR(full[std::size_t(top[i].row) * V + top[i].col], top[i].value, 1e-4);
    }
  };
  check_top(ov, r->ov_top);
  check_top(qk, r->qk_top);
  // the eigenvalues' sum is the trace of the (V, V) OV circuit; |lambda| sum bounds it
  double trace = 0, sum = 0, abs_sum = 0;
  for (int v = 0; v < V; v++) trace += ov[std::size_t(v) * V + v];
  for (auto& l : r->ov_eigenvalues) sum += l.real(), abs_sum += std::abs(l);
  EXPECT_NEAR(sum, trace, 1e-3 * (1 + std::fabs(trace)));
  EXPECT_NEAR(r->copying_score, sum / abs_sum, 1e-9);
  EXPECT_LE(std::fabs(r->copying_score), 1.0);
  int self = 0;
  for (int v = 0; v < V; v++) {
    const double* row = ov.data() + std::size_t(v) * V;
    if (std::max_element(row, row + V) - row == v) self++;
  }
  EXPECT_NEAR(r->ov_self_top1, double(self) / V, 1e-9);
}

TEST(HeadCircuits, TheBuiltInInductionHeadCopies) {
  auto p = model_load(std::string(HEADLAB_SOURCE_DIR) + "/models/headlab-tiny");
  ASSERT_TRUE(p) << p.error().message;
  int rows = 0, total = 0;
  auto r = head_circuits(*p, 1, 2, {.top = 3, .progress = [&](int done, int all) { rows = done, total = all; }});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(rows, 2 * 4096);  // both circuits' rows scanned
  EXPECT_EQ(total, 2 * 4096);
  std::printf("headlab-tiny head 1.2: copying score %.3f, OV self-top-1 %.3f\n", r->copying_score, r->ov_self_top1);
  EXPECT_GT(r->copying_score, 0.5);
}

TEST(CompositionScores, BadRequestsAreRefusedByName) {
  Parameters p = load_fixture("gpt2_tiny", "model.safetensors");
  auto s = composition_scores(p, {.baseline_samples = 0});
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("baseline_samples"), std::string::npos);
  auto r = head_circuits(p, 2, 0, {});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::invalid_argument);
  r = head_circuits(p, 0, 2, {});
  ASSERT_FALSE(r);
  r = head_circuits(p, 0, 0, {.top = 0});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("top"), std::string::npos);
}

// --fold-ln's weights are TL's processed ones: ln_1's weight folded in and (LayerNorm) the
// reading weights centred, so the queries are the raw residual over the norm's scale times
// the folded W_Q, plus the biases (b_q and ln_1's bias through the raw W_Q).
TEST(HeadWeights, FoldedWeightsReadTheResidualOverTheNormsScale) {
  for (const char* name : {"gpt2_tiny", "families/llama", "families/gemma2"}) {
    SCOPED_TRACE(name);
    Parameters p = load_fixture(name, "model.safetensors", {.rows = true});
    const ModelConfig& c = p.config;
    const int C = c.n_embd, HS = c.head_size(), NH = c.n_head, QKV = c.qkv_width();
    const bool ln = c.norm == ModelConfig::Norm::layernorm;
    const std::vector<int> ids = {2, 7, 4};
    const int T = 3, l = 1;
    ForwardHooks hooks(c.n_layer);
    std::vector<float> resid, scale, q;
    for (HookPoint pt : {HookPoint::resid_pre, HookPoint::ln1_scale, HookPoint::q}) hooks.want(pt, l);
    hooks.at = [&](HookPoint pt, int, const HookView& view) {
      std::vector<float>& dst = pt == HookPoint::resid_pre ? resid : pt == HookPoint::ln1_scale ? scale : q;
      dst.resize(view.size());
      view.copy_to(dst.data());
    };
    ForwardOptions opt;
    opt.hooks = &hooks;
    ForwardOutput out;
    Workspace ws;
    ASSERT_TRUE(forward(p, ids, opt, out, ws));
    double worst = 0;
    for (int h = 0; h < NH; h++) {
      const HeadWeights raw = head_weights(p, l, h, false), folded = head_weights(p, l, h, true);
      for (int t = 0; t < T; t++)
        for (int j = 0; j < HS; j++) {
          double want = q[(std::size_t(t) * NH + h) * HS + j];
          if (c.qkv_bias) want -= p.t.qkvb[std::size_t(l) * QKV + h * HS + j];
          double got = 0;
          for (int i = 0; i < C; i++) {
            if (ln) want -= double(p.t.ln1b[std::size_t(l) * C + i]) * raw.W_Q[std::size_t(i) * HS + j];
            got += double(resid[std::size_t(t) * C + i]) / scale[t] * folded.W_Q[std::size_t(i) * HS + j];
          }
          worst = std::max(worst, std::fabs(got - want));
        }
    }
    EXPECT_LT(worst, 1e-4);
  }
}

// The work the server bounds a request by counts every step: the baseline's samples (Gaussian
// draws, two factors and a product each) and every head's factors, not only the scores'
// products. On one head of 640 channels those products are 7.9e8 multiply-adds; the whole
// request's default 64 samples are fifty times that.
TEST(CompositionCost, GrowsWithTheBaselineSamplesAndTheModelWidthAsTheWorkDoes) {
  ModelConfig c;
  c.n_layer = 2, c.n_head = 1, c.n_embd = 640;
  const CompositionCost one = composition_cost(c, {.baseline_samples = 1});
  const CompositionCost many = composition_cost(c, {.baseline_samples = 64});
  EXPECT_NEAR(one.products, 3.0 * 640 * 640 * 640, 0.01 * one.products);  // and the sums of their squares
  EXPECT_DOUBLE_EQ(many.baseline, 64 * one.baseline);
  EXPECT_EQ(many.products, one.products);
  EXPECT_GT(many.total(), 50 * many.products);
  EXPECT_GT(one.factors, one.products);
  ModelConfig wide = c;
  wide.n_embd = 1280;  // twice the width: every (C, HS) step twice as long, each with HS twice as large
  const CompositionCost w = composition_cost(wide, {.baseline_samples = 64});
  EXPECT_GT(w.total(), 7 * many.total());
  EXPECT_LT(w.total(), 9 * many.total());
  EXPECT_GT(composition_cost(c, {.fold_ln = true}).weights, composition_cost(c, {}).weights);
}
