// research/patch_narrowing.h — the narrower sweeps that fit a work limit, for a server that
// refuses a sweep over it (413 too_long) to offer instead. Each is counted by the very function
// the limit check uses (patch_cost, attribution_patch_cost, path_patch_cost), so every offer
// costs at most the limit; each keeps the front of what it narrows as the explorer draws it:
//   activation patching: the first k pairs; the first layers; the last positions (nearest the
//     answer); the first layer with the last positions that fit beside it (when neither alone
//     does); each head over all positions instead of by position (z_by_pos -> z_all_pos)
//   attribution patching: the first k pairs (its cost is per pair, whatever it sweeps)
//   path patching: the first senders that reach a receiver
//
//   auto offers = patch_narrowings(config, pairs, rq, PatchMethod::activation, limit);
//   for (const PatchNarrowing& n : *offers) send(rq with n's fields, pairs.first(n.pairs or all));
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "model/config.h"
#include "research/attribution_patching.h"
#include "research/path_patching.h"
#include "research/patching.h"
#include "util/result.h"

namespace headlab::research {

// One narrower sweep: the fields it changes, the rest as the refused request had them.
struct PatchNarrowing {
  std::string label;               // "layers 0–2 only (3 of 12)": what the offer says to a person
  std::size_t pairs = 0;           // > 0: the first `pairs` prompt pairs only
  std::vector<int> layers;         // non-empty: these layers only
  std::vector<int> positions;      // non-empty: these positions only
  std::optional<PatchWhat> what;   // another what (the _all_pos of a _by_pos)
  std::vector<HeadIndex> senders;  // non-empty (path patching): these senders only
  double multiply_adds = 0;        // its cost, as the limit check counts it (<= the limit)
};

// The narrowings of an activation (or attribution) patching sweep whose cost is over `limit`
// (none when it is not, or when nothing fits), in the order above. Errors: patch_cost's (the
// request's own checks).
Result<std::vector<PatchNarrowing>> patch_narrowings(const model::ModelConfig& config, std::span<const PatchPair> pairs,
                                                     const PatchRequest& request, PatchMethod method, double limit);

// The first senders (in layer, head order) that reach a receiver, as many as fit `limit`; none
// when the sweep fits already, or when not one sender does. Errors: path_patch_cost's.
Result<std::optional<PatchNarrowing>> path_sender_narrowing(const model::ModelConfig& config,
                                                            std::span<const PatchPair> pairs,
                                                            const PathPatchRequest& request, double limit);

// "0–3, 5, 7–9" for sorted whole numbers (the explorer's ranges fields read it back).
std::string ranges_text(const std::vector<int>& xs);

}  // namespace headlab::research
