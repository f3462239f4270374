// research/attribution_patching.cpp — attribution patching (see attribution_patching.h): per
// prompt pair a base run (its residual stream and the swept points recorded, its metric's
// gradient taken back through model/backward.h) and a source run (the same points), then every
// index of the sweep is a sum of gradient x difference over its slice.
#include "research/attribution_patching.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
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

// Which part of an activation one index covers (patching.cpp's slices), the activation dense
// in its hook's shape: rows (T, C); heads (T, H, HS); patterns (NH, T, T).
enum class Slice { row, head_all, head_pos, pattern_head, pattern_head_dest };

struct Part {
  PatchWhat what;
  HookPoint point;
  Slice slice;
};

Part part_of(PatchWhat w) {
  switch (w) {
    case PatchWhat::resid_pre: return {w, HookPoint::resid_pre, Slice::row};
    case PatchWhat::resid_mid: return {w, HookPoint::resid_mid, Slice::row};
    case PatchWhat::attn_out: return {w, HookPoint::attn_out, Slice::row};
    case PatchWhat::mlp_out: return {w, HookPoint::mlp_out, Slice::row};
    case PatchWhat::z_all_pos: return {w, HookPoint::z, Slice::head_all};
    case PatchWhat::q_all_pos: return {w, HookPoint::q, Slice::head_all};
    case PatchWhat::k_all_pos: return {w, HookPoint::k, Slice::head_all};
    case PatchWhat::v_all_pos: return {w, HookPoint::v, Slice::head_all};
    case PatchWhat::pattern_all_pos: return {w, HookPoint::pattern, Slice::pattern_head};
    case PatchWhat::z_by_pos: return {w, HookPoint::z, Slice::head_pos};
    case PatchWhat::q_by_pos: return {w, HookPoint::q, Slice::head_pos};
    case PatchWhat::k_by_pos: return {w, HookPoint::k, Slice::head_pos};
    case PatchWhat::v_by_pos: return {w, HookPoint::v, Slice::head_pos};
    case PatchWhat::pattern_by_pos: return {w, HookPoint::pattern, Slice::pattern_head_dest};
    default: return {w, HookPoint::count, Slice::row};
  }
}

// The single sweeps of a request (the *_every: several, in patching.h's order).
std::vector<Part> parts_of(PatchWhat w) {
  std::vector<PatchWhat> ws;
  switch (w) {
    case PatchWhat::block_every: ws = {PatchWhat::resid_pre, PatchWhat::attn_out, PatchWhat::mlp_out}; break;
    case PatchWhat::attn_head_all_pos_every:
      ws = {PatchWhat::z_all_pos, PatchWhat::q_all_pos, PatchWhat::k_all_pos, PatchWhat::v_all_pos,
            PatchWhat::pattern_all_pos};
      break;
    case PatchWhat::attn_head_by_pos_every:
      ws = {PatchWhat::z_by_pos, PatchWhat::q_by_pos, PatchWhat::k_by_pos, PatchWhat::v_by_pos, PatchWhat::pattern_by_pos};
      break;
    default: ws = {w};
  }
  std::vector<Part> out;
  for (PatchWhat x : ws) out.push_back(part_of(x));
  return out;
}

// The name of a part along an *_every's patch_type axis, as patching's: "resid_pre", "z", "pattern" …
std::string patch_type_name(const Part& part) {
  if (part.slice == Slice::row) return std::string(patch_what_name(part.what));
  return std::string(model::hook_suffix(part.point).substr(std::string_view("attn.hook_").size()));
}

// d metric / d logits of one run, the metric as patching's run_metric (normalized: the logit
// difference; it is normalised once the sweep is done).
std::vector<model::LogitGradient> metric_gradient(const ForwardOutput& out, const std::vector<int>& ids,
                                                  const PatchPair& pair, PatchMetric m,
                                                  const std::optional<LossPositions>& loss_positions) {
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
  // loss: the mean over t in [from, to) (every t < T-1 by default) of -log softmax(logits[t])[ids[t+1]]
  const LossPositions lp = loss_positions_for(loss_positions.value_or(LossPositions{}), T);
  const float inv = 1.0f / float(lp.to - lp.from);
  for (int t = lp.from; t < lp.to; t++) {
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

Result<PatchCost> attribution_patch_cost(const ModelConfig& c, std::span<const PatchPair> pairs, const PatchRequest& rq) {
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
  const std::vector<Part> parts = parts_of(rq.what);
  const int NKV = c.kv_heads(), QKV = c.qkv_width();
  const double n_pairs = double(pairs.size());
  const int nL = static_cast<int>(layers.size()), nP = static_cast<int>(positions.size());
  auto heads_of = [&](HookPoint p) { return p == HookPoint::k || p == HookPoint::v ? NKV : NH; };

  // acc[part]: each part's values in its own axes (patching.cpp's sites' order): (layer, pos),
  // (layer, head), (layer, pos, head), or (layer, head, dest_pos) for pattern_by_pos
  auto cells_of = [&](const Part& part) {
    const std::size_t H = std::size_t(heads_of(part.point));
    switch (part.slice) {
      case Slice::row: return std::size_t(nL) * nP;
      case Slice::head_all:
      case Slice::pattern_head: return std::size_t(nL) * H;
      default: return std::size_t(nL) * nP * H;
    }
  };
  std::vector<std::vector<double>> acc(parts.size());
  for (std::size_t i = 0; i < parts.size(); i++) acc[i].assign(cells_of(parts[i]), 0.0);
  bool any_pattern = false;
  for (const Part& part : parts) any_pattern = any_pattern || part.point == HookPoint::pattern;
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

    // 1. both runs: the residual stream (resid_pre of every block), the swept points (and v,
    //    which the pattern's gradient reads), the metric
    auto run = [&](const std::vector<int>& ids, ForwardOutput& out, Captures& caps, double& metric) -> Status {
      ForwardHooks hooks(L);
      for (const Part& part : parts)
        if (part.point != HookPoint::resid_pre)
          for (int l : layers) hooks.want(part.point, l);
      if (any_pattern)
        for (int l : layers) hooks.want(HookPoint::v, l);
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
      if (rq.metric == PatchMetric::loss && rq.loss_positions)
        metric = patch_loss_over(out, ids, loss_positions_for(*rq.loss_positions, static_cast<int>(ids.size())));
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
    const auto dlogits = metric_gradient(base_out, base_ids, pair, rq.metric, rq.loss_positions);
    if (Status s = model::backward(params, base_ids, base_out.record.residual, dlogits, grads); !s)
      return tl::unexpected(s.error());

    // 3. each index: m(base) + sum over its slice of gradient x (source - base)
    const std::size_t TC = std::size_t(T) * C;
    for (std::size_t pi = 0; pi < parts.size(); pi++) {
      const Part& part = parts[pi];
      const int H = heads_of(part.point);
      std::vector<double>& out = acc[pi];
      for (int li = 0; li < nL; li++) {
        const int l = layers[std::size_t(li)];
        const float *a_base, *a_source;
        if (part.point == HookPoint::resid_pre) {
          a_base = base_out.record.residual.data() + std::size_t(l) * TC;
          a_source = source_out.record.residual.data() + std::size_t(l) * TC;
        } else {
          a_base = base.at({part.point, l}).data();
          a_source = source.at({part.point, l}).data();
        }
        auto add = [&](std::size_t cell, double attribution) { out[cell] += (base_metric + attribution) / n_pairs; };
        if (part.slice == Slice::row) {  // (T, C) against the stream's gradient
          const float* g = part.point == HookPoint::resid_pre   ? grads.resid_pre_at(l)
                           : part.point == HookPoint::resid_mid ? grads.resid_mid_at(l)
                           : part.point == HookPoint::attn_out  ? grads.attn_out_at(l)
                                                                : grads.mlp_out_at(l);
          for (int pi2 = 0; pi2 < nP; pi2++) {
            const int t = positions[std::size_t(pi2)];
            double s = 0.0;
            for (int i = 0; t < T && i < C; i++) {
              const std::size_t at = std::size_t(t) * C + i;
              s += double(g[at]) * (double(a_source[at]) - a_base[at]);
            }
            add(std::size_t(li) * nP + pi2, s);
          }
          continue;
        }
        if (part.point == HookPoint::pattern) {
          // dpattern[h, t, t2] = dz[t, h] . v[t2, kv(h)] over (NH, T, T), causal half only
          const float* dz = grads.z_at(l);
          const float* v = base.at({HookPoint::v, l}).data();  // (T, NKV, HS)
          auto row = [&](int h, int t) {  // the attribution of query row t of head h
            double s = 0.0;
            for (int t2 = 0; t2 <= t; t2++) {
              double dp = 0.0;
              const float* vz = v + (std::size_t(t2) * NKV + c.kv_head_of(h)) * HS;
              for (int i = 0; i < HS; i++) dp += double(dz[std::size_t(t) * D + h * HS + i]) * vz[i];
              const std::size_t at = (std::size_t(h) * T + t) * T + t2;
              s += dp * (double(a_source[at]) - a_base[at]);
            }
            return s;
          };
          for (int h = 0; h < NH; h++) {
            if (part.slice == Slice::pattern_head) {
              double s = 0.0;
              for (int t = 0; t < T; t++) s += row(h, t);
              add(std::size_t(li) * NH + h, s);
            } else {  // (layer, head, dest_pos)
              for (int pi2 = 0; pi2 < nP; pi2++) {
                const int t = positions[std::size_t(pi2)];
                add((std::size_t(li) * NH + h) * nP + pi2, t < T ? row(h, t) : 0.0);
              }
            }
          }
          continue;
        }
        // a head's vector, (T, H, HS) dense, against z's (T, D) or q/k/v's (T, QKV) gradient
        const float* g = part.point == HookPoint::z ? grads.z_at(l) : grads.qkv_at(l);
        const int g_stride = part.point == HookPoint::z ? D : QKV;
        const int g_col = part.point == HookPoint::k ? D : (part.point == HookPoint::v ? D + NKV * HS : 0);
        auto head = [&](int t, int h) {
          double s = 0.0;
          for (int i = 0; i < HS; i++) {
            const std::size_t at = (std::size_t(t) * H + h) * HS + i;
            s += double(g[std::size_t(t) * g_stride + g_col + h * HS + i]) * (double(a_source[at]) - a_base[at]);
          }
          return s;
        };
        for (int h = 0; h < H; h++) {
          if (part.slice == Slice::head_all) {
            double s = 0.0;
            for (int t = 0; t < T; t++) s += head(t, h);
            add(std::size_t(li) * H + h, s);
          } else {  // (layer, pos, head)
            for (int pi2 = 0; pi2 < nP; pi2++) {
              const int t = positions[std::size_t(pi2)];
              add((std::size_t(li) * nP + pi2) * H + h, t < T ? head(t, h) : 0.0);
            }
          }
        }
      }
    }
    ++done;
    if (rq.progress) rq.progress(done, pairs.size());
  }

  // 4. the answer in activation patching's axes (the *_every stacked as patch() stacks them:
  //    k and v padded with 0 to NH, the pattern's (head, pos) transposed to (pos, head))
  if (rq.metric == PatchMetric::normalized && !(std::fabs(clean_sum - corrupted_sum) > 1e-6))
    return make_error(ErrorCode::invalid_argument,
                      "the normalized metric divides by the clean minus the corrupted logit difference, and both are " +
                          std::to_string(clean_sum) +
                          ": the corrupted prompts do not change the answer. Use --metric logit_diff, or corrupted "
                          "prompts that favour the wrong token");
  PatchResult r;
  r.what = rq.what, r.metric = rq.metric, r.noising = rq.noising;
  r.loss_positions = rq.loss_positions;
  r.layers = layers;
  for (const Steering& st : rq.steering) r.steering.push_back({st.layer, st.from, st.rows, st.coef});
  r.cost = *cost;
  auto final_value = [&](double v) -> float {
    if (rq.metric == PatchMetric::normalized) return float((v - corrupted_sum) / (clean_sum - corrupted_sum));
    return float(v);
  };
  r.clean = final_value(clean_sum);
  r.corrupted = final_value(corrupted_sum);
  const bool every = parts.size() > 1;
  if (!every) {
    const Part& part = parts[0];
    r.heads = heads_of(part.point);
    switch (part.slice) {
      case Slice::row: r.axes = {"layer", "pos"}, r.shape = {nL, nP}; break;
      case Slice::head_all:
      case Slice::pattern_head: r.axes = {"layer", "head"}, r.shape = {nL, r.heads}; break;
      case Slice::head_pos: r.axes = {"layer", "pos", "head"}, r.shape = {nL, nP, r.heads}; break;
      case Slice::pattern_head_dest: r.axes = {"layer", "head", "dest_pos"}, r.shape = {nL, r.heads, nP}; break;
    }
    for (double v : acc[0]) r.values.push_back(final_value(v));
  } else {
    for (const Part& part : parts) r.patch_types.push_back(patch_type_name(part));
    const int n_types = static_cast<int>(parts.size());
    r.heads = NH;
    if (rq.what == PatchWhat::block_every) {
      r.axes = {"patch_type", "layer", "pos"}, r.shape = {n_types, nL, nP};
      for (const std::vector<double>& a : acc)
        for (double v : a) r.values.push_back(final_value(v));
    } else {
      const bool by_pos = rq.what == PatchWhat::attn_head_by_pos_every;
      if (by_pos) r.axes = {"patch_type", "layer", "pos", "head"}, r.shape = {n_types, nL, nP, NH};
      else r.axes = {"patch_type", "layer", "head"}, r.shape = {n_types, nL, NH};
      const std::size_t cells = by_pos ? std::size_t(nL) * nP * NH : std::size_t(nL) * NH;
      r.values.assign(std::size_t(n_types) * cells, 0.0f);
      for (std::size_t pi = 0; pi < parts.size(); pi++) {
        float* dst = r.values.data() + pi * cells;
        const int H = heads_of(parts[pi].point);
        const bool pattern_dest = parts[pi].slice == Slice::pattern_head_dest;  // (layer, head, pos) -> (layer, pos, head)
        for (int li = 0; li < nL; li++)
          for (int h = 0; h < H; h++) {
            if (!by_pos) {
              dst[std::size_t(li) * NH + h] = final_value(acc[pi][std::size_t(li) * H + h]);
              continue;
            }
            for (int p = 0; p < nP; p++)
              dst[(std::size_t(li) * nP + p) * NH + h] =
                  final_value(pattern_dest ? acc[pi][(std::size_t(li) * H + h) * nP + p] : acc[pi][(std::size_t(li) * nP + p) * H + h]);
          }
      }
    }
  }
  bool any_pos = false;
  for (const Part& part : parts) any_pos = any_pos || part.slice == Slice::row || part.slice == Slice::head_pos ||
                                           part.slice == Slice::pattern_head_dest;
  if (any_pos) r.positions = positions;
  return r;
}

}  // namespace headlab::research
