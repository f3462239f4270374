// research/path_patching.cpp — path patching (see path_patching.h): per prompt pair, the orig
// and new runs keep every head's z; then per sender, run 2 (sender from new, the other heads
// frozen to orig) gives the logits or the receivers' inputs, and run 3 puts those inputs into orig.
#include "research/path_patching.h"
#include "research/run_batch.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <utility>

#include "model/head_range.h"
#include "model/hooks.h"

namespace headlab::research {

using model::ForwardHooks;
using model::ForwardOptions;
using model::ForwardOutput;
using model::HookLayer;
using model::HookPoint;
using model::HookView;
using model::ModelConfig;

namespace {

Status bad(std::string message) { return make_error(ErrorCode::invalid_argument, std::move(message)); }

HookPoint input_point(char input) {
  return input == 'q' ? HookPoint::q : input == 'k' ? HookPoint::k : HookPoint::v;
}

// "12" -> 12; false unless a whole number of at most 6 digits.
bool whole(std::string_view s, int& v) {
  if (s.empty() || s.size() > 6 || s.find_first_not_of("0123456789") != std::string_view::npos) return false;
  v = 0;
  for (char ch : s) v = v * 10 + (ch - '0');
  return true;
}

std::vector<std::string_view> split_commas(std::string_view text) {
  std::vector<std::string_view> parts;
  std::size_t at = 0;
  while (at <= text.size()) {
    std::size_t comma = text.find(',', at);
    if (comma == std::string_view::npos) comma = text.size();
    std::string_view part = text.substr(at, comma - at);
    while (!part.empty() && part.front() == ' ') part.remove_prefix(1);
    while (!part.empty() && part.back() == ' ') part.remove_suffix(1);
    parts.push_back(part);
    at = comma + 1;
  }
  return parts;
}

// The checks path_patch_cost and path_patch share; fills the sorted senders and max_T.
Status check_request(const ModelConfig& c, std::span<const PatchPair> pairs, const PathPatchRequest& rq,
                     std::vector<HeadIndex>& senders, int& max_T) {
  if (Status s = patch_check_pairs(c, pairs, rq.metric, max_T); !s) return s;
  if (Status s = patch_check_loss_positions(pairs, rq.metric, rq.loss_positions); !s) return s;
  for (std::size_t i = 0; i < rq.receivers.size(); i++) {
    const PathReceiver& r = rq.receivers[i];
    if (r.input != 'q' && r.input != 'k' && r.input != 'v')
      return bad("receiver " + std::to_string(r.layer) + "." + std::to_string(r.head) +
                 ": the input must be q, k or v (like 1.2:k)");
    if (Status s = model::check_layer(c, r.layer); !s) return bad("receiver " + path_receiver_name(r) + ": " + s.error().message);
    const int heads = r.input == 'q' ? c.n_head : c.kv_heads();
    if (r.head < 0 || r.head >= heads)
      return bad("receiver " + path_receiver_name(r) + ": head " + std::to_string(r.head) + " does not exist: " +
                 (r.input == 'q' ? std::string("each layer has query heads 0 to ")
                                 : std::string("k and v name the model's KV heads (as TransformerLens's hook_k), 0 to ")) +
                 std::to_string(heads - 1));
    for (std::size_t j = 0; j < i; j++)
      if (rq.receivers[j].layer == r.layer && rq.receivers[j].head == r.head && rq.receivers[j].input == r.input)
        return bad("receiver " + path_receiver_name(r) + " is given twice");
  }
  senders.clear();
  for (const HeadIndex& s : rq.senders) {
    const std::string name = std::to_string(s.layer) + "." + (s.head < 0 ? std::string("*") : std::to_string(s.head));
    if (Status st = model::check_layer_head(c, s.layer, s.head, /*every_head_ok=*/true); !st)
      return bad("sender " + name + ": " + st.error().message);
    if (s.head >= 0) senders.push_back(s);
    else
      for (int h = 0; h < c.n_head; h++) senders.push_back({s.layer, h});
  }
  if (senders.empty())
    for (int l = 0; l < c.n_layer; l++)
      for (int h = 0; h < c.n_head; h++) senders.push_back({l, h});
  auto before = [](const HeadIndex& a, const HeadIndex& b) { return a.layer != b.layer ? a.layer < b.layer : a.head < b.head; };
  std::sort(senders.begin(), senders.end(), before);
  senders.erase(std::unique(senders.begin(), senders.end(),
                            [](const HeadIndex& a, const HeadIndex& b) { return a.layer == b.layer && a.head == b.head; }),
                senders.end());
  return {};
}

// The first receiver's layer (n_layer for the final residual stream: every sender reaches it).
int first_receiver_layer(const ModelConfig& c, const std::vector<PathReceiver>& receivers) {
  int first = c.n_layer;
  for (const PathReceiver& r : receivers) first = std::min(first, r.layer);
  return first;
}
int last_receiver_layer(const ModelConfig& c, const std::vector<PathReceiver>& receivers) {
  int last = receivers.empty() ? c.n_layer : 0;
  for (const PathReceiver& r : receivers) last = std::max(last, r.layer);
  return last;
}

double block_multiply_adds(const ModelConfig& c) {
  const double C = c.n_embd;
  double m = C * c.qkv_width() + double(c.q_width()) * C;
  if (c.mlp) m += C * c.fc_width() + double(c.mlp_width()) * C;
  return m;
}

// One pair's orig and new runs: every layer's z (T, NH, HS) dense, orig's resid_pre (T, C) per layer.
struct PairRuns {
  std::vector<std::vector<float>> orig_z, new_z, orig_resid;  // (L) each
  double orig_metric = 0, new_metric = 0;
};

}  // namespace

std::string path_receiver_name(const PathReceiver& r) {
  return std::to_string(r.layer) + "." + std::to_string(r.head) + ":" + std::string(1, r.input);
}

Result<std::vector<PathReceiver>> parse_path_receivers(std::string_view text) {
  std::vector<PathReceiver> out;
  if (text == "final" || text == "logits" || text == "resid_post") return out;
  for (std::string_view part : split_commas(text)) {
    const std::size_t dot = part.find('.'), colon = part.find(':');
    PathReceiver r;
    if (dot == std::string_view::npos || colon == std::string_view::npos || colon < dot ||
        !whole(part.substr(0, dot), r.layer) || !whole(part.substr(dot + 1, colon - dot - 1), r.head) ||
        part.size() != colon + 2 || std::string_view("qkv").find(part[colon + 1]) == std::string_view::npos)
      return make_error(ErrorCode::invalid_argument, "receiver \"" + std::string(part) +
                 "\": give a receiver head's input as LAYER.HEAD:q, :k or :v (like 1.2:k, several separated by "
                 "commas), or final for the final residual stream (the logits)");
    r.input = part[colon + 1];
    out.push_back(r);
  }
  return out;
}

Result<std::vector<HeadIndex>> parse_path_senders(std::string_view text) {
  std::vector<HeadIndex> out;
  if (text == "all" || text == "*") return out;
  for (std::string_view part : split_commas(text)) {
    const std::size_t dot = part.find('.');
    HeadIndex h;
    bool ok = dot != std::string_view::npos && whole(part.substr(0, dot), h.layer);
    if (ok && part.substr(dot + 1) == "*") {
      out.push_back({h.layer, -1});
      continue;
    }
    if (!ok || !whole(part.substr(dot + 1), h.head))
      return make_error(ErrorCode::invalid_argument, "sender \"" + std::string(part) +
                 "\": give sender heads as LAYER.HEAD (like 0.3, several separated by commas; 1.* for every head "
                 "of layer 1), or all");
    out.push_back(h);
  }
  return out;
}

Result<PatchCost> path_patch_cost(const ModelConfig& c, std::span<const PatchPair> pairs, const PathPatchRequest& rq) {
  std::vector<HeadIndex> senders;
  int max_T = 0;
  if (Status s = check_request(c, pairs, rq, senders, max_T); !s) return tl::unexpected(s.error());
  const int L = c.n_layer, last = last_receiver_layer(c, rq.receivers), first = first_receiver_layer(c, rq.receivers);
  const bool heads = !rq.receivers.empty(), start = rq.shortcuts.start_at_layer;
  PatchCost cost;
  for (const PatchPair& pair : pairs) {
    const std::size_t T = pair.clean.size();
    cost.forwards += 2;
    cost.block_tokens += 2 * T * std::size_t(L);
    for (const HeadIndex& s : senders) {
      if (rq.shortcuts.skip_unreachable && heads && s.layer >= last) continue;
      cost.forwards += heads ? 2 : 1;
      cost.block_tokens += T * std::size_t(start ? L - s.layer : L);
      if (heads) cost.block_tokens += T * std::size_t(start ? L - first : L);
    }
  }
  cost.multiply_adds = double(cost.block_tokens) * block_multiply_adds(c);
  return cost;
}

Result<PathPatchResult> path_patch(const model::Parameters& params, std::span<const PatchPair> pairs,
                                   const PathPatchRequest& rq, model::Workspace& ws) {
  const ModelConfig& c = params.config;
  const int L = c.n_layer, NH = c.n_head, HS = c.head_size();
  std::vector<HeadIndex> senders;
  int max_T = 0;
  if (Status s = check_request(c, pairs, rq, senders, max_T); !s) return tl::unexpected(s.error());
  auto cost = path_patch_cost(c, pairs, rq);
  if (!cost) return tl::unexpected(cost.error());
  const PathShortcuts& sc = rq.shortcuts;
  const bool to_heads = !rq.receivers.empty();
  const int first = first_receiver_layer(c, rq.receivers), last = last_receiver_layer(c, rq.receivers);
  const double n_pairs = double(pairs.size());
  ForwardOutput out;

  // 1. every pair's orig and new runs, each head's z kept (orig's resid_pre too, to start from)
  std::vector<PairRuns> runs(pairs.size());
  double orig_sum = 0, new_sum = 0;
  for (std::size_t pi = 0; pi < pairs.size(); pi++) {
    const PatchPair& pair = pairs[pi];
    PairRuns& pr = runs[pi];
    for (bool orig : {true, false}) {
      std::vector<std::vector<float>>& z = orig ? pr.orig_z : pr.new_z;
      z.resize(std::size_t(L));
      if (orig) pr.orig_resid.resize(std::size_t(L));
      ForwardHooks hooks(L);
      hooks.want(HookPoint::z, HookLayer::every);
      if (orig) hooks.want(HookPoint::resid_pre, HookLayer::every);
      hooks.at = [&](HookPoint p, int layer, const HookView& v) {
        std::vector<float>& dst = p == HookPoint::z ? z[std::size_t(layer)] : pr.orig_resid[std::size_t(layer)];
        dst.resize(v.size());
        v.copy_to(dst.data());
      };
      ForwardOptions o;
      o.hooks = &hooks;
      patch_metric_options(o, pair, rq.metric, sc.metric_columns_only, rq.loss_positions);
      const std::vector<int>& ids = orig == rq.noising ? pair.clean : pair.corrupted;
      if (Status s = model::forward(params, ids, o, out, ws); !s) return tl::unexpected(s.error());
      (orig ? pr.orig_metric : pr.new_metric) =
          patch_run_metric(out, pair, rq.metric, sc.metric_columns_only, ids, rq.loss_positions);
    }
    orig_sum += pr.orig_metric / n_pairs;
    new_sum += pr.new_metric / n_pairs;
  }
  const double clean_m = rq.noising ? orig_sum : new_sum, corrupted_m = rq.noising ? new_sum : orig_sum;
  if (rq.metric == PatchMetric::normalized && !(std::fabs(clean_m - corrupted_m) > 1e-6))
    return make_error(ErrorCode::invalid_argument, "the normalized metric divides by the clean minus the corrupted logit difference, and both are " +
               std::to_string(clean_m) +
               ": the corrupted prompts do not change the answer. Use --metric logit_diff, or corrupted prompts "
               "that favour the wrong token");

  // 2. per sender, per pair: run 2 (and run 3 for receiver heads). The senders of one layer, of
  //    every pair, go as the rows of one forward_batch (run 2 starts at their layer, run 3 at the
  //    first receiver's), each row's hooks reading its own pair and sender (HookView::sequence);
  //    values[pair * senders + sender], averaged over the pairs at the end in pair order.
  const std::size_t n_senders = senders.size();
  std::vector<double> values(n_senders * pairs.size(), 0.0);
  const std::size_t total = n_senders * pairs.size();
  std::size_t done = 0, skipped = 0;
  auto count = [&] {
    ++done;
    if (rq.progress) rq.progress(done, total);
  };
  auto orig_ids = [&](const PatchPair& pair) -> const std::vector<int>& { return rq.noising ? pair.clean : pair.corrupted; };
  struct Run {
    std::size_t pair, sender;
  };
  std::vector<std::vector<std::vector<float>>> inputs;  // [row][receiver]: run 2's receiver inputs, (T, HS) each
  std::vector<ForwardOutput> outs;
  // the metric's options for a batch: every row's answer and wrong token among the columns
  auto batch_metric_options = [&](ForwardOptions& o, std::span<const Run> batch) {
    patch_metric_options(o, pairs[batch[0].pair], rq.metric, sc.metric_columns_only, rq.loss_positions);
    if (!o.logit_tokens.empty())
      for (const Run& r : batch)
        for (int token : {pairs[r.pair].answer, pairs[r.pair].wrong})
          if (std::find(o.logit_tokens.begin(), o.logit_tokens.end(), token) == o.logit_tokens.end())
            o.logit_tokens.push_back(token);
  };
  auto run_batch = [&](std::span<const Run> batch) -> Status {
    const int layer = senders[batch[0].sender].layer;
    std::vector<std::span<const int>> seqs;
    for (const Run& r : batch) seqs.push_back(orig_ids(pairs[r.pair]));
    // run 2: the sender's z from new, every other head's frozen to orig's; the receivers' inputs kept
    inputs.assign(batch.size(), std::vector<std::vector<float>>(rq.receivers.size()));
    ForwardHooks hooks(L);
    hooks.want(HookPoint::z, HookLayer::every);
    for (const PathReceiver& r : rq.receivers) hooks.want(input_point(r.input), r.layer);
    hooks.at = [&](HookPoint p, int at_layer, const HookView& v) {
      const std::size_t row = std::size_t(v.sequence);
      const PairRuns& pr = runs[batch[row].pair];
      const HeadIndex sender = senders[batch[row].sender];
      const int T = v.shape[0];
      if (p == HookPoint::z) {
        const std::vector<float>& frozen = pr.orig_z[std::size_t(at_layer)];
        const std::vector<float>& fresh = pr.new_z[std::size_t(at_layer)];
        for (int t = 0; t < T; t++)
          for (int h = 0; h < NH; h++) {
            const float* src = (at_layer == sender.layer && h == sender.head ? fresh : frozen).data() +
                               (std::size_t(t) * NH + h) * HS;
            for (int k = 0; k < HS; k++) v.at(t, h, k) = src[k];
          }
        return;
      }
      for (std::size_t ri = 0; ri < rq.receivers.size(); ri++) {
        const PathReceiver& r = rq.receivers[ri];
        if (r.layer != at_layer || input_point(r.input) != p) continue;
        std::vector<float>& in = inputs[row][ri];
        in.resize(std::size_t(T) * HS);
        for (int t = 0; t < T; t++)
          for (int k = 0; k < HS; k++) in[std::size_t(t) * HS + k] = v.at(t, r.head, k);
      }
    };
    ForwardOptions o;
    o.hooks = &hooks;
    if (to_heads) o.logits = false;
    else batch_metric_options(o, batch);
    if (sc.start_at_layer && layer > 0) {
      o.start_layer = layer;
      for (const Run& r : batch) o.start_resids.push_back(runs[r.pair].orig_resid[std::size_t(layer)].data());
    }
    if (Status s = model::forward_batch(params, seqs, o, outs, ws); !s) return s;
    std::vector<int> columns = o.logit_tokens;
    if (to_heads) {
      // run 3: orig with only the receivers' inputs from run 2
      ForwardHooks put(L);
      for (const PathReceiver& r : rq.receivers) put.want(input_point(r.input), r.layer);
      put.at = [&](HookPoint p, int at_layer, const HookView& v) {
        const std::size_t row = std::size_t(v.sequence);
        const int T = v.shape[0];
        for (std::size_t ri = 0; ri < rq.receivers.size(); ri++) {
          const PathReceiver& r = rq.receivers[ri];
          // a receiver before the sender's layer is not reached by run 2 (started there): its
          // input is orig's, as in this run
          if (r.layer != at_layer || input_point(r.input) != p || inputs[row][ri].empty()) continue;
          for (int t = 0; t < T; t++)
            for (int k = 0; k < HS; k++) v.at(t, r.head, k) = inputs[row][ri][std::size_t(t) * HS + k];
        }
      };
      ForwardOptions o3;
      o3.hooks = &put;
      batch_metric_options(o3, batch);
      if (sc.start_at_layer && first > 0) {
        o3.start_layer = first;
        for (const Run& r : batch) o3.start_resids.push_back(runs[r.pair].orig_resid[std::size_t(first)].data());
      }
      if (Status s = model::forward_batch(params, seqs, o3, outs, ws); !s) return s;
      columns = o3.logit_tokens;
    }
    for (std::size_t i = 0; i < batch.size(); i++) {
      const Run& r = batch[i];
      values[r.pair * n_senders + r.sender] =
          patch_run_metric(outs[i], pairs[r.pair], rq.metric, columns, orig_ids(pairs[r.pair]), rq.loss_positions);
      count();
    }
    return {};
  };
  for (std::size_t lo = 0; lo < n_senders;) {  // senders are sorted by layer: [lo, hi) is one layer's
    std::size_t hi = lo;
    while (hi < n_senders && senders[hi].layer == senders[lo].layer) hi++;
    ForwardOptions probe;  // what a batch's forward keeps, for its bytes
    patch_metric_options(probe, pairs[0], rq.metric, sc.metric_columns_only, rq.loss_positions);
    RunBatch<Run> batch(c, sc.batch_rows);
    for (std::size_t pi = 0; pi < pairs.size(); pi++) {
      const PairRuns& pr = runs[pi];
      const int T = static_cast<int>(orig_ids(pairs[pi]).size());
      for (std::size_t si = lo; si < hi; si++) {
        const HeadIndex sender = senders[si];
        const std::vector<float>& orig_z = pr.orig_z[std::size_t(sender.layer)];
        const std::vector<float>& new_z = pr.new_z[std::size_t(sender.layer)];
        bool run = !(to_heads && sender.layer >= last);  // no receiver after it: no path
        if (run || !sc.skip_unreachable) {
          bool same = true;  // the sender's z the same in both runs (a prompt pair equal up to the end)
          for (int t = 0; t < T && same; t++)
            for (int k = 0; k < HS; k++) {
              const std::size_t at = (std::size_t(t) * NH + sender.head) * HS + k;
              if (orig_z[at] != new_z[at]) {
                same = false;
                break;
              }
            }
          run = sc.skip_unreachable ? run && !same : true;
        }
        if (!run) {
          values[pi * n_senders + si] = pr.orig_metric;
          skipped++;
          count();
          continue;
        }
        if (rq.keep_going && !rq.keep_going()) {  // now: the runs waiting in the batch are dropped, not run
          return make_error(ErrorCode::unavailable, "path patching was stopped after " + std::to_string(done) + " of " +
                                                        std::to_string(total) + " senders");
        }
        if (Status s = batch.add({pi, si}, T, probe, run_batch); !s) return tl::unexpected(s.error());
      }
    }
    if (Status s = batch.flush(run_batch); !s) return tl::unexpected(s.error());
    lo = hi;
  }
  std::vector<double> acc(n_senders, 0.0);
  for (std::size_t pi = 0; pi < pairs.size(); pi++)
    for (std::size_t si = 0; si < n_senders; si++) acc[si] += values[pi * n_senders + si] / n_pairs;

  // 3. the (layer, head) grid over the senders' layers
  PathPatchResult r;
  r.metric = rq.metric, r.noising = rq.noising;
  r.loss_positions = rq.loss_positions;
  r.receivers = rq.receivers;
  r.senders = senders;
  r.heads = NH;
  r.cost = *cost;
  r.skipped = skipped;
  for (const HeadIndex& s : senders)
    if (r.layers.empty() || r.layers.back() != s.layer) r.layers.push_back(s.layer);
  auto final_value = [&](double v) -> float {
    if (rq.metric == PatchMetric::normalized) return float((v - corrupted_m) / (clean_m - corrupted_m));
    return float(v);
  };
  r.clean = final_value(clean_m);
  r.corrupted = final_value(corrupted_m);
  r.values.assign(r.layers.size() * std::size_t(NH), std::numeric_limits<float>::quiet_NaN());
  for (std::size_t si = 0; si < senders.size(); si++) {
    const int li = static_cast<int>(std::lower_bound(r.layers.begin(), r.layers.end(), senders[si].layer) - r.layers.begin());
    r.values[r.offset(li, senders[si].head)] = final_value(acc[si]);
  }
  return r;
}

}  // namespace headlab::research
