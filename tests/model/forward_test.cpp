// Tests for model/forward.h: the engine against the PyTorch reference fixtures, the record,
// the interventions and the errors.
#include "formats/hf/config_json.h"
#include "model/forward.h"

#include <gtest/gtest.h>

#include <cmath>

#include "testing/model_fixtures.h"
#include "model/ops/matmul_packed.h"
#include "model/packed_weights.h"

using namespace headlab::model;
using headlab::ErrorCode;
using headlab::Status;
using headlab::testing::fixture_dir;
using headlab::testing::load_fixture;
using headlab::testing::read_json_file;

namespace {

const char* kFixtures[] = {"gpt2_tiny", "attn_only", "gpt2_wide"};

double max_logit_diff(const ForwardOutput& out, const nlohmann::json& logits) {
  double m = 0;
  for (int t = 0; t < out.T; t++)
    for (int v = 0; v < out.V; v++)
      m = std::max(m, std::fabs(double(out.logits[std::size_t(t) * out.V + v]) - logits[t][v].get<double>()));
  return m;
}

std::vector<int> fixture_ids(const nlohmann::json& expected) { return expected["ids"].get<std::vector<int>>(); }

}  // namespace

// Both paths of the linear layers: float32 rows through sgemm (the trainer's models), and the
// packed matrices a loaded model keeps (ops/matmul_packed.h, the kernel this CPU runs).
TEST(Forward, MatchesPyTorchLogitsPatternsAndScoresInF32FromRowsAndFromPackedMatrices) {
  for (const char* name : kFixtures) {
    for (bool packed : {false, true}) {
      auto expected = read_json_file(fixture_dir(name) + "/expected.json");
      const auto& ref = expected["variants"]["F32"];
      Parameters p = load_fixture(name, "model.safetensors", {.rows = !packed});
      ASSERT_EQ(p.packed != nullptr, packed);
      std::vector<int> ids = fixture_ids(expected);
      ForwardOptions opt;
      opt.record.pattern = true;
      opt.record.scores = true;
      opt.loss = true;
      ForwardOutput out;
      Workspace ws;
      ASSERT_TRUE(forward(p, ids, opt, out, ws)) << name;
      double dlogits = max_logit_diff(out, ref["logits"]);
      double dpattern = 0, dscores = 0;
      for (int l = 0; l < out.record.L; l++)
        for (int h = 0; h < out.record.NH; h++)
          for (int t = 0; t < out.T; t++)
            for (int k = 0; k <= t; k++) {
              dpattern = std::max(dpattern, std::fabs(out.record.pattern_at(l, h, t, k) - ref["pattern"][l][h][t][k].get<double>()));
              dscores = std::max(dscores, std::fabs(out.record.scores_row(l, h, t)[k] - ref["scores"][l][h][t][k].get<double>()));
            }
      std::printf("%s F32%s: max abs diff logits %.3g pattern %.3g scores %.3g loss %.3g\n", name,
                  packed ? " packed" : "", dlogits, dpattern, dscores, std::fabs(out.loss - ref["loss"].get<double>()));
      EXPECT_LT(dlogits, 1e-4) << name;
      EXPECT_LT(dpattern, 1e-4) << name;
      EXPECT_LT(dscores, 1e-4) << name;
      EXPECT_NEAR(out.loss, ref["loss"].get<double>(), 1e-4) << name;
    }
  }
}

TEST(Forward, ReducedPrecisionWeightsMatchTheirReferenceAndStayNearF32) {
  // F16/BF16 matrices stay 16-bit in memory and are widened in a register before each
  // float32 multiply-add, so the engine must match the reference run (float64) on the same
  // rounded weights to 1e-4; against the F32 model the difference is the rounding of the
  // weights (F16: 11 significant bits, BF16: 8), stated relative to the largest |logit|: 1%
  // for F16 and 5% for BF16.
  const std::pair<const char*, double> dtypes[] = {{"F16", 1e-2}, {"BF16", 5e-2}};
  for (const char* name : kFixtures) {
    auto expected = read_json_file(fixture_dir(name) + "/expected.json");
    std::vector<int> ids = fixture_ids(expected);
    for (auto [dtype, tol_vs_f32] : dtypes) {
      const auto& ref = expected["variants"][dtype];
      Parameters p = load_fixture(name, ref["file"].get<std::string>());
      ASSERT_EQ(weight_type_name(parameters_matrix_type(p, parameters_index(&ParameterTensors::qkvw))),
                dtype == std::string("F16") ? "f16" : "bf16");
      ForwardOptions opt;
      ForwardOutput out;
      Workspace ws;
      ASSERT_TRUE(forward(p, ids, opt, out, ws));
      double own = max_logit_diff(out, ref["logits"]);
      double vs_f32 = max_logit_diff(out, expected["variants"]["F32"]["logits"]);
      double scale = 0;
      for (const auto& row : expected["variants"]["F32"]["logits"])
        for (const auto& v : row) scale = std::max(scale, std::fabs(v.get<double>()));
      std::printf("%s %s: max abs diff logits vs own reference %.3g, vs F32 reference %.3g (%.2g%% of max |logit| %.3g)\n",
                  name, dtype, own, vs_f32, 100 * vs_f32 / scale, scale);
      EXPECT_LT(own, 1e-4) << name << " " << dtype;
      EXPECT_LT(vs_f32, tol_vs_f32 * scale) << name << " " << dtype;
    }
  }
}

TEST(Forward, InterventionsMatchPyTorch) {
  for (const char* name : kFixtures) {
    auto expected = read_json_file(fixture_dir(name) + "/expected.json");
    const auto& ivs = expected["variants"]["F32"]["interventions"];
    Parameters p = load_fixture(name, "model.safetensors");
    std::vector<int> ids = fixture_ids(expected);
    const int last = p.config.n_layer - 1;
    std::vector<std::pair<std::string, Interventions>> cases(4);
    cases[0].first = "ablate_zero_l0h1";
    cases[0].second.ablate.push_back({0, 1, Ablation::zero});
    cases[1].first = "replace_uniform_l1h0";
    cases[1].second.replace.push_back({1, 0, PatternReplacementKind::uniform, {}});
    cases[2].first = "block_key0_l0_all";
    cases[2].second.block.push_back({0, -1, 0});
    cases[3].first = "block_key3_last_h1";
    cases[3].second.block.push_back({last, 1, 3});
    Workspace ws;
    for (auto& [key, iv] : cases) {
      ForwardOptions opt;
      opt.interventions = iv;
      opt.loss = true;
      ForwardOutput out;
      ASSERT_TRUE(forward(p, ids, opt, out, ws)) << name << " " << key;
      double d = max_logit_diff(out, ivs[key]["logits"]);
      std::printf("%s %s: max abs diff logits %.3g, loss %.6f (reference %.6f)\n", name, key.c_str(), d, out.loss,
                  ivs[key]["loss"].get<double>());
      EXPECT_LT(d, 1e-4) << name << " " << key;
      EXPECT_NEAR(out.loss, ivs[key]["loss"].get<double>(), 1e-4) << name << " " << key;
    }
  }
}

TEST(Forward, RecordOfHeadOutputsAddsUpToTheAttentionOutput) {
  Parameters p = load_fixture("gpt2_wide", "model.safetensors");
  auto expected = read_json_file(fixture_dir("gpt2_wide") + "/expected.json");
  std::vector<int> ids = fixture_ids(expected);
  ForwardOptions opt;
  opt.record = {true, true, true, true, true, true};
  ForwardOutput out;
  Workspace ws;
  ASSERT_TRUE(forward(p, ids, opt, out, ws));
  const ActivationRecord& r = out.record;
  const int T = r.T, C = r.C, NH = r.NH, L = r.L;
  // residual[l+1] - residual[l] - mlp = sum_h head_out + b_O: check on the attention-only path by
  // recomputing z @ W_O^T from the recorded z.
  // (W_O read through the accessor: the loaded model keeps it packed)
  const std::vector<float> wo = parameters_tensor(p, parameters_index(&ParameterTensors::attprojw));  // (L, C, C)
  double max_diff = 0;
  for (int l = 0; l < L; l++)
    for (int t = 0; t < T; t++)
      for (int o = 0; o < C; o++) {
        double from_heads = 0, from_z = 0;
        for (int h = 0; h < NH; h++) from_heads += r.head_out[((std::size_t(l) * NH + h) * T + t) * C + o];
        for (int i = 0; i < C; i++)
          from_z += double(r.z[(std::size_t(l) * T + t) * C + i]) * wo[(std::size_t(l) * C + o) * C + i];
        max_diff = std::max(max_diff, std::fabs(from_heads - from_z));
      }
  EXPECT_LT(max_diff, 1e-4);
  EXPECT_EQ(r.residual.size(), std::size_t(L + 1) * T * C);
  EXPECT_EQ(r.qkv.size(), std::size_t(L) * T * 3 * C);
  // Asking for nothing records nothing.
  ForwardOptions none;
  ASSERT_TRUE(forward(p, ids, none, out, ws));
  EXPECT_TRUE(out.record.pattern.empty());
  EXPECT_TRUE(out.record.head_out.empty());
  EXPECT_TRUE(std::isnan(out.loss));
}

TEST(Forward, MeanAblationReplacesAHeadByItsAverage) {
  Parameters p = load_fixture("gpt2_tiny", "model.safetensors");
  std::vector<int> ids = {1, 5, 9, 2, 7, 3};
  ForwardOptions opt;
  opt.record.z = true;
  opt.interventions.ablate.push_back({0, 1, Ablation::mean});
  ForwardOutput out;
  Workspace ws;
  ASSERT_TRUE(forward(p, ids, opt, out, ws));
  const int HS = p.config.head_size(), C = p.config.n_embd;
  for (int t = 1; t < 6; t++)
    for (int i = 0; i < HS; i++) EXPECT_FLOAT_EQ(out.record.z[t * C + HS + i], out.record.z[HS + i]);
}

TEST(Forward, RejectsInputLongerThanTheContext) {
  Parameters p = load_fixture("gpt2_tiny", "model.safetensors");
  std::vector<int> ids(p.config.n_ctx + 1, 3);
  ForwardOutput out;
  Workspace ws;
  Status s = forward(p, ids, {}, out, ws);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, ErrorCode::too_long);
  EXPECT_NE(s.error().message.find("truncate"), std::string::npos) << s.error().message;
}

TEST(Forward, RejectsEmptyInputAndUnknownIds) {
  Parameters p = load_fixture("gpt2_tiny", "model.safetensors");
  ForwardOutput out;
  Workspace ws;
  std::vector<int> none;
  EXPECT_EQ(forward(p, none, {}, out, ws).error().code, ErrorCode::invalid_argument);
  std::vector<int> bad = {1, p.config.vocab_size};
  Status s = forward(p, bad, {}, out, ws);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("outside the vocabulary"), std::string::npos);
  bad = {-1};
  EXPECT_FALSE(forward(p, bad, {}, out, ws));
}

TEST(Forward, RejectsInterventionsOnHeadsThatDoNotExist) {
  Parameters p = load_fixture("gpt2_tiny", "model.safetensors");
  std::vector<int> ids = {1, 2, 3};
  ForwardOutput out;
  Workspace ws;
  auto run = [&](Interventions iv) {
    ForwardOptions opt;
    opt.interventions = std::move(iv);
    return forward(p, ids, opt, out, ws);
  };
  Interventions a;
  a.ablate.push_back({5, 0, Ablation::zero});
  EXPECT_NE(run(a).error().message.find("layer 5 does not exist"), std::string::npos);
  Interventions b;
  b.replace.push_back({0, 9, PatternReplacementKind::uniform, {}});
  EXPECT_NE(run(b).error().message.find("head 9 does not exist"), std::string::npos);
  Interventions c;
  c.block.push_back({0, -1, 3});
  EXPECT_NE(run(c).error().message.find("key 3 is outside"), std::string::npos);
  Interventions d;
  d.replace.push_back({0, 0, PatternReplacementKind::custom, std::vector<float>(4, 0.25f)});
  EXPECT_NE(run(d).error().message.find("must be (T, T)"), std::string::npos);
  Interventions e;
  e.replace.push_back({0, 0, PatternReplacementKind::custom, {0.5f, 0.5f, 0, 1, 0, 0, 0, 0.5f, 0.5f}});
  EXPECT_NE(run(e).error().message.find("future key"), std::string::npos);
  Interventions f;
  f.replace.push_back({0, 0, PatternReplacementKind::custom, {1, 0, 0, 0.5f, 0.4f, 0, 0.2f, 0.2f, 0.6f}});
  EXPECT_NE(run(f).error().message.find("sums to"), std::string::npos);
  Interventions g;
  g.replace.push_back({0, 0, PatternReplacementKind::custom, {1, 0, 0, 1.5f, -0.5f, 0, 0.2f, 0.2f, 0.6f}});
  EXPECT_NE(run(g).error().message.find("not in [0, 1]"), std::string::npos);
}

TEST(Forward, CustomPatternEqualToUniformGivesTheSameLogits) {
  Parameters p = load_fixture("gpt2_tiny", "model.safetensors");
  std::vector<int> ids = {4, 8, 15, 16};
  const int T = 4;
  std::vector<float> uniform(T * T, 0.0f);
  for (int t = 0; t < T; t++)
    for (int k = 0; k <= t; k++) uniform[t * T + k] = 1.0f / (t + 1);
  ForwardOptions a, b;
  a.interventions.replace.push_back({1, 1, PatternReplacementKind::uniform, {}});
  b.interventions.replace.push_back({1, 1, PatternReplacementKind::custom, uniform});
  ForwardOutput oa, ob;
  Workspace ws;
  ASSERT_TRUE(forward(p, ids, a, oa, ws));
  ASSERT_TRUE(forward(p, ids, b, ob, ws));
  EXPECT_EQ(oa.logits, ob.logits);
}

// config.json's attention switches against the NumPy reference
// (tools/reference/make_config_switch_fixtures.py): one model, each setting.
TEST(Forward, HonoursTheAttentionSwitchesOfConfigJsonLikeTheReference) {
  const std::string dir = fixture_dir("config_switches");
  auto expected = read_json_file(dir + "/expected.json");
  auto base = read_json_file(dir + "/config.json");
  auto st = safetensors_read(dir + "/model.safetensors");
  ASSERT_TRUE(st) << st.error().message;
  std::vector<int> ids = fixture_ids(expected);
  for (const auto& [name, ref] : expected["variants"].items()) {
    nlohmann::json j = base;
    j.update(ref["config"]);
    auto config = config_parse(j.dump(), name);
    ASSERT_TRUE(config) << config.error().message;
    auto p = checkpoint_from_safetensors(*config, *st);
    ASSERT_TRUE(p) << p.error().message;
    ForwardOptions opt;
    opt.record.pattern = true;
    opt.record.scores = true;
    ForwardOutput out;
    Workspace ws;
    ASSERT_TRUE(forward(*p, ids, opt, out, ws)) << name;
    double dpattern = 0, dscores = 0;
    for (int l = 0; l < out.record.L; l++)
      for (int h = 0; h < out.record.NH; h++)
        for (int t = 0; t < out.T; t++)
          for (int k = 0; k <= t; k++) {
            dpattern = std::max(dpattern, std::fabs(out.record.pattern_at(l, h, t, k) - ref["pattern"][l][h][t][k].get<double>()));
            dscores = std::max(dscores, std::fabs(out.record.scores_row(l, h, t)[k] - ref["scores"][l][h][t][k].get<double>()));
          }
    const double dlogits = max_logit_diff(out, ref["logits"]);
    std::printf("config_switches %s: max abs diff logits %.3g pattern %.3g scores %.3g\n", name.c_str(), dlogits,
                dpattern, dscores);
    EXPECT_LT(dlogits, 1e-4) << name;
    EXPECT_LT(dpattern, 1e-5) << name;
    EXPECT_LT(dscores, 1e-4) << name;
  }
}

// ---- stop_at_layer ------------------------------------------------------------------------------

// A forward that stops after block l - 1 records blocks 0..l-1 as the whole forward does, bit for
// bit (the same steps in the same order; nothing of a later block reaches an earlier one), alone
// and in a batch, on GPT-2, Llama (GQA) and Gemma 2 (sliding layers).
TEST(ForwardStopAtLayer, TheRecordOfTheBlocksRunIsTheWholeForwardsBitForBit) {
  for (const char* name : {"gpt2_tiny", "families/llama", "families/gemma2"}) {
    auto expected = read_json_file(fixture_dir(name) + "/expected.json");
    Parameters p = load_fixture(name, "model.safetensors");
    const auto ids = expected["ids"].get<std::vector<int>>();
    const int L = p.config.n_layer, T = static_cast<int>(ids.size()), C = p.config.n_embd;
    ForwardOptions all;
    all.record = {.pattern = true, .scores = true, .qkv = true, .z = true, .head_out = true, .residual = true};
    ForwardOutput whole;
    Workspace ws;
    ASSERT_TRUE(forward(p, ids, all, whole, ws)) << name;
    for (int l = 0; l <= L; l++) {
      ForwardOptions stop = all;
      stop.logits = false;
      stop.stop_at_layer = l;
      ForwardOutput part;
      ASSERT_TRUE(forward(p, ids, stop, part, ws)) << name << " stop " << l;
      const std::string where = std::string(name) + ", stop at " + std::to_string(l);
      EXPECT_EQ(part.record.L, l) << where;
      EXPECT_TRUE(part.logits.empty()) << where;
      auto head = [](const std::vector<float>& v, std::size_t n) { return std::vector<float>(v.begin(), v.begin() + n); };
      const std::size_t per_layer = whole.record.pattern.size() / std::size_t(L);
      EXPECT_EQ(part.record.pattern, head(whole.record.pattern, per_layer * l)) << where;
      EXPECT_EQ(part.record.scores, head(whole.record.scores, per_layer * l)) << where;
      EXPECT_EQ(part.record.qkv, head(whole.record.qkv, whole.record.qkv.size() / L * l)) << where;
      EXPECT_EQ(part.record.z, head(whole.record.z, whole.record.z.size() / L * l)) << where;
      EXPECT_EQ(part.record.head_out, head(whole.record.head_out, whole.record.head_out.size() / L * l)) << where;
      // residual[l] is what enters block l: the last block run's output
      EXPECT_EQ(part.record.residual, head(whole.record.residual, std::size_t(l + 1) * T * C)) << where;
      EXPECT_EQ(forward_bytes(p.config, T, stop) <= forward_bytes(p.config, T, all), true) << where;
    }
    // in a batch of two (the server's pool runs it so): each sequence's record as alone
    ForwardOptions stop = all;
    stop.logits = false;
    stop.stop_at_layer = 1;
    std::vector<int> other(ids.rbegin(), ids.rend());
    std::vector<std::span<const int>> seqs = {ids, other};
    std::vector<ForwardOutput> outs;
    ASSERT_TRUE(forward_batch(p, seqs, stop, outs, ws)) << name;
    ForwardOutput lone;
    ASSERT_TRUE(forward(p, other, stop, lone, ws));
    EXPECT_EQ(outs[1].record.pattern, lone.record.pattern) << name;
    EXPECT_EQ(outs[1].record.residual, lone.record.residual) << name;
  }
}

TEST(ForwardStopAtLayer, AForwardThatNeedsTheLogitsOrTheLossCannotStopEarly) {
  Parameters p = load_fixture("gpt2_tiny", "model.safetensors");
  std::vector<int> ids = {1, 2, 3};
  Workspace ws;
  ForwardOutput out;
  ForwardOptions opt;
  opt.stop_at_layer = 1;  // logits on (the default)
  Status s = forward(p, ids, opt, out, ws);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, ErrorCode::invalid_argument);
  EXPECT_NE(s.error().message.find("logits"), std::string::npos) << s.error().message;
  opt.logits = false;
  opt.loss = true;
  EXPECT_FALSE(forward(p, ids, opt, out, ws));
  opt.loss = false;
  opt.stop_at_layer = p.config.n_layer + 1;
  EXPECT_FALSE(forward(p, ids, opt, out, ws));
  // stopping at the last block is the whole forward: the logits may be asked
  opt.stop_at_layer = p.config.n_layer;
  opt.logits = true;
  ASSERT_TRUE(forward(p, ids, opt, out, ws));
  EXPECT_EQ(out.logits.size(), std::size_t(3) * p.config.vocab_size);
}
