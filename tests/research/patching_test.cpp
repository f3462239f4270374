// Tests for research/patching.h: every sweep equals TransformerLens's loop (one full forward
// per index, a hook that overwrites the slice, every logit), written here independently of
// patching.cpp; each shortcut alone equals it too; the identities a sweep must show; bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>

#include "model/forward.h"
#include "model/hooks.h"
#include "model/next_token.h"
#include "research/patching.h"
#include "testing/model_fixtures.h"

using namespace headlab::model;
using namespace headlab::research;
using headlab::testing::load_fixture;

namespace {

// Five random-looking tokens with one changed at `at`: a clean / corrupted pair.
PatchPair pair_for(const Parameters& p, int T, int at, int salt = 0) {
  const int V = p.config.vocab_size;
  PatchPair pair;
  for (int t = 0; t < T; t++) pair.clean.push_back((11 * t + 5 + salt) % V);
  pair.corrupted = pair.clean;
  pair.corrupted[std::size_t(at)] = (pair.clean[std::size_t(at)] + 7) % V;
  pair.answer = (3 + salt) % V;
  pair.wrong = (17 + salt) % V;
  return pair;
}

// ---- the reference: TransformerLens's generic_activation_patch, one index at a time ----

struct RefPart {
  HookPoint point;
  std::string kind;  // "row", "head_all", "head_pos", "pattern_head", "pattern_dest"
};
RefPart ref_part(PatchWhat w) {
  std::string n(patch_what_name(w));
  auto point = [&](std::string_view stem) {
    if (stem == "resid_pre") return HookPoint::resid_pre;
    if (stem == "resid_mid") return HookPoint::resid_mid;
    if (stem == "attn_out") return HookPoint::attn_out;
    if (stem == "mlp_out") return HookPoint::mlp_out;
    if (stem == "z") return HookPoint::z;
    if (stem == "q") return HookPoint::q;
    if (stem == "k") return HookPoint::k;
    if (stem == "v") return HookPoint::v;
    return HookPoint::pattern;
  };
  if (n.find("_all_pos") != std::string::npos) {
    std::string stem = n.substr(0, n.find("_all_pos"));
    return {point(stem), stem == "pattern" ? "pattern_head" : "head_all"};
  }
  if (n.find("_by_pos") != std::string::npos) {
    std::string stem = n.substr(0, n.find("_by_pos"));
    return {point(stem), stem == "pattern" ? "pattern_dest" : "head_pos"};
  }
  return {point(n), "row"};
}

double ref_metric(const ForwardOutput& out, const std::vector<int>& ids, const PatchPair& pair, PatchMetric m) {
  const float* last = out.logits.data() + std::size_t(out.T - 1) * out.V;
  switch (m) {
    case PatchMetric::loss: return mean_next_token_loss(out.logits, ids, out.V);
    case PatchMetric::logprob: return last[pair.answer] - row_log_sum_exp(last, out.V);
    default: return double(last[pair.answer]) - last[pair.wrong];
  }
}

// Adds each steering (coef x its row) at its layer's resid_pre, written here by hand: the
// reference's steering hook, called before its patching hook as TL would with the steering
// hook added first.
void steer_by_hand(const std::vector<Steering>& steer, HookPoint point, int layer, const HookView& v) {
  if (point != HookPoint::resid_pre) return;
  const int T = v.shape[0], C = v.shape[1];
  for (const Steering& s : steer) {
    if (s.layer != layer) continue;
    for (int t = s.from; t < T && (s.rows == 1 || t - s.from < s.rows); t++) {
      const std::size_t row = s.rows == 1 ? 0 : std::size_t(t - s.from);
      for (int i = 0; i < C; i++) v.at(t, i) += s.coef * s.vector[row * C + i];
    }
  }
}

// Values in TL's axis order over every layer and position, for one pair (raw metric); every
// run steered by `steer`.
std::vector<double> tl_loop(const Parameters& p, const PatchPair& pair, PatchWhat w, PatchMetric m, bool noising,
                            const std::vector<Steering>& steer = {}) {
  const ModelConfig& c = p.config;
  const RefPart part = ref_part(w);
  const std::vector<int>& base = noising ? pair.clean : pair.corrupted;
  const std::vector<int>& source = noising ? pair.corrupted : pair.clean;
  const int T = static_cast<int>(base.size()), L = c.n_layer;
  const int H = part.point == HookPoint::k || part.point == HookPoint::v ? c.kv_heads() : c.n_head;
  // the clean cache: the point at every layer, dense
  std::map<int, std::vector<float>> cache;
  std::map<int, HookView> shape;
  ForwardHooks rec(L);
  rec.want(part.point, HookLayer::every);
  for (const Steering& s : steer) rec.want(HookPoint::resid_pre, s.layer);
  rec.at = [&](HookPoint point, int l, const HookView& v) {
    steer_by_hand(steer, point, l, v);
    if (point != part.point) return;
    cache[l].resize(v.size());
    v.copy_to(cache[l].data());
    shape[l] = v;
  };
  ForwardOptions o;
  o.hooks = &rec;
  ForwardOutput out;
  Workspace ws;
  EXPECT_TRUE(forward(p, source, o, out, ws));
  std::vector<double> values;
  auto run = [&](int l, auto write) {
    ForwardHooks hk(L);
    hk.want(part.point, l);
    for (const Steering& st : steer) hk.want(HookPoint::resid_pre, st.layer);
    hk.at = [&](HookPoint point, int layer, const HookView& v) {
      steer_by_hand(steer, point, layer, v);
      if (point != part.point || layer != l) return;
      const HookView& s = shape[l];
      const float* src = cache[l].data();
      auto dense = [&](int i, int j, int k) { return src[(std::size_t(i) * s.shape[1] + j) * (s.rank > 2 ? s.shape[2] : 1) + k]; };
      write(v, dense);
    };
    ForwardOptions po;
    po.hooks = &hk;
    ForwardOutput pout;
    EXPECT_TRUE(forward(p, base, po, pout, ws));
    values.push_back(ref_metric(pout, base, pair, m));
  };
  const int C = c.n_embd, HS = c.head_size();
  for (int l = 0; l < L; l++) {
    if (part.kind == "row") {
      for (int pos = 0; pos < T; pos++)
        run(l, [&](const HookView& v, auto dense) {
          for (int i = 0; i < C; i++) v.at(pos, i) = dense(pos, i, 0);
        });
    } else if (part.kind == "head_all") {
      for (int h = 0; h < H; h++)
        run(l, [&](const HookView& v, auto dense) {
          for (int t = 0; t < T; t++)
            for (int i = 0; i < HS; i++) v.at(t, h, i) = dense(t, h, i);
        });
    } else if (part.kind == "head_pos") {
      for (int pos = 0; pos < T; pos++)
        for (int h = 0; h < H; h++)
          run(l, [&](const HookView& v, auto dense) {
            for (int i = 0; i < HS; i++) v.at(pos, h, i) = dense(pos, h, i);
          });
    } else if (part.kind == "pattern_head") {
      for (int h = 0; h < H; h++)
        run(l, [&](const HookView& v, auto dense) {
          for (int q = 0; q < T; q++)
            for (int k = 0; k < T; k++) v.at(h, q, k) = dense(h, q, k);
        });
    } else {  // pattern_dest: (layer, head, dest_pos)
      for (int h = 0; h < H; h++)
        for (int pos = 0; pos < T; pos++)
          run(l, [&](const HookView& v, auto dense) {
            for (int k = 0; k < T; k++) v.at(h, pos, k) = dense(h, pos, k);
          });
    }
  }
  return values;
}

const PatchWhat kSingle[] = {PatchWhat::resid_pre,       PatchWhat::resid_mid,   PatchWhat::attn_out, PatchWhat::mlp_out,
                             PatchWhat::z_all_pos,       PatchWhat::q_all_pos,   PatchWhat::k_all_pos, PatchWhat::v_all_pos,
                             PatchWhat::pattern_all_pos, PatchWhat::z_by_pos,    PatchWhat::q_by_pos,  PatchWhat::k_by_pos,
                             PatchWhat::v_by_pos,        PatchWhat::pattern_by_pos};

double max_diff(const std::vector<float>& fast, const std::vector<double>& ref, std::string& first) {
  double m = 0;
  EXPECT_EQ(fast.size(), ref.size());
  for (std::size_t i = 0; i < fast.size() && i < ref.size(); i++) {
    double d = std::fabs(fast[i] - ref[i]);
    if (d > m && first.empty() && d > 1e-5)
      first = "at " + std::to_string(i) + ": " + std::to_string(fast[i]) + " vs " + std::to_string(ref[i]);
    m = std::max(m, d);
  }
  return m;
}

// Every single sweep of a model against the TL loop, denoising and noising, all shortcuts on.
void expect_every_sweep_matches(const char* fixture, PatchMetric metric) {
  Parameters p = load_fixture(fixture, "model.safetensors");
  const PatchPair pair = pair_for(p, 6, 2);
  Workspace ws;
  for (bool noising : {false, true})
    for (PatchWhat w : kSingle) {
      if (!hook_exists(p.config, ref_part(w).point)) continue;
      PatchRequest rq;
      rq.what = w, rq.metric = metric, rq.noising = noising;
      auto r = patch(p, {&pair, 1}, rq, ws);
      ASSERT_TRUE(r) << r.error().message;
      std::string first;
      const double d = max_diff(r->values, tl_loop(p, pair, w, metric, noising), first);
      EXPECT_LT(d, 1e-5) << fixture << " " << patch_what_name(w) << (noising ? " noising" : " denoising")
                         << ": max |fast - TL loop| = " << d << ", first " << first;
    }
}

}  // namespace

TEST(Patching, EverySweepEqualsTheFullRerunOnGpt2) {
  expect_every_sweep_matches("gpt2_tiny", PatchMetric::logit_diff);
}

TEST(Patching, EverySweepEqualsTheFullRerunOnLlamaWithGqa) {
  expect_every_sweep_matches("families/llama", PatchMetric::logit_diff);
}

TEST(Patching, EverySweepEqualsTheFullRerunOnParallelAndSandwichBlocks) {
  expect_every_sweep_matches("families/pythia", PatchMetric::logit_diff);
  expect_every_sweep_matches("families/gemma2", PatchMetric::logit_diff);
}

TEST(Patching, LossAndLogprobEqualTheFullRerun) {
  expect_every_sweep_matches("gpt2_tiny", PatchMetric::loss);
  expect_every_sweep_matches("families/llama", PatchMetric::logprob);
}

TEST(Patching, EachShortcutAloneEqualsTheFullRerun) {
  Parameters p = load_fixture("families/llama", "model.safetensors");
  const PatchPair pair = pair_for(p, 7, 3);
  Workspace ws;
  for (int which = 0; which < 7; which++) {  // 6: all of them
    PatchRequest rq;
    rq.what = PatchWhat::attn_head_by_pos_every;
    rq.shortcuts = {which == 0 || which == 6, which == 1 || which == 6, which == 2 || which == 6, which == 3 || which == 6,
                    which == 4 || which == 6, which == 5 || which == 6};
    PatchRequest none = rq;
    none.shortcuts = {false, false, false, false, false, false};
    auto fast = patch(p, {&pair, 1}, rq, ws);
    auto slow = patch(p, {&pair, 1}, none, ws);
    ASSERT_TRUE(fast && slow);
    ASSERT_EQ(fast->values.size(), slow->values.size());
    double d = 0;
    for (std::size_t i = 0; i < fast->values.size(); i++) d = std::max(d, double(std::fabs(fast->values[i] - slow->values[i])));
    EXPECT_LT(d, 1e-5) << "shortcuts " << which;
    EXPECT_EQ(slow->skipped, 0u);
    if (which == 2 || which == 6) {
      EXPECT_GT(fast->skipped, 0u) << "positions before the changed token are the same in both runs";
    }
  }
}

TEST(Patching, ABatchedSweepGivesTheValuesOfOneForwardPerRunOnEveryFamily) {
  // Three pairs of different lengths (the short ones' rows end early), the runs of each layer
  // as the rows of one forward_batch against one forward per run: the same values, bit for bit
  // (the fixtures' packed kernels give each row what a lone forward gives), the same runs
  // skipped and the same progress.
  const PatchWhat whats[] = {PatchWhat::resid_pre, PatchWhat::block_every, PatchWhat::z_by_pos,
                             PatchWhat::k_all_pos, PatchWhat::pattern_by_pos, PatchWhat::attn_head_all_pos_every};
  for (const char* fixture : {"gpt2_tiny", "families/llama", "families/pythia", "families/gemma2", "families/mistral_window"}) {
    Parameters p = load_fixture(fixture, "model.safetensors");
    const PatchPair pairs[] = {pair_for(p, 6, 2), pair_for(p, 4, 1, 9), pair_for(p, 7, 0, 3)};
    Workspace ws;
    for (PatchWhat w : whats)
      for (PatchMetric m : {PatchMetric::logit_diff, PatchMetric::logprob}) {
        if (w == PatchWhat::block_every && !p.config.mlp) continue;
        PatchRequest rq;
        rq.what = w, rq.metric = m, rq.noising = w == PatchWhat::z_by_pos;
        std::size_t batched_calls = 0, lone_calls = 0;
        rq.progress = [&](std::size_t, std::size_t) { batched_calls++; };
        auto batched = patch(p, pairs, rq, ws);
        rq.shortcuts.batch_rows = false;
        rq.progress = [&](std::size_t, std::size_t) { lone_calls++; };
        auto lone = patch(p, pairs, rq, ws);
        const std::string where = std::string(fixture) + " " + std::string(patch_what_name(w)) + " " +
                                  std::string(patch_metric_name(m));
        ASSERT_TRUE(batched && lone) << where;
        EXPECT_EQ(batched->values, lone->values) << where;
        EXPECT_EQ(batched->clean, lone->clean) << where;
        EXPECT_EQ(batched->corrupted, lone->corrupted) << where;
        EXPECT_EQ(batched->skipped, lone->skipped) << where;
        EXPECT_EQ(batched_calls, lone_calls) << where;
      }
  }
}

TEST(Patching, RunningOnlyTheRowsFromThePatchedPositionGivesTheValuesOfTheWholeRunsOnEveryFamily) {
  // A run patched at position p leaves the rows before p as the base run's at every layer: it
  // runs rows p.. with the base run's q, k and v before them (GQA's KV heads, the rotary, Gemma
  // 2's soft-caps, Mistral's window), batched with runs that start at other rows, and gives the
  // sweep's values without the shortcut, bit for bit. A head patched at every position (z, q, k,
  // v) runs the rows from the first where the two runs' slices differ, the same way.
  const PatchWhat whats[] = {PatchWhat::resid_pre, PatchWhat::resid_mid, PatchWhat::block_every,
                             PatchWhat::attn_head_by_pos_every, PatchWhat::z_all_pos, PatchWhat::attn_head_all_pos_every};
  for (const char* fixture : {"gpt2_tiny", "families/llama", "families/pythia", "families/gemma2", "families/mistral_window"}) {
    Parameters p = load_fixture(fixture, "model.safetensors");
    const PatchPair pairs[] = {pair_for(p, 6, 2), pair_for(p, 4, 1, 9), pair_for(p, 7, 0, 3)};
    Workspace ws;
    for (PatchWhat w : whats)
      for (PatchMetric m : {PatchMetric::logit_diff, PatchMetric::logprob})
        for (bool start_at_layer : {true, false}) {
          if ((w == PatchWhat::block_every || w == PatchWhat::resid_mid) && !hook_exists(p.config, HookPoint::resid_mid))
            continue;
          PatchRequest rq;
          rq.what = w, rq.metric = m, rq.noising = m == PatchMetric::logprob;
          rq.shortcuts.start_at_layer = start_at_layer;
          rq.shortcuts.skip_unchanged = false;  // every position runs, from row 0 to the last
          auto rows = patch(p, pairs, rq, ws);
          rq.shortcuts.reuse_prefix = false;
          auto whole = patch(p, pairs, rq, ws);
          const std::string where = std::string(fixture) + " " + std::string(patch_what_name(w)) + " " +
                                    std::string(patch_metric_name(m)) + (start_at_layer ? "" : " from the embedding");
          ASSERT_TRUE(rows && whole) << where;
          EXPECT_EQ(rows->values, whole->values) << where;
          EXPECT_EQ(rows->clean, whole->clean) << where;
          EXPECT_EQ(rows->corrupted, whole->corrupted) << where;
        }
  }
}

TEST(Patching, RunningTheLastBlockOnTheLastRowOnlyGivesTheValuesOfTheWholeRunsOnEveryFamily) {
  // The metrics that read the last position (logit_diff, normalized, logprob) run the last
  // block past its attention, ln_f and the unembedding on the last row only: every sweep, the
  // last layer's own patches included (its attn_out, resid_mid and mlp_out run whole), gives the
  // values of the whole runs, bit for bit, alone and with the other shortcuts.
  const PatchWhat whats[] = {PatchWhat::resid_pre, PatchWhat::block_every, PatchWhat::attn_head_by_pos_every,
                             PatchWhat::attn_head_all_pos_every, PatchWhat::resid_mid};
  for (const char* fixture : {"gpt2_tiny", "families/llama", "families/pythia", "families/gemma2", "families/mistral_window"}) {
    Parameters p = load_fixture(fixture, "model.safetensors");
    const PatchPair pairs[] = {pair_for(p, 6, 2), pair_for(p, 4, 1, 9), pair_for(p, 7, 0, 3)};
    Workspace ws;
    for (PatchWhat w : whats)
      for (PatchMetric m : {PatchMetric::logit_diff, PatchMetric::normalized, PatchMetric::logprob})
        for (bool others : {true, false}) {
          if ((w == PatchWhat::block_every || w == PatchWhat::resid_mid) && !hook_exists(p.config, HookPoint::resid_mid))
            continue;
          PatchRequest rq;
          rq.what = w, rq.metric = m, rq.noising = m == PatchMetric::logprob;
          if (!others) rq.shortcuts = {false, false, false, false, false, true};
          rq.shortcuts.skip_unchanged = false;
          auto last = patch(p, pairs, rq, ws);
          rq.shortcuts.last_row_only = false;
          auto whole = patch(p, pairs, rq, ws);
          const std::string where = std::string(fixture) + " " + std::string(patch_what_name(w)) + " " +
                                    std::string(patch_metric_name(m)) + (others ? "" : " alone");
          ASSERT_TRUE(last && whole) << where << ": " << (last ? whole.error().message : last.error().message);
          EXPECT_EQ(last->values, whole->values) << where;
          EXPECT_EQ(last->clean, whole->clean) << where;
          EXPECT_EQ(last->corrupted, whole->corrupted) << where;
        }
  }
}

TEST(Patching, ThePositionThatDiffersAtLayerZeroRestoresTheCleanRun) {
  // Only token 3 differs: resid_pre[0, 3] from the clean run makes the whole run the clean one;
  // positions before 3 are the same in both runs (no change); at the last position, every
  // layer's resid_pre carries everything that differs when the changed token is last.
  Parameters p = load_fixture("gpt2_tiny", "model.safetensors");
  Workspace ws;
  for (bool noising : {false, true}) {
    const PatchPair pair = pair_for(p, 6, 3);
    PatchRequest rq;
    rq.noising = noising;
    auto r = patch(p, {&pair, 1}, rq, ws);
    ASSERT_TRUE(r) << r.error().message;
    const float restored = noising ? r->corrupted : r->clean, kept = noising ? r->clean : r->corrupted;
    EXPECT_NEAR(r->values[r->offset({0, 3})], restored, 1e-5);
    for (int l = 0; l < p.config.n_layer; l++)
      for (int pos = 0; pos < 3; pos++) EXPECT_EQ(r->values[r->offset({l, pos})], kept);
    const PatchPair last = pair_for(p, 6, 5);
    auto r2 = patch(p, {&last, 1}, rq, ws);
    ASSERT_TRUE(r2);
    for (int l = 0; l < p.config.n_layer; l++)
      EXPECT_NEAR(r2->values[r2->offset({l, 5})], noising ? r2->corrupted : r2->clean, 1e-5) << "layer " << l;
  }
}

TEST(Patching, NormalizedIsZeroForTheCorruptedRunAndOneForTheClean) {
  Parameters p = load_fixture("gpt2_tiny", "model.safetensors");
  Workspace ws;
  const PatchPair pair = pair_for(p, 6, 3);
  PatchRequest rq;
  rq.metric = PatchMetric::normalized;
  auto n = patch(p, {&pair, 1}, rq, ws);
  rq.metric = PatchMetric::logit_diff;
  auto raw = patch(p, {&pair, 1}, rq, ws);
  ASSERT_TRUE(n && raw) << (n ? raw.error().message : n.error().message);
  EXPECT_FLOAT_EQ(n->clean, 1.0f);
  EXPECT_FLOAT_EQ(n->corrupted, 0.0f);
  EXPECT_NEAR(n->values[n->offset({0, 3})], 1.0f, 1e-4);
  for (std::size_t i = 0; i < raw->values.size(); i++)
    EXPECT_NEAR(n->values[i], (raw->values[i] - raw->corrupted) / (raw->clean - raw->corrupted), 1e-4);
}

TEST(Patching, KAndVIndexTheKvHeadsAsTransformerLensAndArePaddedInTheStack) {
  Parameters p = load_fixture("families/llama", "model.safetensors");  // NH 4, NKV 2
  Workspace ws;
  const PatchPair pair = pair_for(p, 5, 1);
  PatchRequest rq;
  rq.what = PatchWhat::k_all_pos;
  auto k = patch(p, {&pair, 1}, rq, ws);
  ASSERT_TRUE(k);
  EXPECT_EQ(k->shape, (std::vector<int>{2, 2}));
  EXPECT_EQ(k->heads, 2);
  rq.what = PatchWhat::attn_head_all_pos_every;
  auto every = patch(p, {&pair, 1}, rq, ws);
  ASSERT_TRUE(every);
  EXPECT_EQ(every->axes, (std::vector<std::string>{"patch_type", "layer", "head"}));
  EXPECT_EQ(every->shape, (std::vector<int>{5, 2, 4}));
  EXPECT_EQ(every->patch_types, (std::vector<std::string>{"z", "q", "k", "v", "pattern"}));
  for (int l = 0; l < 2; l++) {
    for (int h = 0; h < 2; h++) EXPECT_NEAR(every->values[every->offset({2, l, h})], k->values[k->offset({l, h})], 1e-6);
    for (int h = 2; h < 4; h++) EXPECT_EQ(every->values[every->offset({2, l, h})], 0.0f) << "TL pads with 0";
  }
  // by position: the pattern's (layer, head, dest_pos) becomes (layer, pos, head) in the stack
  rq.what = PatchWhat::pattern_by_pos;
  auto pat = patch(p, {&pair, 1}, rq, ws);
  rq.what = PatchWhat::attn_head_by_pos_every;
  auto by_pos = patch(p, {&pair, 1}, rq, ws);
  ASSERT_TRUE(pat && by_pos);
  EXPECT_EQ(pat->axes, (std::vector<std::string>{"layer", "head", "dest_pos"}));
  for (int l = 0; l < 2; l++)
    for (int pos = 0; pos < 5; pos++)
      for (int h = 0; h < 4; h++)
        EXPECT_NEAR(by_pos->values[by_pos->offset({4, l, pos, h})], pat->values[pat->offset({l, h, pos})], 1e-6);
}

TEST(Patching, ABatchIsTheMeanOfItsPairsAndAShortPairKeepsItsRunPastItsEnd) {
  Parameters p = load_fixture("gpt2_tiny", "model.safetensors");
  Workspace ws;
  const PatchPair pairs[] = {pair_for(p, 6, 2), pair_for(p, 4, 1, 9)};
  PatchRequest rq;
  rq.what = PatchWhat::block_every;
  auto both = patch(p, pairs, rq, ws);
  auto a = patch(p, {&pairs[0], 1}, rq, ws);
  auto b = patch(p, {&pairs[1], 1}, rq, ws);
  ASSERT_TRUE(both && a && b) << (both ? "" : both.error().message);
  EXPECT_EQ(both->shape, (std::vector<int>{3, 2, 6}));
  EXPECT_EQ(b->shape, (std::vector<int>{3, 2, 4}));
  EXPECT_NEAR(both->clean, (a->clean + b->clean) / 2, 1e-5);
  for (int t = 0; t < 3; t++)
    for (int l = 0; l < 2; l++)
      for (int pos = 0; pos < 6; pos++) {
        const float vb = pos < 4 ? b->values[b->offset({t, l, pos})] : b->corrupted;
        EXPECT_NEAR(both->values[both->offset({t, l, pos})], (a->values[a->offset({t, l, pos})] + vb) / 2, 1e-5);
      }
}

TEST(Patching, LayersAndPositionsNarrowTheSweepToTheSameValues) {
  Parameters p = load_fixture("gpt2_tiny", "model.safetensors");
  Workspace ws;
  const PatchPair pair = pair_for(p, 6, 2);
  PatchRequest rq;
  rq.what = PatchWhat::z_by_pos;
  auto all = patch(p, {&pair, 1}, rq, ws);
  rq.layers = {1};
  rq.positions = {4, 2};
  auto some = patch(p, {&pair, 1}, rq, ws);
  ASSERT_TRUE(all && some);
  EXPECT_EQ(some->shape, (std::vector<int>{1, 2, 2}));
  EXPECT_EQ(some->positions, (std::vector<int>{2, 4}));
  for (int pi = 0; pi < 2; pi++)
    for (int h = 0; h < 2; h++)
      EXPECT_EQ(some->values[some->offset({0, pi, h})], all->values[all->offset({1, some->positions[pi], h})]);
}

TEST(Patching, TheCostIsKnownBeforeAndProgressCountsEveryRun) {
  Parameters p = load_fixture("gpt2_tiny", "model.safetensors");
  const PatchPair pair = pair_for(p, 6, 2);
  PatchRequest rq;  // resid_pre: 2 layers x 6 positions
  auto cost = patch_cost(p.config, {&pair, 1}, rq);
  ASSERT_TRUE(cost);
  EXPECT_EQ(cost->forwards, 2u + 12u);
  EXPECT_EQ(cost->block_tokens, 2u * 6 * 2 + 6u * 6 * 2 + 6u * 6 * 1);  // layer 0 runs 2 blocks, layer 1 one
  std::size_t calls = 0, last_total = 0;
  rq.progress = [&](std::size_t done, std::size_t total) {
    calls++;
    EXPECT_EQ(done, calls);
    last_total = total;
  };
  Workspace ws;
  ASSERT_TRUE(patch(p, {&pair, 1}, rq, ws));
  EXPECT_EQ(calls, 12u);
  EXPECT_EQ(last_total, 12u);
}

TEST(Patching, ASweepStopsWhenAskedAndSaysHowFarItGot) {
  Parameters p = load_fixture("gpt2_tiny", "model.safetensors");
  const PatchPair pair = pair_for(p, 6, 0);
  PatchRequest rq;
  int asked = 0;
  // 3 runs let through, then the stop: layer 0's one run (positions 1-5 need none, their slices
  // agree) ran with its layer's batch; layer 1's two wait in the next batch when the stop comes
  rq.keep_going = [&] { return ++asked <= 3; };
  int progressed = 0;
  rq.progress = [&](std::size_t done, std::size_t) { progressed = static_cast<int>(done); };
  Workspace ws;
  auto r = patch(p, {&pair, 1}, rq, ws);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, headlab::ErrorCode::unavailable);
  // the stop ends the work at once: the 2 runs waiting in the batch are dropped, not run first
  EXPECT_NE(r.error().message.find("stopped after 6 of 12 runs"), std::string::npos) << r.error().message;
  EXPECT_EQ(progressed, 6);
}

TEST(Patching, BadInputIsRefusedNamingWhatIsWrong) {
  Parameters gpt2 = load_fixture("gpt2_tiny", "model.safetensors");
  Parameters neox = load_fixture("families/pythia", "model.safetensors");
  Parameters attn = load_fixture("attn_only", "model.safetensors");
  Workspace ws;
  auto refused = [&](const Parameters& p, std::vector<PatchPair> pairs, PatchRequest rq, const std::string& says) {
    auto r = patch(p, pairs, rq, ws);
    ASSERT_FALSE(r) << says;
    EXPECT_EQ(r.error().code, headlab::ErrorCode::invalid_argument);
    EXPECT_NE(r.error().message.find(says), std::string::npos) << r.error().message;
    EXPECT_FALSE(patch_cost(p.config, pairs, rq) && says != "divides") << says;
  };
  PatchPair ok = pair_for(gpt2, 5, 2), longer = ok;
  longer.corrupted.push_back(1);
  refused(gpt2, {}, {}, "at least one prompt pair");
  refused(gpt2, {ok, longer}, {}, "pair 2: the clean prompt is 5 tokens and the corrupted one 6");
  PatchRequest mid;
  mid.what = PatchWhat::resid_mid;
  refused(neox, {pair_for(neox, 5, 2)}, mid, "parallel");
  refused(attn, {pair_for(attn, 5, 2)}, mid, "attention-only");
  PatchRequest every;
  every.what = PatchWhat::block_every;
  refused(attn, {pair_for(attn, 5, 2)}, every, "no mlp_out");
  PatchRequest layer;
  layer.layers = {2};
  refused(gpt2, {ok}, layer, "layer 2 does not exist");
  PatchRequest pos;
  pos.positions = {5};
  refused(gpt2, {ok}, pos, "position 5 is outside the prompts: they have positions 0 to 4");
  PatchPair no_answer = ok;
  no_answer.wrong = -1;
  refused(gpt2, {no_answer}, {}, "needs a wrong token");
  no_answer.answer = 999;
  PatchRequest lp;
  lp.metric = PatchMetric::logprob;
  refused(gpt2, {no_answer}, lp, "inside the vocabulary [0, 64)");
  PatchRequest loss;
  loss.metric = PatchMetric::loss;
  refused(gpt2, {PatchPair{{1}, {2}, 3, 4}}, loss, "at least two");
  PatchPair same = ok;
  same.corrupted = same.clean;
  PatchRequest norm;
  norm.metric = PatchMetric::normalized;
  refused(gpt2, {same}, norm, "divides");
  EXPECT_FALSE(parse_patch_what("resid_post").has_value());
  EXPECT_EQ(parse_patch_what("attn_head_by_pos_every"), PatchWhat::attn_head_by_pos_every);
  EXPECT_EQ(parse_patch_metric("normalized"), PatchMetric::normalized);
}

// ---- steering in every run of a sweep ----

namespace {

// A steering at `layer` of a fixed pseudo-random vector; rows > 1: ActAdd-like rows from `from`.
Steering steering_for(const Parameters& p, int layer, float coef, int from = 0, int rows = 1) {
  const int C = p.config.n_embd;
  Steering s{.layer = layer, .coef = coef, .from = from, .rows = rows};
  for (int i = 0; i < rows * C; i++) s.vector.push_back(float((i * 37) % 17) / 17.0f - 0.5f);
  return s;
}

}  // namespace

TEST(PatchSteering, EverySweepEqualsTheSteeredFullRerunWithSteeringBeforeAtAndAfterThePatchedLayer) {
  for (const char* fixture : {"gpt2_tiny", "families/llama"}) {
    Parameters p = load_fixture(fixture, "model.safetensors");
    ASSERT_GE(p.config.n_layer, 2) << fixture;
    const PatchPair pair = pair_for(p, 7, 3);
    // layer 0 at every position, layer 1 as ActAdd rows from position 2: a patched run that
    // starts at layer 1 holds the first in its start and must add the second once
    const std::vector<Steering> steer = {steering_for(p, 0, 1.5f), steering_for(p, 1, -2.0f, 2, 3)};
    Workspace ws;
    for (PatchWhat w : {PatchWhat::resid_pre, PatchWhat::attn_out, PatchWhat::z_by_pos, PatchWhat::v_all_pos}) {
      PatchRequest rq;
      rq.what = w;
      rq.steering = steer;
      auto fast = patch(p, {&pair, 1}, rq, ws);
      ASSERT_TRUE(fast) << fast.error().message;
      const std::vector<double> ref = tl_loop(p, pair, w, PatchMetric::logit_diff, false, steer);
      const std::vector<double> unsteered = tl_loop(p, pair, w, PatchMetric::logit_diff, false);
      std::string first;
      EXPECT_LT(max_diff(fast->values, ref, first), 1e-4) << fixture << " " << patch_what_name(w) << " " << first;
      std::string ignored;
      EXPECT_GT(max_diff(fast->values, unsteered, ignored), 1e-3) << fixture << ": the steering changes the sweep";
      ASSERT_EQ(fast->steering.size(), 2u);
      EXPECT_EQ(fast->steering[1].rows, 3);
      EXPECT_EQ(fast->steering[1].from, 2);
    }
  }
}

TEST(PatchSteering, TheCleanAndCorruptedMetricsAreThoseOfTheSteeredRuns) {
  Parameters p = load_fixture("gpt2_tiny", "model.safetensors");
  const PatchPair pair = pair_for(p, 6, 2);
  const std::vector<Steering> steer = {steering_for(p, 1, 3.0f)};
  PatchRequest rq;
  rq.steering = steer;
  Workspace ws;
  auto r = patch(p, {&pair, 1}, rq, ws);
  ASSERT_TRUE(r);
  for (bool clean : {true, false}) {
    ForwardHooks hk(p.config.n_layer);
    hk.want(HookPoint::resid_pre, 1);
    hk.at = [&](HookPoint point, int layer, const HookView& v) { steer_by_hand(steer, point, layer, v); };
    ForwardOptions o;
    o.hooks = &hk;
    ForwardOutput out;
    const std::vector<int>& ids = clean ? pair.clean : pair.corrupted;
    ASSERT_TRUE(forward(p, ids, o, out, ws));
    EXPECT_NEAR(clean ? r->clean : r->corrupted, ref_metric(out, ids, pair, PatchMetric::logit_diff), 1e-4);
  }
}

TEST(PatchSteering, AZeroCoefficientGivesTheUnsteeredSweepAndABadVectorIsRefusedByIndex) {
  Parameters p = load_fixture("gpt2_tiny", "model.safetensors");
  const PatchPair pair = pair_for(p, 6, 2);
  Workspace ws;
  PatchRequest plain, zero;
  zero.steering = {steering_for(p, 0, 0.0f)};
  auto a = patch(p, {&pair, 1}, plain, ws);
  auto b = patch(p, {&pair, 1}, zero, ws);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->values, b->values);

  PatchRequest nan = zero;
  nan.steering.push_back(steering_for(p, 1, 1.0f));
  nan.steering[1].vector[5] = std::nanf("");
  auto bad = patch(p, {&pair, 1}, nan, ws);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("steering 2"), std::string::npos) << bad.error().message;
  PatchRequest far = plain;
  far.steering = {steering_for(p, 0, 1.0f)};
  far.steering[0].layer = p.config.n_layer;
  EXPECT_FALSE(patch(p, {&pair, 1}, far, ws));
  EXPECT_FALSE(patch_cost(p.config, {&pair, 1}, far));
}
