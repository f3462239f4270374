// research/attribution_patching.h — attribution patching (Nanda 2023, "Attribution Patching:
// Activation Patching At Industrial Scale"; Syed, Rager & Conmy 2023; Kramár et al. 2024,
// "AtP*"): activation patching's sweeps, each patched run replaced by its first-order estimate.
// For an activation a of the base run with metric m,
//   m(base with slice S := source's) ≈ m(base) + sum over S of dm/da|base · (a_source - a_base)
// so one forward and one backward of the base run (model/backward.h) and one forward of the
// source run give every index of a sweep at once.
//
//   PatchRequest rq;  rq.what = PatchWhat::z_all_pos;  rq.metric = PatchMetric::normalized;
//   Result<PatchResult> r = attribution_patch(params, pairs, rq, ws);   // same axes as patch()'s
//
// The answer has activation patching's axes and units (research/patching.h): each value is the
// estimated metric of the patched run, m(base) + the attribution, averaged over the pairs
// (normalized: then (v - corrupted) / (clean - corrupted), so the estimate of TL's normalized
// patching and the attribution itself over the clean - corrupted difference). Denoising (the
// default) takes the gradient on the corrupted run and the clean activations, as the paper;
// noising the reverse.
// Every sweep of patching.h: the residual points, each head's z, q, k, v (gradients at hook_q/k/v,
// before the rotary, k and v per KV head) and pattern (dpattern[h, t, t2] = dz[t, h] . v[t2]),
// the *_every stacked as patch() stacks them. Steering (PatchRequest::steering) is applied in
// both runs (an added constant: the gradient is that of the steered run).
#pragma once

#include <optional>
#include <span>
#include <string_view>

#include "research/patching.h"

namespace headlab::research {

enum class PatchMethod : std::uint8_t {
  activation,   // patch(): one patched forward per index, exact
  attribution,  // attribution_patch(): one backward, a linear estimate
};
std::string_view patch_method_name(PatchMethod m);  // "activation", "attribution"
std::optional<PatchMethod> parse_patch_method(std::string_view name);

// The cost: per pair two forwards and one backward (counted as two forwards' work: the block
// run again and its backward's products), whatever the number of indices.
// Errors: patch_cost's.
Result<PatchCost> attribution_patch_cost(const model::ModelConfig& config, std::span<const PatchPair> pairs,
                                         const PatchRequest& request);

// The sweep. Errors: patch()'s (the same checks, the same messages); unavailable when keep_going
// said stop (asked once per pair).
Result<PatchResult> attribution_patch(const model::Parameters& params, std::span<const PatchPair> pairs,
                                      const PatchRequest& request, model::Workspace& workspace);

}  // namespace headlab::research
