// server/api/handlers/lens_handlers.cpp — the lens, attribution and composition routes (see
// lens_handlers.h): research/ in the pool's turns, with the server's token limit.
#include "server/api/handlers/lens_handlers.h"

#include <cstdio>

namespace headlab::server {

namespace {

void server_limits(const ModelService& m, research::TextPrompt& p) {
  p.input.max_tokens = m.info().max_tokens;
  p.input.limit_name = "this server's limit";
  p.input.truncate_hint = "send \"truncate\": true";
}

}  // namespace

Result<research::LensTextAnswer> handle_model_lens(ModelService& m, research::LensTextRequest rq) {
  server_limits(m, rq.prompt);
  rq.max_work = kMaxMeasureWork;
  const ModelService* svc = &m;
  return m.in_turn<research::LensTextAnswer>([svc, rq] {
    model::Workspace ws;
    return research::logit_lens_text(svc->parameters(), &svc->tokenizer(), rq, ws);
  });
}

Result<AttributeAnswer> handle_model_attribute(ModelService& m, AttributeRequest rq) {
  server_limits(m, rq.one.prompt);
  if (rq.batch) rq.batch->input = rq.one.prompt.input;  // the limits, and "truncate"
  const ModelService* svc = &m;
  return m.in_turn<AttributeAnswer>([svc, rq]() -> Result<AttributeAnswer> {
    model::Workspace ws;
    AttributeAnswer a;
    if (rq.batch) {
      auto b = research::direct_logit_attribution_batch(svc->parameters(), &svc->tokenizer(), *rq.batch, ws);
      if (!b) return tl::unexpected(b.error());
      a.batch = std::move(*b);
    } else {
      auto one = research::direct_logit_attribution_text(svc->parameters(), &svc->tokenizer(), rq.one, ws);
      if (!one) return tl::unexpected(one.error());
      a.one = std::move(*one);
    }
    return a;
  });
}

Status compose_copying(const model::Parameters& params, ComposeAnswer& a) {
  const model::ModelConfig& c = params.config;
  a.copying.clear();
  for (int l = 0; l < c.n_layer; l++)
    for (int h = 0; h < c.n_head; h++) {
      auto s = research::copying_score(params, l, h, a.request.fold_ln);
      if (!s) return tl::unexpected(s.error());
      a.copying.push_back(*s);
    }
  return {};
}

Result<ComposeAnswer> handle_model_compose(ModelService& m, const ComposeRequest& rq) {
  const model::ModelConfig& c = m.parameters().config;
  if (rq.circuit) {
    const double cost = research::head_circuits_cost(c);
    if (cost > kMaxCircuitWork) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.2g", cost);
      return make_error(ErrorCode::too_long,
                        "a head's circuits over this model's vocabulary (" + std::to_string(c.vocab_size) +
                            " tokens) cost " + buf + " multiply-adds, over this server's limit of 2e10; ask without "
                            "'circuit' for the composition scores, or run `headlab compose --model M --ov-circuit L.H` "
                            "on your own machine");
    }
  }
  const research::CompositionCost cost =
      research::composition_cost(c, {.fold_ln = rq.fold_ln, .baseline_samples = rq.baseline_samples});
  if (cost.total() > kMaxMeasureWork) {
    char buf[224];
    std::snprintf(buf, sizeof buf,
                  "%.2g multiply-adds (the random baseline's %d samples %.2g of them), over this server's limit of %.2g",
                  cost.total(), rq.baseline_samples, cost.baseline, kMaxMeasureWork);
    std::string narrow = cost.total() - cost.baseline < kMaxMeasureWork
                             ? "ask for fewer 'baseline_samples', or run"
                             : "run";
    return make_error(ErrorCode::too_long, std::string("this model's composition scores cost ") + buf + "; " + narrow +
                                               " `headlab compose --model M` on your own machine");
  }
  if (rq.copying) {
    const double copying = research::copying_score_cost(c) * c.n_layer * c.n_head;
    if (copying > kMaxCircuitWork) {
      char buf[96];
      std::snprintf(buf, sizeof buf, "%.2g multiply-adds, over this server's limit of %.2g", copying, kMaxCircuitWork);
      return make_error(ErrorCode::too_long, std::string("every head's copying score costs ") + buf +
                                                 "; ask for one head's with 'circuit', or run `headlab compose --model M "
                                                 "--copying` on your own machine");
    }
  }
  const ModelService* svc = &m;
  return m.in_turn<ComposeAnswer>([svc, rq]() -> Result<ComposeAnswer> {
    ComposeAnswer a;
    a.request = rq;
    auto s = research::composition_scores(svc->parameters(), {.fold_ln = rq.fold_ln, .baseline_samples = rq.baseline_samples});
    if (!s) return tl::unexpected(s.error());
    a.scores = std::move(*s);
    if (rq.circuit) {
      auto cc = research::head_circuits(svc->parameters(), rq.circuit->first, rq.circuit->second,
                                        {.top = rq.top, .fold_ln = rq.fold_ln});
      if (!cc) return tl::unexpected(cc.error());
      a.circuits = std::move(*cc);
    }
    if (rq.copying)
      if (Status st = compose_copying(svc->parameters(), a); !st) return tl::unexpected(st.error());
    return a;
  });
}

}  // namespace headlab::server
