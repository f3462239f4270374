// research/patch_narrowing.cpp — the narrower sweeps that fit a work limit (see patch_narrowing.h).
// Each candidate is priced by the limit check's own cost function; a sweep's cost grows with the
// pairs, layers, positions or senders it keeps (each adds runs, none removes one), so the most
// that fit are found by bisection.
#include "research/patch_narrowing.h"

#include <algorithm>
#include <functional>
#include <string_view>
#include <utility>

namespace headlab::research {
namespace {

// The largest k in [0, n) with fits(k), for fits monotone (true up to some k, false after).
// The cheapest candidate first: a sweep far over the limit often has none that fits, and then
// one small count is all it costs.
std::size_t most_that_fit(std::size_t n, const std::function<bool(std::size_t)>& fits) {
  if (n <= 1 || !fits(1)) return 0;
  std::size_t lo = 1, hi = n;  // fits(lo) is true, fits(n) is false (the refused sweep)
  while (hi - lo > 1) {
    const std::size_t mid = lo + (hi - lo) / 2;
    if (fits(mid)) lo = mid;
    else hi = mid;
  }
  return lo;
}

std::vector<int> sorted_unique(std::vector<int> xs) {
  std::sort(xs.begin(), xs.end());
  xs.erase(std::unique(xs.begin(), xs.end()), xs.end());
  return xs;
}

// "the first 3 of the 8 pairs"
std::string first_of(std::size_t k, std::size_t n, const std::string& things) {
  return "the first " + std::to_string(k) + " of the " + std::to_string(n) + " " + things;
}

std::string head_name(const HeadIndex& h) { return std::to_string(h.layer) + "." + std::to_string(h.head); }

}  // namespace

std::string ranges_text(const std::vector<int>& xs) {
  std::string out;
  for (std::size_t i = 0; i < xs.size();) {
    std::size_t j = i;
    while (j + 1 < xs.size() && xs[j + 1] == xs[j] + 1) ++j;
    if (!out.empty()) out += ", ";
    out += std::to_string(xs[i]);
    if (j > i) out += "\u2013" + std::to_string(xs[j]);  // an en dash, as the explorer writes ranges
    i = j + 1;
  }
  return out;
}

Result<std::vector<PatchNarrowing>> patch_narrowings(const model::ModelConfig& c, std::span<const PatchPair> pairs,
                                                     const PatchRequest& rq, PatchMethod method, double limit) {
  const bool attribution = method == PatchMethod::attribution;
  auto cost_of = [&](std::span<const PatchPair> ps, const PatchRequest& r) {
    return attribution ? attribution_patch_cost(c, ps, r) : patch_cost(c, ps, r);
  };
  auto whole = cost_of(pairs, rq);
  if (!whole) return tl::unexpected(whole.error());
  std::vector<PatchNarrowing> out;
  if (!(whole->multiply_adds > limit)) return out;
  // A candidate's cost when it fits (a candidate the checks refuse does not).
  auto priced = [&](std::span<const PatchPair> ps, const PatchRequest& r) -> std::optional<double> {
    auto k = cost_of(ps, r);
    if (k && k->multiply_adds <= limit) return k->multiply_adds;
    return std::nullopt;
  };
  auto offer = [&](PatchNarrowing n, std::span<const PatchPair> ps, const PatchRequest& r) {
    n.multiply_adds = *priced(ps, r);
    out.push_back(std::move(n));
  };

  // fewer pairs: the first k
  const std::size_t n_pairs = pairs.size();
  const std::size_t kb = most_that_fit(n_pairs, [&](std::size_t k) { return priced(pairs.first(k), rq).has_value(); });
  if (kb >= 1) {
    PatchNarrowing n;
    n.label = first_of(kb, n_pairs, "pairs");
    n.pairs = kb;
    offer(std::move(n), pairs.first(kb), rq);
  }
  if (attribution) return out;  // two forwards and a backward per pair, whatever is swept

  // the layers and positions swept, as patch() reads them (empty: every one)
  std::vector<int> layers = sorted_unique(rq.layers), positions = sorted_unique(rq.positions);
  if (layers.empty())
    for (int l = 0; l < c.n_layer; l++) layers.push_back(l);
  if (positions.empty()) {
    std::size_t max_T = 0;
    for (const PatchPair& p : pairs) max_T = std::max(max_T, p.clean.size());
    for (std::size_t t = 0; t < max_T; t++) positions.push_back(static_cast<int>(t));
  }
  auto first_layers = [&](std::size_t k) { return std::vector<int>(layers.begin(), layers.begin() + std::ptrdiff_t(k)); };
  auto last_positions = [&](std::size_t k) { return std::vector<int>(positions.end() - std::ptrdiff_t(k), positions.end()); };
  auto with = [&](std::vector<int> ls, std::vector<int> ps) {
    PatchRequest r = rq;
    if (!ls.empty()) r.layers = std::move(ls);
    if (!ps.empty()) r.positions = std::move(ps);
    return r;
  };

  // fewer layers: the first ones (a run from layer l is L - l blocks: the first cost the most)
  const std::size_t kl = most_that_fit(layers.size(), [&](std::size_t k) { return priced(pairs, with(first_layers(k), {})).has_value(); });
  if (kl >= 1) {
    PatchNarrowing n;
    n.layers = first_layers(kl);
    n.label = "layers " + ranges_text(n.layers) + " only (" + std::to_string(kl) + " of " + std::to_string(layers.size()) + ")";
    offer(std::move(n), pairs, with(first_layers(kl), {}));
  }
  // fewer positions: the last ones, nearest the answer (a sweep over all positions: never cheaper)
  const std::size_t kp = most_that_fit(positions.size(), [&](std::size_t k) { return priced(pairs, with({}, last_positions(k))).has_value(); });
  if (kp >= 1) {
    PatchNarrowing n;
    n.positions = last_positions(kp);
    n.label = "positions " + ranges_text(n.positions) + " only (the last " + std::to_string(kp) + " of " +
              std::to_string(positions.size()) + ")";
    offer(std::move(n), pairs, with({}, last_positions(kp)));
  }
  // neither alone: the first layer with the last positions that fit beside it
  if (kl < 1 && kp < 1 && layers.size() > 1 && positions.size() > 1) {
    const std::size_t k2 = most_that_fit(positions.size(), [&](std::size_t k) { return priced(pairs, with(first_layers(1), last_positions(k))).has_value(); });
    if (k2 >= 1) {
      PatchNarrowing n;
      n.layers = first_layers(1);
      n.positions = last_positions(k2);
      n.label = "layers " + ranges_text(n.layers) + " and positions " + ranges_text(n.positions);
      offer(std::move(n), pairs, with(first_layers(1), last_positions(k2)));
    }
  }
  // by position costs a run per position where over all positions costs one:
  // z_by_pos -> z_all_pos, attn_head_by_pos_every -> attn_head_all_pos_every
  std::string name(patch_what_name(rq.what));
  if (const std::size_t at = name.find("_by_pos"); at != std::string::npos) {
    name.replace(at, 7, "_all_pos");
    PatchRequest r = rq;
    r.what = *parse_patch_what(name);
    if (priced(pairs, r)) {
      PatchNarrowing n;
      n.what = r.what;
      n.label = name + " instead: each head over all positions at once";
      offer(std::move(n), pairs, r);
    }
  }
  return out;
}

Result<std::optional<PatchNarrowing>> path_sender_narrowing(const model::ModelConfig& c, std::span<const PatchPair> pairs,
                                                            const PathPatchRequest& rq, double limit) {
  auto whole = path_patch_cost(c, pairs, rq);
  if (!whole) return tl::unexpected(whole.error());
  if (!(whole->multiply_adds > limit)) return std::nullopt;
  // the senders as path_patch runs them: a layer's every head for L.*, every head for none,
  // in (layer, head) order, each once
  std::vector<HeadIndex> senders;
  for (const HeadIndex& s : rq.senders)
    for (int h = s.head < 0 ? 0 : s.head; h < (s.head < 0 ? c.n_head : s.head + 1); h++) senders.push_back({s.layer, h});
  if (rq.senders.empty())
    for (int l = 0; l < c.n_layer; l++)
      for (int h = 0; h < c.n_head; h++) senders.push_back({l, h});
  auto before = [](const HeadIndex& a, const HeadIndex& b) { return std::pair(a.layer, a.head) < std::pair(b.layer, b.head); };
  auto same = [](const HeadIndex& a, const HeadIndex& b) { return a.layer == b.layer && a.head == b.head; };
  std::sort(senders.begin(), senders.end(), before);
  senders.erase(std::unique(senders.begin(), senders.end(), same), senders.end());
  // a sender at or after every receiver's layer reaches none: it runs nothing and shows nothing
  int last = rq.receivers.empty() ? c.n_layer : 0;
  for (const PathReceiver& r : rq.receivers) last = std::max(last, r.layer);
  std::vector<HeadIndex> reach;
  for (const HeadIndex& s : senders)
    if (s.layer < last || !rq.shortcuts.skip_unreachable) reach.push_back(s);
  auto first = [&](std::size_t k) {
    PathPatchRequest r = rq;
    r.senders.assign(reach.begin(), reach.begin() + std::ptrdiff_t(k));
    return r;
  };
  auto priced = [&](const PathPatchRequest& r) -> std::optional<double> {
    auto k = path_patch_cost(c, pairs, r);
    if (k && k->multiply_adds <= limit) return k->multiply_adds;
    return std::nullopt;
  };
  const std::size_t k = most_that_fit(reach.size(), [&](std::size_t n) { return priced(first(n)).has_value(); });
  if (k < 1) return std::nullopt;
  PatchNarrowing n;
  n.senders = first(k).senders;
  n.multiply_adds = *priced(first(k));
  const std::string of = reach.size() == senders.size() ? std::to_string(senders.size()) + " senders"
                                                        : std::to_string(reach.size()) + " senders that reach a receiver";
  n.label = "the first " + std::to_string(k) + " of the " + of + " (" + head_name(n.senders.front()) +
            (k > 1 ? " \u2026 " + head_name(n.senders.back()) : std::string()) + ")";
  return n;
}

}  // namespace headlab::research
