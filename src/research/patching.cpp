// research/patching.cpp — activation patching sweeps (see patching.h): per prompt pair, a base
// run and a source run record the patched point at every swept layer (and the base run's
// resid_pre to start from), then one run per index writes the source's slice over the base's.
#include "research/patching.h"
#include "research/run_batch.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <utility>

#include "model/head_range.h"
#include "model/hooks.h"
#include "model/next_token.h"
#include "util/check.h"

namespace headlab::research {

using model::ForwardHooks;
using model::ForwardOptions;
using model::ForwardOutput;
using model::HookPoint;
using model::HookView;
using model::ModelConfig;

namespace {

struct WhatName {
  PatchWhat what;
  std::string_view name;
};
constexpr WhatName kWhatNames[] = {
    {PatchWhat::resid_pre, "resid_pre"},
    {PatchWhat::resid_mid, "resid_mid"},
    {PatchWhat::attn_out, "attn_out"},
    {PatchWhat::mlp_out, "mlp_out"},
    {PatchWhat::z_all_pos, "z_all_pos"},
    {PatchWhat::q_all_pos, "q_all_pos"},
    {PatchWhat::k_all_pos, "k_all_pos"},
    {PatchWhat::v_all_pos, "v_all_pos"},
    {PatchWhat::pattern_all_pos, "pattern_all_pos"},
    {PatchWhat::z_by_pos, "z_by_pos"},
    {PatchWhat::q_by_pos, "q_by_pos"},
    {PatchWhat::k_by_pos, "k_by_pos"},
    {PatchWhat::v_by_pos, "v_by_pos"},
    {PatchWhat::pattern_by_pos, "pattern_by_pos"},
    {PatchWhat::block_every, "block_every"},
    {PatchWhat::attn_head_all_pos_every, "attn_head_all_pos_every"},
    {PatchWhat::attn_head_by_pos_every, "attn_head_by_pos_every"},
};

constexpr std::pair<PatchMetric, std::string_view> kMetricNames[] = {
    {PatchMetric::logit_diff, "logit_diff"},
    {PatchMetric::normalized, "normalized"},
    {PatchMetric::loss, "loss"},
    {PatchMetric::logprob, "logprob"},
};

// Which part of an activation one index replaces. The activation is dense in its hook's
// shape (a, b, c) (model/hooks.h; rank 2 has c = 1):
enum class Slice {
  row,                // (T, C):        [pos, :]
  head_all,           // (T, H, HS):    [:, head, :]
  head_pos,           // (T, H, HS):    [pos, head, :]
  pattern_head,       // (NH, T, T):    [head, :, :]
  pattern_head_dest,  // (NH, T, T):    [head, pos, :]
};

// One get_act_patch_* sweep: its hook point and slice. The *_every are several of these.
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
    default: return {w, HookPoint::count, Slice::row};  // an *_every: parts_of
  }
}

std::vector<Part> parts_of(PatchWhat w) {
  auto parts = [](std::initializer_list<PatchWhat> ws) {
    std::vector<Part> out;
    for (PatchWhat p : ws) out.push_back(part_of(p));
    return out;
  };
  switch (w) {
    case PatchWhat::block_every: return parts({PatchWhat::resid_pre, PatchWhat::attn_out, PatchWhat::mlp_out});
    case PatchWhat::attn_head_all_pos_every:
      return parts({PatchWhat::z_all_pos, PatchWhat::q_all_pos, PatchWhat::k_all_pos, PatchWhat::v_all_pos,
                    PatchWhat::pattern_all_pos});
    case PatchWhat::attn_head_by_pos_every:
      return parts({PatchWhat::z_by_pos, PatchWhat::q_by_pos, PatchWhat::k_by_pos, PatchWhat::v_by_pos,
                    PatchWhat::pattern_by_pos});
    default: return {part_of(w)};
  }
}

bool is_every(PatchWhat w) {
  return w == PatchWhat::block_every || w == PatchWhat::attn_head_all_pos_every ||
         w == PatchWhat::attn_head_by_pos_every;
}
bool has_pos(Slice s) { return s == Slice::row || s == Slice::head_pos || s == Slice::pattern_head_dest; }
// Whether a sweep's runs patched at position p may run only rows p.. (PatchShortcuts::reuse_prefix):
// a slice at one position changes no row before it, at any layer (causality); a head's slice at
// every position (z, q, k, v: not the pattern, whose hook reads every row) changes none before
// the first row where the source's differs from the base's (a prefix both prompts share).
// Steering and the loss over every position read every row. The loss over positions from..
// runs rows min(start, from).. (first_row): the rows before are neither changed nor read.
bool reuses_prefix(const PatchRequest& rq, const Part& part) {
  return rq.shortcuts.reuse_prefix && (has_pos(part.slice) || part.slice == Slice::head_all) && rq.steering.empty() &&
         (rq.metric != PatchMetric::loss || rq.loss_positions);
}
int first_row(const PatchRequest& rq, int start) {
  return rq.metric == PatchMetric::loss && rq.loss_positions ? std::min(start, rq.loss_positions->from) : start;
}
// Whether a sweep's runs patched at `layer` may run the last block past its attention on the
// last row only (PatchShortcuts::last_row_only): the metric reads the last position alone, and
// the patch comes before that point (an earlier block, or the last block's q, k, v, pattern or
// z, which every row still computes).
bool runs_last_row_only(const PatchRequest& rq, const Part& part, int layer, int L) {
  if (!rq.shortcuts.last_row_only || rq.metric == PatchMetric::loss || !rq.steering.empty()) return false;
  const HookPoint p = part.point;
  return layer < L - 1 || p == HookPoint::resid_pre || p == HookPoint::q || p == HookPoint::k || p == HookPoint::v ||
         p == HookPoint::pattern || p == HookPoint::z;
}
// k and v index the KV heads, as TL's hook_k / hook_v (n_key_value_heads of them)
int heads_of(const ModelConfig& c, HookPoint p) {
  return p == HookPoint::k || p == HookPoint::v ? c.kv_heads() : c.n_head;
}

// The name of a part along an *_every's patch_type axis: "resid_pre", "z", "pattern" …
std::string patch_type_name(const Part& part) {
  if (part.slice == Slice::row) return std::string(patch_what_name(part.what));
  return std::string(model::hook_suffix(part.point).substr(std::string_view("attn.hook_").size()));
}

// The indices of one part's sweep, in its output's row-major order (TL's axes).
struct Site {
  int layer, pos, head;  // pos / head -1 when the part has no such axis
};
std::vector<Site> sites_of(const Part& part, const ModelConfig& c, const std::vector<int>& layers,
                           const std::vector<int>& positions) {
  std::vector<Site> out;
  const int H = heads_of(c, part.point);
  for (int l : layers) {
    switch (part.slice) {
      case Slice::row:
        for (int p : positions) out.push_back({l, p, -1});
        break;
      case Slice::head_all:
      case Slice::pattern_head:
        for (int h = 0; h < H; h++) out.push_back({l, -1, h});
        break;
      case Slice::head_pos:  // (layer, pos, head)
        for (int p : positions)
          for (int h = 0; h < H; h++) out.push_back({l, p, h});
        break;
      case Slice::pattern_head_dest:  // (layer, head, dest_pos), TL's order for patterns
        for (int h = 0; h < H; h++)
          for (int p : positions) out.push_back({l, p, h});
        break;
    }
  }
  return out;
}

// Calls f(i, j, k, dense offset) for each element of the slice of an activation of dense shape (a, b, c).
template <class F>
void for_slice(std::array<int, 3> shape, Slice s, int pos, int head, F f) {
  const int a = shape[0], b = shape[1], c = shape[2];  // not a structured binding: clang 14 cannot capture one
  auto one = [&](int i, int j) {
    for (int k = 0; k < c; k++) f(i, j, k, (std::size_t(i) * b + j) * c + k);
  };
  switch (s) {
    case Slice::row:
      for (int j = 0; j < b; j++) one(pos, j);
      break;
    case Slice::head_all:
      for (int i = 0; i < a; i++) one(i, head);
      break;
    case Slice::head_pos: one(pos, head); break;
    case Slice::pattern_head:
      for (int j = 0; j < b; j++) one(head, j);
      break;
    case Slice::pattern_head_dest: one(head, pos); break;
  }
}

std::array<int, 3> dense_shape(const ModelConfig& c, HookPoint p, int T) {
  std::vector<int> s = model::hook_shape(c, p, T);
  return {s[0], s.size() > 1 ? s[1] : 1, s.size() > 2 ? s[2] : 1};
}

// The activations one pair's base and source runs record: the parts' points at the swept
// layers, twice, and the base run's resid_pre at every layer when patched runs start there.
std::size_t capture_bytes(const ModelConfig& c, const std::vector<Part>& parts, std::size_t n_layers, int T,
                          bool resid_pre, bool qkv) {
  std::size_t floats = resid_pre ? std::size_t(c.n_layer) * T * c.n_embd : 0;
  if (qkv) floats += std::size_t(c.n_layer) * T * 3 * c.q_width();  // the base run's q, k, v (start_rows)
  for (const Part& part : parts) {
    const std::array<int, 3> s = dense_shape(c, part.point, T);
    floats += 2 * n_layers * std::size_t(s[0]) * s[1] * s[2];
  }
  return floats * sizeof(float);
}

// The bounds of a sweep's memory beyond one pair's: a chunk of pairs recorded at once, and a
// batch of patched runs (its tokens, and its forward's bytes as model::forward_bytes counts
// them: the workspace's rows and the logits the metric reads). On GPT-2 small's shape 16 MB is
// about 280 tokens: as fast as 64 MB (the benchmark's resid_pre sweep, 7.6 against 8.2 s of
// CPU) for a third of the memory. A chunk of pairs is batched together, so a small chunk costs
// little: on that shape one IOI-like pair of 15 tokens records 3.3 MB (its base run's q, k, v
// and resid_pre at every layer, and the swept point twice), so 8 MB holds two pairs, whose
// by-position runs at one layer already fill most of a batch, where 256 MB held the 8 pairs of
// the benchmark at once (18 MB more at its peak).
constexpr std::size_t kCaptureBytes = std::size_t(8) << 20;
constexpr int kBatchTokens = 2048;
constexpr std::size_t kBatchBytes = std::size_t(16) << 20;

bool batch_fits(const ModelConfig& c, int tokens, const ForwardOptions& options) {
  return tokens <= kBatchTokens && model::forward_bytes(c, tokens, options) <= kBatchBytes;
}

// ---- the metric of one run -------------------------------------------------------------

bool reads_columns(PatchMetric m) { return m == PatchMetric::logit_diff || m == PatchMetric::normalized; }

// The forward's options for what the metric reads: two columns, the loss, or every logit (the
// loss over some positions reads their rows' logits).
void metric_options(ForwardOptions& o, const PatchPair& pair, PatchMetric m, const PatchShortcuts& sc,
                    const std::optional<LossPositions>& loss_positions = std::nullopt) {
  if (reads_columns(m) && sc.metric_columns_only) o.logit_tokens = {pair.answer, pair.wrong};
  if (m == PatchMetric::loss && !loss_positions) o.loss = true, o.logits = false;
}

// The metric of one pair's run, before averaging (normalized: the logit difference). `columns`:
// the vocabulary columns the forward unembedded (its logit_tokens; empty: every one). A batch
// of several pairs unembeds each pair's answer and wrong token, so a row finds its own. The
// loss over loss_positions reads the run's own `ids`.
double run_metric(const ForwardOutput& out, const PatchPair& pair, PatchMetric m, const std::vector<int>& columns,
                  std::span<const int> ids = {}, const std::optional<LossPositions>& loss_positions = std::nullopt) {
  if (m == PatchMetric::loss)
    return loss_positions ? patch_loss_over(out, ids, loss_positions_for(*loss_positions, static_cast<int>(ids.size())))
                          : out.loss;
  const int T = out.T;
  if (reads_columns(m)) {
    if (!columns.empty()) {
      const std::size_t n = columns.size(), last = std::size_t(T - 1) * n;
      auto column = [&](int token) { return std::size_t(std::find(columns.begin(), columns.end(), token) - columns.begin()); };
      return double(out.logits[last + column(pair.answer)]) - out.logits[last + column(pair.wrong)];
    }
    const float* row = out.logits.data() + std::size_t(T - 1) * out.V;
    return double(row[pair.answer]) - row[pair.wrong];
  }
  const float* row = out.logits.data() + std::size_t(T - 1) * out.V;  // logprob
  return double(row[pair.answer]) - model::row_log_sum_exp(row, out.V);
}

Status bad(std::string message) { return make_error(ErrorCode::invalid_argument, std::move(message)); }

// `hooks` with the request's steerings applied first at their layers' resid_pre, so what a run
// records or patches there is the steered stream. A run started at block s (start_layer) has
// the steerings at layers <= s in its start_resid already: those are left out.
ForwardHooks steered(ForwardHooks hooks, std::span<const Steering> steering, int start_layer) {
  if (steering.empty()) return hooks;
  auto applies = [start_layer](const Steering& s) { return start_layer == 0 || s.layer > start_layer; };
  ForwardHooks inner = hooks;
  for (const Steering& s : steering)
    if (applies(s)) hooks.want(HookPoint::resid_pre, s.layer);
  hooks.at = [inner = std::move(inner), steering, applies](HookPoint p, int layer, const HookView& v) {
    if (p == HookPoint::resid_pre)
      for (const Steering& s : steering)
        if (s.layer == layer && applies(s)) steering_add(s, v);
    if (inner.at && inner.wants(p, layer)) inner.at(p, layer, v);
  };
  return hooks;
}

// The checks patch_cost and patch share; fills the swept layers and positions.
Status check_request(const ModelConfig& c, std::span<const PatchPair> pairs, const PatchRequest& rq,
                     std::vector<int>& layers, std::vector<int>& positions, int& max_T) {
  if (Status s = patch_check_pairs(c, pairs, rq.metric, max_T); !s) return s;
  if (Status s = patch_check_loss_positions(pairs, rq.metric, rq.loss_positions); !s) return s;
  for (std::size_t i = 0; i < rq.steering.size(); i++) {
    Status s = steering_check(c, rq.steering[i]);
    if (s) s = steering_reaches(rq.steering[i], max_T);
    if (!s) return bad("steering " + std::to_string(i + 1) + ": " + s.error().message);
  }
  for (const Part& part : parts_of(rq.what)) {
    if (model::hook_exists(c, part.point)) continue;
    std::string why = part.point == HookPoint::resid_mid
                          ? (c.mlp ? "its blocks are parallel (attention and MLP both read resid_pre, as GPT-NeoX's), "
                                     "so there is no resid_mid (TransformerLens has no hook_resid_mid there either); "
                                     "patch resid_pre, attn_out or mlp_out"
                                   : "its blocks are attention-only, so there is no resid_mid (resid_pre + attn_out "
                                     "is the next layer's resid_pre); patch resid_pre or attn_out")
                          : "its blocks are attention-only, so there is no mlp_out; patch resid_pre or attn_out "
                            "(or each head: z_all_pos)";
    return bad("cannot patch " + std::string(patch_what_name(rq.what)) + " in this model: " + why);
  }
  layers = rq.layers;
  std::sort(layers.begin(), layers.end());
  layers.erase(std::unique(layers.begin(), layers.end()), layers.end());
  for (int l : layers)
    if (Status s = model::check_layer(c, l); !s) return s;
  if (layers.empty())
    for (int l = 0; l < c.n_layer; l++) layers.push_back(l);
  positions = rq.positions;
  std::sort(positions.begin(), positions.end());
  positions.erase(std::unique(positions.begin(), positions.end()), positions.end());
  for (int p : positions)
    if (p < 0 || p >= max_T)
      return bad("position " + std::to_string(p) + " is outside the prompts: they have positions 0 to " +
                 std::to_string(max_T - 1) + " (BOS, when put first, is position 0)");
  if (positions.empty())
    for (int p = 0; p < max_T; p++) positions.push_back(p);
  return {};
}

// The parts' sites, pair by pair: how many patched runs a pair has.
std::size_t runs_of(const ModelConfig& c, const std::vector<Part>& parts, const std::vector<int>& layers,
                    const std::vector<int>& positions) {
  std::size_t n = 0;
  for (const Part& part : parts) n += sites_of(part, c, layers, positions).size();
  return n;
}

// One block's multiply-adds per token, by its weights.
double block_multiply_adds(const ModelConfig& c) {
  const double C = c.n_embd;
  double m = C * c.qkv_width() + double(c.q_width()) * C;
  if (c.mlp) m += C * c.fc_width() + double(c.mlp_width()) * C;
  return m;
}

// The activations of one run, each dense in its hook's shape, by (point, layer).
using Captures = std::map<std::pair<HookPoint, int>, std::vector<float>>;

}  // namespace

Status patch_check_pairs(const ModelConfig& c, std::span<const PatchPair> pairs, PatchMetric metric, int& max_T) {
  if (pairs.empty()) return bad("activation patching needs at least one prompt pair (clean and corrupted)");
  max_T = 0;
  for (std::size_t i = 0; i < pairs.size(); i++) {
    const PatchPair& p = pairs[i];
    const std::string which = pairs.size() == 1 ? std::string("the prompt pair") : "pair " + std::to_string(i + 1);
    if (p.clean.empty() || p.corrupted.empty()) return bad(which + " has an empty prompt");
    if (p.clean.size() != p.corrupted.size())
      return bad(which + ": the clean prompt is " + std::to_string(p.clean.size()) + " tokens and the corrupted one " +
                 std::to_string(p.corrupted.size()) +
                 "; activation patching puts each position of one run into the same position of the other, so "
                 "both must have the same number of tokens (change a word for one of the same token count)");
    auto token_ok = [&](int id) { return id >= 0 && id < c.vocab_size; };
    const bool needs_answer = metric != PatchMetric::loss, needs_wrong = reads_columns(metric);
    if (needs_answer && !token_ok(p.answer))
      return bad(which + ": the " + std::string(patch_metric_name(metric)) + " metric needs an answer token" +
                 (p.answer < 0 ? std::string() : " inside the vocabulary [0, " + std::to_string(c.vocab_size) + ")"));
    if (needs_wrong && !token_ok(p.wrong))
      return bad(which + ": the " + std::string(patch_metric_name(metric)) + " metric needs a wrong token" +
                 (p.wrong < 0 ? std::string() : " inside the vocabulary [0, " + std::to_string(c.vocab_size) + ")"));
    if (metric == PatchMetric::loss && p.clean.size() < 2)
      return bad(which + " has one token: the loss is over next tokens, so it needs at least two");
    max_T = std::max(max_T, static_cast<int>(p.clean.size()));
  }
  return {};
}

Status patch_check_loss_positions(std::span<const PatchPair> pairs, PatchMetric metric,
                                  const std::optional<LossPositions>& lp) {
  if (!lp) return {};
  const std::string given = "loss positions " + loss_positions_text(*lp);
  if (metric != PatchMetric::loss)
    return bad(given + ": they say which positions' next-token losses the loss metric averages, and the metric is " +
               std::string(patch_metric_name(metric)) + "; add --metric loss (\"metric\": \"loss\"), or leave them out");
  if (lp->from < 0 || lp->to < -1 || (lp->to >= 0 && lp->to <= lp->from))
    return bad(given + " are empty: they are [from, to), from included, to not, like 9:16 (positions 9 to 15, "
                       "the losses of tokens 10 to 16)");
  for (std::size_t i = 0; i < pairs.size(); i++) {
    const int T = static_cast<int>(pairs[i].clean.size());
    const LossPositions r = loss_positions_for(*lp, T);
    if (r.to <= T - 1 && r.from < r.to) continue;
    const std::string which = pairs.size() == 1 ? std::string("the prompt pair") : "pair " + std::to_string(i + 1);
    return bad(given + " are past the end of " + which + ": it has " + std::to_string(T) +
               " tokens, so its next-token losses are read at positions 0 to " + std::to_string(T - 2) +
               " (position t's is token t+1's): from at most " + std::to_string(T - 2) + ", to at most " +
               std::to_string(T - 1) + ", or no to ('" + std::to_string(std::max(0, std::min(lp->from, T - 2))) +
               ":' runs to the end)");
  }
  return {};
}

LossPositions loss_positions_for(const LossPositions& lp, int T) { return {lp.from, lp.to < 0 ? T - 1 : lp.to}; }

double patch_loss_over(const ForwardOutput& out, std::span<const int> ids, const LossPositions& lp) {
  const int first = static_cast<int>(ids.size()) - out.T;  // the rows a start_rows run left out
  HEADLAB_CHECK(first <= lp.from && lp.from < lp.to && lp.to < static_cast<int>(ids.size()));
  HEADLAB_CHECK(out.logits.size() >= std::size_t(out.T) * out.V);
  double total = 0.0;
  for (int t = lp.from; t < lp.to; t++)
    total += model::token_loss(out.logits.data() + std::size_t(t - first) * out.V, out.V, ids[std::size_t(t) + 1]);
  return total / (lp.to - lp.from);
}

std::optional<LossPositions> parse_loss_positions(std::string_view text) {
  const std::size_t colon = text.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  auto number = [](std::string_view s, int& v) {
    if (s.empty() || s.size() > 7 || s.find_first_not_of("0123456789") != std::string_view::npos) return false;
    v = std::stoi(std::string(s));
    return true;
  };
  LossPositions lp;
  const std::string_view a = text.substr(0, colon), b = text.substr(colon + 1);
  if (!a.empty() && !number(a, lp.from)) return std::nullopt;
  if (!b.empty() && !number(b, lp.to)) return std::nullopt;
  return lp;
}

std::string loss_positions_text(const LossPositions& lp) {
  return std::to_string(lp.from) + ":" + (lp.to < 0 ? std::string() : std::to_string(lp.to));
}

void patch_metric_options(ForwardOptions& o, const PatchPair& pair, PatchMetric m, bool columns_only,
                          const std::optional<LossPositions>& loss_positions) {
  PatchShortcuts sc;
  sc.metric_columns_only = columns_only;
  metric_options(o, pair, m, sc, loss_positions);
}

double patch_run_metric(const ForwardOutput& out, const PatchPair& pair, PatchMetric m, const std::vector<int>& columns,
                        std::span<const int> ids, const std::optional<LossPositions>& loss_positions) {
  return run_metric(out, pair, m, columns, ids, loss_positions);
}

bool patch_batch_fits(const ModelConfig& c, int tokens, const ForwardOptions& options) {
  return batch_fits(c, tokens, options);
}

double patch_run_metric(const ForwardOutput& out, const PatchPair& pair, PatchMetric m, bool columns_only,
                        std::span<const int> ids, const std::optional<LossPositions>& loss_positions) {
  ForwardOptions o;
  patch_metric_options(o, pair, m, columns_only, loss_positions);
  return run_metric(out, pair, m, o.logit_tokens, ids, loss_positions);
}

std::string_view patch_what_name(PatchWhat w) {
  for (const WhatName& n : kWhatNames)
    if (n.what == w) return n.name;
  return "?";
}

std::optional<PatchWhat> parse_patch_what(std::string_view name) {
  for (const WhatName& n : kWhatNames)
    if (n.name == name) return n.what;
  return std::nullopt;
}

std::string patch_what_list() {
  std::string s;
  for (const WhatName& n : kWhatNames) s += (s.empty() ? "" : ", ") + std::string(n.name);
  return s;
}

std::string_view patch_metric_name(PatchMetric m) {
  for (const auto& [metric, name] : kMetricNames)
    if (metric == m) return name;
  return "?";
}

std::optional<PatchMetric> parse_patch_metric(std::string_view name) {
  for (const auto& [metric, n] : kMetricNames)
    if (n == name) return metric;
  return std::nullopt;
}

std::size_t PatchResult::offset(std::initializer_list<int> index) const {
  std::size_t at = 0, d = 0;
  for (int i : index) at = at * std::size_t(shape[d++]) + std::size_t(i);
  return at;
}

Result<PatchCost> patch_cost(const ModelConfig& c, std::span<const PatchPair> pairs, const PatchRequest& rq) {
  std::vector<int> layers, positions;
  int max_T = 0;
  if (Status s = check_request(c, pairs, rq, layers, positions, max_T); !s) return tl::unexpected(s.error());
  PatchCost cost;
  const std::vector<Part> parts = parts_of(rq.what);
  for (const PatchPair& pair : pairs) {
    const std::size_t T = pair.clean.size();
    cost.forwards += rq.metric == PatchMetric::normalized ? 4 : 2;
    cost.block_tokens += (rq.metric == PatchMetric::normalized ? 4 : 2) * T * std::size_t(c.n_layer);
    for (const Part& part : parts)
      for (const Site& s : sites_of(part, c, layers, positions)) {
        if (s.pos >= static_cast<int>(T)) continue;  // past this pair's end: no run
        cost.forwards++;
        cost.block_tokens += T * std::size_t(rq.shortcuts.start_at_layer ? c.n_layer - s.layer : c.n_layer);
      }
  }
  cost.multiply_adds = double(cost.block_tokens) * block_multiply_adds(c);
  return cost;
}

Result<PatchResult> patch(const model::Parameters& params, std::span<const PatchPair> pairs, const PatchRequest& rq,
                          model::Workspace& ws) {
  const ModelConfig& c = params.config;
  const int L = c.n_layer, NH = c.n_head;
  std::vector<int> layers, positions;
  int max_T = 0;
  if (Status s = check_request(c, pairs, rq, layers, positions, max_T); !s) return tl::unexpected(s.error());
  auto cost = patch_cost(c, pairs, rq);
  if (!cost) return tl::unexpected(cost.error());
  const PatchShortcuts& sc = rq.shortcuts;
  const std::vector<Part> parts = parts_of(rq.what);
  const double n_pairs = double(pairs.size());

  // normalized divides by clean - corrupted: known before the sweep, or it would be wasted
  double clean_sum = 0, corrupted_sum = 0;
  ForwardOutput out;
  if (rq.metric == PatchMetric::normalized) {
    for (const PatchPair& pair : pairs)
      for (bool clean : {true, false}) {
        ForwardOptions o;
        metric_options(o, pair, rq.metric, sc);
        const ForwardHooks hooks = steered(ForwardHooks(L), rq.steering, 0);
        if (!rq.steering.empty()) o.hooks = &hooks;
        const std::vector<int>& ids = clean ? pair.clean : pair.corrupted;
        if (Status s = model::forward(params, ids, o, out, ws); !s) return tl::unexpected(s.error());
        (clean ? clean_sum : corrupted_sum) += run_metric(out, pair, rq.metric, o.logit_tokens) / n_pairs;
      }
    if (!(std::fabs(clean_sum - corrupted_sum) > 1e-6))
      return make_error(ErrorCode::invalid_argument, "the normalized metric divides by the clean minus the corrupted logit difference, and both are " +
                 std::to_string(clean_sum) +
                 ": the corrupted prompts do not change the answer. Use --metric logit_diff, or corrupted prompts "
                 "that favour the wrong token");
    clean_sum = corrupted_sum = 0;
  }

  // values[part][pair * sites + site]: each run's metric, averaged over the pairs at the end in
  // pair order (the sums one pair after another would make)
  std::vector<std::vector<Site>> sites(parts.size());
  std::vector<std::vector<double>> values(parts.size());
  for (std::size_t i = 0; i < parts.size(); i++) {
    sites[i] = sites_of(parts[i], c, layers, positions);
    values[i].assign(sites[i].size() * pairs.size(), 0.0);
  }
  const std::size_t total = runs_of(c, parts, layers, positions) * pairs.size();
  std::size_t done = 0, skipped = 0;
  auto count = [&] {
    ++done;
    if (rq.progress) rq.progress(done, total);
  };
  auto base_ids = [&](const PatchPair& pair) -> const std::vector<int>& { return rq.noising ? pair.clean : pair.corrupted; };

  // The pairs go in chunks whose recorded activations fit kCaptureBytes (a pair at least):
  // each chunk's base and source runs, then its patched runs, batched across its pairs.
  const std::size_t n = pairs.size();
  std::vector<Captures> base(n), source(n);
  std::vector<std::vector<float>> base_qkv(n);  // the base run's record.qkv (L, T, 3D), when a part reuses its rows
  const bool any_prefix = std::any_of(parts.begin(), parts.end(), [&](const Part& p) { return reuses_prefix(rq, p); });
  std::vector<double> base_metric(n, 0.0);
  std::vector<ForwardOutput> outs;
  auto capture = [&](const PatchPair& pair) {
    return capture_bytes(c, parts, layers.size(), static_cast<int>(pair.clean.size()), sc.start_at_layer, any_prefix);
  };
  for (std::size_t first = 0; first < n;) {
    std::size_t end = first, bytes = 0;
    do bytes += capture(pairs[end++]);
    while (end < n && bytes + capture(pairs[end]) <= kCaptureBytes);

    // 1. the base and source runs of each pair, each recording the patched points at the swept
    //    layers; the base run also its resid_pre at each layer (a patched run starts there)
    for (std::size_t k = first; k < end; k++) {
      const PatchPair& pair = pairs[k];
      auto record = [&](const std::vector<int>& ids, bool is_base, Captures& caps, double& metric) -> Status {
        ForwardHooks hooks(L);
        for (const Part& part : parts)
          for (int l : layers) hooks.want(part.point, l);
        if (is_base && sc.start_at_layer) hooks.want(HookPoint::resid_pre, model::HookLayer::every);
        hooks.at = [&](HookPoint p, int layer, const HookView& v) {
          std::vector<float>& dst = caps[{p, layer}];
          dst.resize(v.size());
          v.copy_to(dst.data());
        };
        const ForwardHooks all = steered(std::move(hooks), rq.steering, 0);
        ForwardOptions o;
        o.hooks = &all;
        metric_options(o, pair, rq.metric, sc, rq.loss_positions);
        o.record.qkv = is_base && any_prefix;
        if (Status s = model::forward(params, ids, o, out, ws); !s) return s;
        metric = run_metric(out, pair, rq.metric, o.logit_tokens, ids, rq.loss_positions);
        return {};
      };
      double source_metric = 0;
      if (Status s = record(base_ids(pair), true, base[k], base_metric[k]); !s) return tl::unexpected(s.error());
      if (any_prefix) base_qkv[k] = std::move(out.record.qkv);
      if (Status s = record(rq.noising ? pair.corrupted : pair.clean, false, source[k], source_metric); !s)
        return tl::unexpected(s.error());
      (rq.noising ? clean_sum : corrupted_sum) += base_metric[k] / n_pairs;
      (rq.noising ? corrupted_sum : clean_sum) += source_metric / n_pairs;
    }

    // 2. the patched runs, the source's slice written over the base run's: those that start at
    //    one layer go as the rows of one forward_batch (at most kBatchTokens tokens and
    //    kBatchBytes), each row's hook writing its own slice and its metric read from its own output
    for (std::size_t pi = 0; pi < parts.size(); pi++) {
      const Part& part = parts[pi];
      const bool prefix = reuses_prefix(rq, part);
      const std::size_t n_sites = sites[pi].size();
      for (std::size_t lo = 0; lo < n_sites;) {  // sites_of goes layer by layer: [lo, hi) is one layer's
        const int layer = sites[pi][lo].layer;
        std::size_t hi = lo;
        while (hi < n_sites && sites[pi][hi].layer == layer) hi++;
        struct Run {
          std::size_t pair, site;
          int start;  // the first row it runs (reuse_prefix), else 0
        };
        auto run_batch = [&](std::span<const Run> batch) -> Status {
          ForwardOptions o;
          metric_options(o, pairs[batch[0].pair], rq.metric, sc, rq.loss_positions);
          std::vector<std::span<const int>> seqs;
          for (const Run& r : batch) {
            const PatchPair& pair = pairs[r.pair];
            seqs.push_back(base_ids(pair));
            if (!o.logit_tokens.empty())  // every row's answer and wrong token
              for (int token : {pair.answer, pair.wrong})
                if (std::find(o.logit_tokens.begin(), o.logit_tokens.end(), token) == o.logit_tokens.end())
                  o.logit_tokens.push_back(token);
            if (sc.start_at_layer && layer > 0) o.start_resids.push_back(base[r.pair].at({HookPoint::resid_pre, layer}).data());
            if (prefix) {  // rows site.pos.. run; the rows before are the base run's
              o.start_rows.push_back(r.start);
              o.prefix_qkv.push_back(base_qkv[r.pair].data());
            }
          }
          if (sc.start_at_layer && layer > 0) o.start_layer = layer;
          o.last_row_only = runs_last_row_only(rq, part, layer, L);
          ForwardHooks hooks(L);
          hooks.want(part.point, layer);
          hooks.at = [&](HookPoint, int, const HookView& v) {  // once per row: v.sequence is the run
            const Run& r = batch[std::size_t(v.sequence)];
            const Site& site = sites[pi][r.site];
            const std::vector<float>& src = source[r.pair].at({part.point, layer});
            const std::array<int, 3> shape = dense_shape(c, part.point, static_cast<int>(base_ids(pairs[r.pair]).size()));
            for_slice(shape, part.slice, site.pos, site.head,
                      [&](int i, int j, int k, std::size_t at) {
                        if (i >= v.first_row) v.at(i - v.first_row, j, k) = src[at];  // rows before: the same in both runs
                      });
          };
          const ForwardHooks all = steered(std::move(hooks), rq.steering, o.start_layer);
          o.hooks = &all;
          if (Status s = model::forward_batch(params, seqs, o, outs, ws); !s) return s;
          for (std::size_t i = 0; i < batch.size(); i++) {
            const Run& r = batch[i];
            values[pi][r.pair * n_sites + r.site] =
                run_metric(outs[i], pairs[r.pair], rq.metric, o.logit_tokens, base_ids(pairs[r.pair]), rq.loss_positions);
            count();
          }
          return {};
        };
        ForwardOptions probe;  // what a batch's forward keeps, for its bytes
        metric_options(probe, pairs[first], rq.metric, sc, rq.loss_positions);
        RunBatch<Run> batch(c, sc.batch_rows);
        for (std::size_t k = first; k < end; k++) {
          const PatchPair& pair = pairs[k];
          const int T = static_cast<int>(pair.clean.size());
          const std::array<int, 3> shape = dense_shape(c, part.point, T);
          const std::vector<float>& src = source[k].at({part.point, layer});
          const std::vector<float>& mine = base[k].at({part.point, layer});
          for (std::size_t si = lo; si < hi; si++) {
            const Site& site = sites[pi][si];
            bool run = site.pos < T;  // a position past this pair's end patches nothing
            if (run && sc.skip_unchanged) {
              bool same = true;
              for_slice(shape, part.slice, site.pos, site.head,
                        [&](int, int, int, std::size_t at) { same = same && src[at] == mine[at]; });
              run = !same;
            }
            if (!run) {
              values[pi][k * n_sites + si] = base_metric[k];
              skipped++;
              count();
              continue;
            }
            if (rq.keep_going && !rq.keep_going()) {  // now: the runs waiting in the batch are dropped, not run
              return make_error(ErrorCode::unavailable, "the patching sweep was stopped after " + std::to_string(done) +
                                                            " of " + std::to_string(total) + " runs");
            }
            int start = 0;  // reuse_prefix: the patched position, or a head's first row that differs
            if (prefix && has_pos(part.slice)) {
              start = site.pos;
            } else if (prefix) {
              start = T;
              for_slice(shape, part.slice, site.pos, site.head,
                        [&](int i, int, int, std::size_t at) { if (src[at] != mine[at]) start = std::min(start, i); });
              if (start == T) start = 0;  // nothing differs (skip_unchanged off): the whole run
            }
            if (prefix) start = first_row(rq, start);  // the loss over positions from.. reads rows from..
            if (Status s = batch.add({k, si, start}, T - start, probe, run_batch); !s) return tl::unexpected(s.error());
          }
        }
        if (Status s = batch.flush(run_batch); !s) return tl::unexpected(s.error());
        lo = hi;
      }
    }
    for (std::size_t k = first; k < end; k++) base[k].clear(), source[k].clear(), base_qkv[k] = {};
    first = end;
  }
  std::vector<std::vector<double>> acc(parts.size());  // each part's values (its own TL shape, flattened)
  for (std::size_t pi = 0; pi < parts.size(); pi++) {
    const std::size_t n_sites = sites[pi].size();
    acc[pi].assign(n_sites, 0.0);
    for (std::size_t k = 0; k < n; k++)
      for (std::size_t si = 0; si < n_sites; si++) acc[pi][si] += values[pi][k * n_sites + si] / n_pairs;
  }

  // 3. the answer in TL's axes; the *_every stacked (k, v padded with 0 to NH; the pattern's
  //    (head, pos) transposed to (pos, head), as TL's get_act_patch_attn_head_by_pos_every)
  PatchResult r;
  r.what = rq.what, r.metric = rq.metric, r.noising = rq.noising;
  r.loss_positions = rq.loss_positions;
  r.layers = layers;
  for (const Steering& st : rq.steering) r.steering.push_back({st.layer, st.from, st.rows, st.coef});
  r.cost = *cost;
  r.skipped = skipped;
  const double clean_m = clean_sum, corrupted_m = corrupted_sum;
  auto final_value = [&](double v) -> float {
    if (rq.metric == PatchMetric::normalized) return float((v - corrupted_m) / (clean_m - corrupted_m));
    return float(v);
  };
  r.clean = final_value(clean_m);
  r.corrupted = final_value(corrupted_m);
  const int nL = static_cast<int>(layers.size()), nP = static_cast<int>(positions.size());
  if (!is_every(rq.what)) {
    const Part& part = parts[0];
    r.heads = heads_of(c, part.point);
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
      for (std::size_t pi = 0; pi < parts.size(); pi++)
        for (double v : acc[pi]) r.values.push_back(final_value(v));
    } else {
      const bool by_pos = rq.what == PatchWhat::attn_head_by_pos_every;
      if (by_pos) r.axes = {"patch_type", "layer", "pos", "head"}, r.shape = {n_types, nL, nP, NH};
      else r.axes = {"patch_type", "layer", "head"}, r.shape = {n_types, nL, NH};
      const int cells = by_pos ? nL * nP * NH : nL * NH;
      r.values.assign(std::size_t(n_types) * cells, 0.0f);
      for (std::size_t pi = 0; pi < parts.size(); pi++) {
        float* dst = r.values.data() + pi * std::size_t(cells);
        for (std::size_t si = 0; si < sites[pi].size(); si++) {
          const Site& s = sites[pi][si];
          const int li = static_cast<int>(std::lower_bound(layers.begin(), layers.end(), s.layer) - layers.begin());
          const int pos_i =
              by_pos ? static_cast<int>(std::lower_bound(positions.begin(), positions.end(), s.pos) - positions.begin()) : 0;
          const std::size_t at = by_pos ? (std::size_t(li) * nP + pos_i) * NH + s.head : std::size_t(li) * NH + s.head;
          dst[at] = final_value(acc[pi][si]);
        }
      }
    }
  }
  const bool any_pos = std::any_of(parts.begin(), parts.end(), [](const Part& p) { return has_pos(p.slice); });
  if (any_pos) r.positions = positions;
  return r;
}

}  // namespace headlab::research
