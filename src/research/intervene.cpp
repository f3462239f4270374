// research/intervene.cpp — the baseline forward, then the same ids with the interventions
// and the steering hooks (intervene.h).
#include "research/intervene.h"

namespace headlab::research {

Result<InterveneReport> intervene_run(const model::Parameters& params, const model::BpeTokenizer* tok,
                                      std::span<const int> ids, const InterveneRequest& rq, model::Workspace& ws) {
  const model::ModelConfig& c = params.config;
  if (rq.top_k < 0 || rq.top_k > 1000) return make_error(ErrorCode::invalid_argument, "top_k must be between 0 and 1000");
  for (const Steering& s : rq.steering) {
    if (auto st = steering_check(c, s); !st) return tl::unexpected(st.error());
    if (auto st = steering_reaches(s, static_cast<int>(ids.size())); !st) return tl::unexpected(st.error());
  }
  InterveneReport r;
  r.T = static_cast<int>(ids.size());
  model::ForwardOptions opt;
  model::ForwardOutput out;
  if (auto s = model::forward(params, ids, opt, out, ws); !s) return tl::unexpected(s.error());
  r.baseline = analysis::next_token_outcome(out.logits, ids, out.V, rq.top_k, tok, rq.top_next_from);
  opt.interventions = rq.interventions;
  model::ForwardHooks hooks = steering_hooks(c, rq.steering);
  if (!rq.steering.empty()) opt.hooks = &hooks;
  if (auto s = model::forward(params, ids, opt, out, ws); !s) return tl::unexpected(s.error());
  r.intervened = analysis::next_token_outcome(out.logits, ids, out.V, rq.top_k, tok, rq.top_next_from);
  return r;
}

}  // namespace headlab::research
