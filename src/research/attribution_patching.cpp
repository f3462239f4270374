// research/attribution_patching.cpp — attribution patching (see attribution_patching.h): per
// prompt pair a base run (its residual stream and the swept points recorded, its metric's
// gradient taken back through model/backward.h) and a source run (the same points), then every
// index of the sweep is a sum of gradient x difference over its slice.
#include "research/attribution_patching.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "model/backward.h"
#include "model/hooks.h"
#include "model/next_token.h"

namespace headlab::research {

using model::ForwardHooks;
using model::ForwardOptions;
using model::ForwardOutput;
using model::HookPoint;
using model::HookView;
using model::ModelConfig;

namespace {

Status bad(std::string message) { return make_error(ErrorCode::invalid_argument, std::move(message)); }

// The sweeps attribution covers, each as activation patching's single sweeps (block_every: three).
std::vector<PatchWhat> parts_of(PatchWhat w) {
  if (w == PatchWhat::block_every) return {PatchWhat::resid_pre, PatchWhat::attn_out, PatchWhat::mlp_out};
  return {w};
}

bool by_head(PatchWhat w) { return w == PatchWhat::z_all_pos || w == PatchWhat::z_by_pos; }

// The hook point a part reads (resid_pre comes from the record instead).
HookPoint point_of(PatchWhat w) {
  switch (w) {
    case PatchWhat::resid_mid: return HookPoint::resid_mid;
    case PatchWhat::attn_out: return HookPoint::attn_out;
    case PatchWhat::mlp_out: return HookPoint::mlp_out;
    case PatchWhat::z_all_pos:
    case PatchWhat::z_by_pos: return HookPoint::z;
    default: return HookPoint::resid_pre;
  }
}

// The gradient at a part's hook point of layer l: (T, C), or (T, D) for z.
const float* grad_of(const model::ActivationGradients& g, PatchWhat w, int l) {
  switch (w) {
    case PatchWhat::resid_mid: return g.resid_mid_at(l);
    case PatchWhat::attn_out: return g.attn_out_at(l);
    case PatchWhat::mlp_out: return g.mlp_out_at(l);
    case PatchWhat::z_all_pos:
    case PatchWhat::z_by_pos: return g.z_at(l);
    default: return g.resid_pre_at(l);
  }
}

// d metric / d logits of one run, the metric as patching's run_metric (normalized: the logit
// difference; it is normalised once the sweep is done).
std::vector<model::LogitGradient> metric_gradient(const ForwardOutput& out, const std::vector<int>& ids,
                                                  const PatchPair& pair, PatchMetric m) {
  const int T = out.T, V = out.V;
  if (m == PatchMetric::logit_diff || m == PatchMetric::normalized) return {{T - 1, {pair.answer, pair.wrong}, {1.0f, -1.0f}}};
  // softmax of row t, in double
  auto softmax = [&](int t) {
    const float* row = out.logits.data() + std::size_t(t) * V;
    const double lse = model::row_log_sum_exp(row, V);
    std::vector<float> p(static_cast<std::size_t>(V));
    for (int v = 0; v < V; v++) p[std::size_t(v)] = static_cast<float>(std::exp(double(row[v]) - lse));
    return p;
  };
  std::vector<model::LogitGradient> g;
  if (m == PatchMetric::logprob) {  // log softmax[answer]: onehot(answer) - softmax
    std::vector<float> d = softmax(T - 1);
    for (float& x : d) x = -x;
    d[std::size_t(pair.answer)] += 1.0f;
    g.push_back({T - 1, {}, std::move(d)});
    return g;
  }
  // loss: the mean over t < T-1 of -log softmax(logits[t])[ids[t+1]]
  const float inv = 1.0f / float(T - 1);
  for (int t = 0; t + 1 < T; t++) {
    std::vector<float> d = softmax(t);
    d[std::size_t(ids[std::size_t(t) + 1])] -= 1.0f;
    for (float& x : d) x *= inv;
    g.push_back({t, {}, std::move(d)});
  }
  return g;
}

double block_multiply_adds(const ModelConfig& c) {
  const double C = c.n_embd;
  double m = C * c.qkv_width() + double(c.q_width()) * C;
  if (c.mlp) m += C * c.fc_width() + double(c.mlp_width()) * C;
  return m;
}

// One run's activations at the swept points, dense in their hooks' shapes, by (point, layer).
using Captures = std::map<std::pair<HookPoint, int>, std::vector<float>>;

}  // namespace

std::string_view patch_method_name(PatchMethod m) { return m == PatchMethod::attribution ? "attribution" : "activation"; }

std::optional<PatchMethod> parse_patch_method(std::string_view name) {
  if (name == "activation") return PatchMethod::activation;
  if (name == "attribution") return PatchMethod::attribution;
  return std::nullopt;
}

bool attribution_patch_supports(PatchWhat w) {
  switch (w) {
    case PatchWhat::resid_pre:
    case PatchWhat::resid_mid:
    case PatchWhat::attn_out:
    case PatchWhat::mlp_out:
    case PatchWhat::z_all_pos:
    case PatchWhat::z_by_pos:
    case PatchWhat::block_every: return true;
    default: return false;
  }
}

Result<PatchCost> attribution_patch_cost(const ModelConfig& c, std::span<const PatchPair> pairs, const PatchRequest& rq) {
  if (!attribution_patch_supports(rq.what))
    return tl::unexpected(bad("attribution patching covers resid_pre, resid_mid, attn_out, mlp_out, z_all_pos, "
                              "z_by_pos and block_every, not " + std::string(patch_what_name(rq.what)) +
                              "; patch q, k, v or the pattern with the activation method")
                              .error());
  auto checked = patch_cost(c, pairs, rq);  // the same checks as activation patching
  if (!checked) return tl::unexpected(checked.error());
  PatchCost cost;
  for (const PatchPair& pair : pairs) {
    cost.forwards += 2;
    cost.block_tokens += 4 * pair.clean.size() * std::size_t(c.n_layer);  // 2 forwards + the backward (~2)
  }
  cost.multiply_adds = double(cost.block_tokens) * block_multiply_adds(c);
  return cost;
}

Result<PatchResult> attribution_patch(const model::Parameters& params, std::span<const PatchPair> pairs,
                                      const PatchRequest& rq, model::Workspace& ws) {
  const ModelConfig& c = params.config;
  const int L = c.n_layer, NH = c.n_head, HS = c.head_size(), C = c.n_embd, D = c.q_width();
  auto cost = attribution_patch_cost(c, pairs, rq);
  if (!cost) return tl::unexpected(cost.error());
  int max_T = 0;
  for (const PatchPair& p : pairs) max_T = std::max(max_T, static_cast<int>(p.clean.size()));
  std::vector<int> layers = rq.layers, positions = rq.positions;
  for (std::vector<int>* v : {&layers, &positions}) {
    std::sort(v->begin(), v->end());
    v->erase(std::unique(v->begin(), v->end()), v->end());
  }
  if (layers.empty())
    for (int l = 0; l < L; l++) layers.push_back(l);
  if (positions.empty())
    for (int p = 0; p < max_T; p++) positions.push_back(p);
  const std::vector<PatchWhat> parts = parts_of(rq.what);
  const double n_pairs = double(pairs.size());
  const int nL = static_cast<int>(layers.size()), nP = static_cast<int>(positions.size());

  // acc[part]: each part's values in its own axes, (layer, pos), (layer, head) or (layer, pos, head)
  auto cells_of = [&](PatchWhat w) {
    return w == PatchWhat::z_all_pos ? std::size_t(nL) * NH
                                     : (w == PatchWhat::z_by_pos ? std::size_t(nL) * nP * NH : std::size_t(nL) * nP);
  };
  std::vector<std::vector<double>> acc(parts.size());
  for (std::size_t i = 0; i < parts.size(); i++) acc[i].assign(cells_of(parts[i]), 0.0);
  double clean_sum = 0, corrupted_sum = 0;
  ForwardOutput base_out, source_out;
  std::size_t done = 0;

  for (const PatchPair& pair : pairs) {
    if (rq.keep_going && !rq.keep_going())
      return make_error(ErrorCode::unavailable, "attribution patching was stopped after " + std::to_string(done) +
                                                    " of " + std::to_string(pairs.size()) + " prompt pairs");
    const std::vector<int>& base_ids = rq.noising ? pair.clean : pair.corrupted;
    const std::vector<int>& source_ids = rq.noising ? pair.corrupted : pair.clean;
    const int T = static_cast<int>(base_ids.size());

    // 1. both runs: the residual stream (resid_pre of every block), the swept points, the metric
    auto run = [&](const std::vector<int>& ids, ForwardOutput& out, Captures& caps, double& metric) -> Status {
      ForwardHooks hooks(L);
      for (PatchWhat w : parts)
        if (w != PatchWhat::resid_pre)
          for (int l : layers) hooks.want(point_of(w), l);
      for (const Steering& s : rq.steering) hooks.want(HookPoint::resid_pre, s.layer);
      hooks.at = [&](HookPoint p, int layer, const HookView& v) {
        if (p == HookPoint::resid_pre) {
          for (const Steering& s : rq.steering)
            if (s.layer == layer) steering_add(s, v);
          return;
        }
        std::vector<float>& dst = caps[{p, layer}];
        dst.resize(v.size());
        v.copy_to(dst.data());
      };
      ForwardOptions o;
      o.hooks = &hooks;
      o.record.residual = true;
      patch_metric_options(o, pair, rq.metric, /*columns_only=*/true);
      if (rq.metric == PatchMetric::loss) o.logits = true;  // its gradient reads every logit
      if (Status s = model::forward(params, ids, o, out, ws); !s) return s;
      metric = patch_run_metric(out, pair, rq.metric, /*columns_only=*/true);
      return {};
    };
    Captures base, source;
    double base_metric = 0, source_metric = 0;
    if (Status s = run(base_ids, base_out, base, base_metric); !s) return tl::unexpected(s.error());
    if (Status s = run(source_ids, source_out, source, source_metric); !s) return tl::unexpected(s.error());
    (rq.noising ? clean_sum : corrupted_sum) += base_metric / n_pairs;
    (rq.noising ? corrupted_sum : clean_sum) += source_metric / n_pairs;

    // 2. the base run's metric back to every hook point
    model::ActivationGradients grads;
    const auto dlogits = metric_gradient(base_out, base_ids, pair, rq.metric);
    if (Status s = model::backward(params, base_ids, base_out.record.residual, dlogits, grads); !s)
      return tl::unexpected(s.error());

    // 3. each index: m(base) + sum over its slice of gradient x (source - base)
    const std::size_t TC = std::size_t(T) * C;
    for (std::size_t pi = 0; pi < parts.size(); pi++) {
      const PatchWhat w = parts[pi];
      const int W = by_head(w) ? D : C;  // a row's width
      std::vector<double>& out = acc[pi];
      for (int li = 0; li < nL; li++) {
        const int l = layers[std::size_t(li)];
        const float *a_base, *a_source;
        if (w == PatchWhat::resid_pre) {
          a_base = base_out.record.residual.data() + std::size_t(l) * TC;
          a_source = source_out.record.residual.data() + std::size_t(l) * TC;
        } else {
          a_base = base.at({point_of(w), l}).data();
          a_source = source.at({point_of(w), l}).data();
        }
        const float* g = grad_of(grads, w, l);
        // attribution of columns [i0, i0 + n) of row t
        auto attr = [&](int t, int i0, int n) {
          double s = 0.0;
          const std::size_t at = std::size_t(t) * W + i0;
          for (int i = 0; i < n; i++) s += double(g[at + i]) * (double(a_source[at + i]) - a_base[at + i]);
          return s;
        };
        if (w == PatchWhat::z_all_pos) {
          for (int h = 0; h < NH; h++) {
            double s = 0.0;
            for (int t = 0; t < T; t++) s += attr(t, h * HS, HS);
            out[std::size_t(li) * NH + h] += (base_metric + s) / n_pairs;
          }
          continue;
        }
        for (int pi2 = 0; pi2 < nP; pi2++) {
          const int t = positions[std::size_t(pi2)];
          if (w == PatchWhat::z_by_pos) {
            for (int h = 0; h < NH; h++)
              out[(std::size_t(li) * nP + pi2) * NH + h] += (base_metric + (t < T ? attr(t, h * HS, HS) : 0.0)) / n_pairs;
          } else {
            out[std::size_t(li) * nP + pi2] += (base_metric + (t < T ? attr(t, 0, C) : 0.0)) / n_pairs;
          }
        }
      }
    }
    ++done;
    if (rq.progress) rq.progress(done, pairs.size());
  }

  // 4. the answer in activation patching's axes
  if (rq.metric == PatchMetric::normalized && !(std::fabs(clean_sum - corrupted_sum) > 1e-6))
    return make_error(ErrorCode::invalid_argument,
                      "the normalized metric divides by the clean minus the corrupted logit difference, and both are " +
                          std::to_string(clean_sum) +
                          ": the corrupted prompts do not change the answer. Use --metric logit_diff, or corrupted "
                          "prompts that favour the wrong token");
  PatchResult r;
  r.what = rq.what, r.metric = rq.metric, r.noising = rq.noising;
  r.layers = layers;
  for (const Steering& st : rq.steering) r.steering.push_back({st.layer, st.from, st.rows, st.coef});
  r.cost = *cost;
  auto final_value = [&](double v) -> float {
    if (rq.metric == PatchMetric::normalized) return float((v - corrupted_sum) / (clean_sum - corrupted_sum));
    return float(v);
  };
  r.clean = final_value(clean_sum);
  r.corrupted = final_value(corrupted_sum);
  r.heads = NH;
  if (rq.what == PatchWhat::block_every) {
    r.axes = {"patch_type", "layer", "pos"}, r.shape = {3, nL, nP};
    r.patch_types = {"resid_pre", "attn_out", "mlp_out"};
  } else if (rq.what == PatchWhat::z_all_pos) {
    r.axes = {"layer", "head"}, r.shape = {nL, NH};
  } else if (rq.what == PatchWhat::z_by_pos) {
    r.axes = {"layer", "pos", "head"}, r.shape = {nL, nP, NH};
  } else {
    r.axes = {"layer", "pos"}, r.shape = {nL, nP};
  }
  for (const std::vector<double>& a : acc)
    for (double v : a) r.values.push_back(final_value(v));
  if (rq.what != PatchWhat::z_all_pos) r.positions = positions;
  return r;
}

}  // namespace headlab::research
