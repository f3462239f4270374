// Tests for the model's backward (model/backward.h): the gradient of a metric of the logits at
// every hook point attribution patching reads, against central differences of the forward
// itself, on the random-weight fixture of each family (tools/reference/make_family_fixtures.py)
// and GPT-2's. The metric is linear in the logits, m = sum g . logits, at two tokens of the
// last position (a logit difference) and every token of an earlier one (a dense gradient, as
// the loss and log-prob metrics give), so its gradient with respect to the logits is g.
#include "model/backward.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "model/forward.h"
#include "model/hooks.h"
#include "testing/gradcheck.h"
#include "testing/model_fixtures.h"

using namespace headlab::model;
using headlab::testing::gradcheck;
using headlab::testing::GradcheckOptions;
using headlab::testing::random_vector;

namespace {

struct BackwardProbe {
  const Parameters& p;
  std::vector<int> ids;
  std::vector<LogitGradient> g;

  // m = sum g . logits of a run (its logits after Gemma 2's final soft-cap), in double.
  double metric(const ForwardOptions& opt) const {
    ForwardOutput out;
    Workspace ws;
    ForwardOptions o = opt;
    o.logits = true;
    EXPECT_TRUE(forward(p, ids, o, out, ws));
    double m = 0.0;
    for (const LogitGradient& lg : g) {
      const int n = lg.tokens.empty() ? out.V : int(lg.tokens.size());
      for (int j = 0; j < n; j++) {
        const int tok = lg.tokens.empty() ? j : lg.tokens[std::size_t(j)];
        m += double(lg.grad[std::size_t(j)]) * out.logits[std::size_t(lg.position) * out.V + tok];
      }
    }
    return m;
  }
  // The metric with `delta` (the hook's shape) added at hook point `point` of block `layer`.
  double metric_with(HookPoint point, int layer, const std::vector<float>& delta) const {
    ForwardHooks hooks(p.config.n_layer);
    hooks.want(point, layer);
    hooks.at = [&](HookPoint, int, const HookView& v) {
      std::vector<float> now(v.size());
      v.copy_to(now.data());
      for (std::size_t i = 0; i < now.size(); i++) now[i] += delta[i];
      v.copy_from(now.data());
    };
    ForwardOptions opt;
    opt.hooks = &hooks;
    return metric(opt);
  }
};

void check_backward_of(const std::string& fixture) {
  SCOPED_TRACE(fixture);
  const Parameters p = headlab::testing::load_fixture(fixture, "model.safetensors");
  const ModelConfig& c = p.config;
  const int T = 5, V = c.vocab_size, L = c.n_layer, C = c.n_embd, D = c.q_width();
  BackwardProbe probe{p, {}, {}};
  for (int t = 0; t < T; t++) probe.ids.push_back((7 * t + 3) % V);
  probe.g.push_back({T - 1, {2, 5}, {1.0f, -1.0f}});
  probe.g.push_back({1, {}, random_vector(std::size_t(V), 3, 0.2f)});

  ForwardOptions opt;
  opt.record.residual = true;
  ForwardOutput out;
  Workspace ws;
  ASSERT_TRUE(forward(p, probe.ids, opt, out, ws));
  ActivationGradients grads;
  ASSERT_TRUE(backward(p, probe.ids, out.record.residual, probe.g, grads));

  // Float32 forwards: with a step of 1e-2 the rounding of a metric of size ~1 (1e-7) costs
  // ~1e-5 in the quotient and the truncation (eps^2 f''' / 6) ~1e-4; 2e-3 + 2% covers both.
  GradcheckOptions fd;
  fd.eps = 1e-2, fd.atol = 2e-3, fd.rtol = 2e-2, fd.max_elements = 4;
  const std::size_t TC = std::size_t(T) * C;
  for (int l = 0; l <= L; l++) {  // resid_pre (and the final stream at L), through start_layer from 1
    std::vector<float> x(out.record.residual.begin() + std::ptrdiff_t(l * TC),
                         out.record.residual.begin() + std::ptrdiff_t((l + 1) * TC));
    std::vector<float> delta(TC, 0.0f);  // layer 0: start_layer = 0 runs the embedding, so a hook adds the nudge
    auto m = [&] {
      if (l == 0) {
        for (std::size_t i = 0; i < TC; i++) delta[i] = x[i] - out.record.residual[i];
        return probe.metric_with(HookPoint::resid_pre, 0, delta);
      }
      ForwardOptions o;
      o.start_layer = l, o.start_resid = x.data();
      return probe.metric(o);
    };
    EXPECT_TRUE(gradcheck(fixture + " resid_pre " + std::to_string(l), m, x.data(), x.size(), grads.resid_pre_at(l), fd));
  }
  for (int l = 0; l < L; l++) {
    struct Point { HookPoint point; const float* grad; std::size_t n; const char* name; };
    std::vector<Point> points = {{HookPoint::z, grads.z_at(l), std::size_t(T) * D, "z"},
                                 {HookPoint::attn_out, grads.attn_out_at(l), TC, "attn_out"}};
    if (c.mlp) points.push_back({HookPoint::mlp_out, grads.mlp_out_at(l), TC, "mlp_out"});
    if (grads.sequential_mlp) points.push_back({HookPoint::resid_mid, grads.resid_mid_at(l), TC, "resid_mid"});
    // q, k, v: their columns of the (T, QKV) gradient, dense as the hooks' (T, heads, HS)
    const int QKV = c.qkv_width(), KW = c.kv_heads() * c.head_size();
    std::vector<std::vector<float>> dense;
    for (auto [col, width] : {std::pair{0, D}, std::pair{D, KW}, std::pair{D + KW, KW}}) {
      std::vector<float> d(std::size_t(T) * width);
      for (int t = 0; t < T; t++)
        for (int i = 0; i < width; i++) d[std::size_t(t) * width + i] = grads.qkv_at(l)[std::size_t(t) * QKV + col + i];
      dense.push_back(std::move(d));
    }
    points.push_back({HookPoint::q, dense[0].data(), dense[0].size(), "q"});
    points.push_back({HookPoint::k, dense[1].data(), dense[1].size(), "k"});
    points.push_back({HookPoint::v, dense[2].data(), dense[2].size(), "v"});
    for (const Point& pt : points) {
      std::vector<float> delta(pt.n, 0.0f);
      auto m = [&] { return probe.metric_with(pt.point, l, delta); };
      EXPECT_TRUE(gradcheck(fixture + " " + pt.name + " " + std::to_string(l), m, delta.data(), delta.size(), pt.grad, fd));
    }
  }
}

}  // namespace

// GPT-2 (LayerNorm, learned positions, tanh GELU) and its attention-only variant.
TEST(ModelBackward, GradientsMatchFiniteDifferencesOnGpt2AndAttentionOnly) {
  check_backward_of("gpt2_tiny");
  check_backward_of("attn_only");
}

// Pythia (parallel residual, partial rotary, erf GELU), Llama (GQA, SwiGLU), Llama 3's scaled
// rotary, Mistral with a sliding window, Qwen 2 (q/k/v biases, MQA), Qwen 3 (q/k norm),
// Gemma 2 (soft-caps, sandwich norms, 1 + w, GeGLU, embedding scale) and Gemma 3 (local rotary).
TEST(ModelBackward, GradientsMatchFiniteDifferencesOnEveryFamily) {
  for (const char* f : {"families/pythia", "families/llama", "families/llama3", "families/mistral_window",
                        "families/qwen2", "families/qwen3", "families/gemma2", "families/gemma3"})
    check_backward_of(f);
}

// A residual of the wrong size is refused with a message that says how to make one.
TEST(ModelBackward, RefusesAResidualRecordOfTheWrongSize) {
  const Parameters p = headlab::testing::load_fixture("gpt2_tiny", "model.safetensors");
  std::vector<int> ids = {1, 2, 3};
  std::vector<float> residual(5, 0.0f);
  ActivationGradients g;
  headlab::Status s = backward(p, ids, residual, {}, g);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("record.residual"), std::string::npos);
}
