// research/intervene.h — "what changes when I change the model": one run as it is and one
// with head interventions (ablate / replace / block, model/forward.h) and steering
// (steering.h), compared by their next-token predictions and losses. `headlab intervene` and
// POST /api/model/intervene are adapters over this one pipeline.
//
//   InterveneRequest rq;
//   rq.interventions.ablate.push_back({1, 4, model::Ablation::zero});
//   rq.steering.push_back(*steering_from_prompts(params, love, hate, 6, 5.0f, ws));
//   auto r = intervene_run(params, &tok, ids, rq, ws);
//   r->intervened.loss - r->baseline.loss;     // the loss change
//   r->intervened.top_next.back();            // what now comes after the last token
#pragma once

#include <span>
#include <vector>

#include "analysis/run_text.h"
#include "model/forward.h"
#include "research/steering.h"

namespace headlab::research {

struct InterveneRequest {
  model::Interventions interventions;
  std::vector<Steering> steering;
  int top_k = 5;          // 0..1000
  int top_next_from = 0;  // positions before it get no predictions (analysis::next_token_outcome)
};

struct InterveneReport {
  int T = 0;
  analysis::NextTokenOutcome baseline, intervened;
};

// Two forwards of `ids` (nothing to change: both the same). Errors: invalid_argument (a steering steering_check
// refuses, top_k outside 0..1000), the forward's (an intervention naming a layer, head or key
// that does not exist).
Result<InterveneReport> intervene_run(const model::Parameters& params, const model::BpeTokenizer* tokenizer,
                                      std::span<const int> ids, const InterveneRequest& request,
                                      model::Workspace& workspace);

}  // namespace headlab::research
