// research/lens.cpp — the logit lens (see lens.h): one recorded forward, then each entry of
// the accumulated residual through the forward's own last step.
#include "research/lens.h"

#include <algorithm>
#include <cmath>

#include "model/hooks.h"
#include "model/next_token.h"

namespace headlab::research {

namespace {

// log softmax of one row, in double.                                    row (V) -> out (V)
void log_softmax(const float* row, int V, std::vector<double>& out) {
  const double lse = model::row_log_sum_exp(row, V);
  out.resize(std::size_t(V));
  for (int v = 0; v < V; v++) out[std::size_t(v)] = double(row[v]) - lse;
}

}  // namespace

double logit_lens_cost(const model::ModelConfig& c, int T, bool incl_mid) {
  return double(incl_mid ? 2 * c.n_layer + 1 : c.n_layer + 1) * T * c.n_embd * c.vocab_size;
}

Result<LensResult> logit_lens(const model::Parameters& params, std::span<const int> ids, const LensRequest& rq,
                              model::Workspace& ws) {
  const model::ModelConfig& c = params.config;
  const int L = c.n_layer, V = c.vocab_size, C = c.n_embd;
  if (rq.top_k < 0 || rq.top_k > 1000)
    return make_error(ErrorCode::invalid_argument, "top_k must be in 0..1000, got " + std::to_string(rq.top_k));
  for (int a : rq.answers)
    if (a < 0 || a >= V)
      return make_error(ErrorCode::invalid_argument, "answer token " + std::to_string(a) +
                                                         " is outside the vocabulary [0, " + std::to_string(V) + ")");

  if (rq.incl_mid && !model::hook_exists(c, model::HookPoint::resid_mid))
    return make_error(ErrorCode::invalid_argument,
                      "this model's blocks have no resid_mid (parallel attention and MLP, or attention only): "
                      "the lens reads resid_pre and the final resid_post");

  // 1. one forward recording the residual stream: (L+1, T, C), [l] = resid_pre of block l, [L] = final;
  //    with incl_mid, each block's resid_mid too (L, T, C) through its hook
  model::ForwardOptions opt;
  opt.record.residual = true;
  opt.logits = false;
  model::ForwardHooks hooks(L);
  std::vector<float> mid;
  if (rq.incl_mid) {
    hooks.want(model::HookPoint::resid_mid, model::HookLayer::every);
    hooks.at = [&](model::HookPoint, int l, const model::HookView& v) {
      const std::size_t n = v.size();
      if (mid.size() < std::size_t(L) * n) mid.resize(std::size_t(L) * n);
      v.copy_to(mid.data() + std::size_t(l) * n);
    };
    opt.hooks = &hooks;
  }
  model::ForwardOutput run;
  if (Status s = model::forward(params, ids, opt, run, ws); !s) return tl::unexpected(s.error());
  const int T = run.T;
  const std::vector<float> resid = std::move(run.record.residual);
  const std::size_t TC = std::size_t(T) * C;

  // the entries in TL's order: 0_pre, (0_mid,) 1_pre, ..., final_post
  LensResult r;
  std::vector<const float*> entry_resid;  // (entries) each (T, C)
  for (int l = 0; l < L; l++) {
    r.labels.push_back(std::to_string(l) + "_pre");
    entry_resid.push_back(resid.data() + std::size_t(l) * TC);
    if (rq.incl_mid) {
      r.labels.push_back(std::to_string(l) + "_mid");
      entry_resid.push_back(mid.data() + std::size_t(l) * TC);
    }
  }
  r.labels.push_back("final_post");
  entry_resid.push_back(resid.data() + std::size_t(L) * TC);
  r.entries = static_cast<int>(entry_resid.size());
  r.T = T;
  r.cells.resize(std::size_t(r.entries) * T);

  // 2. each entry through ln_final (its own statistics), the unembedding and the soft-cap:
  //    the forward from start_layer = L is exactly that step
  auto entry_logits = [&](int entry, model::ForwardOutput& o) -> Status {
    model::ForwardOptions lo;
    lo.start_layer = L;
    lo.start_resid = entry_resid[std::size_t(entry)];
    return model::forward(params, ids, lo, o, ws);
  };

  // the final distribution first: every entry's KL is measured from it
  model::ForwardOutput fin;
  const int last = r.entries - 1;
  if (Status s = entry_logits(last, fin); !s) return tl::unexpected(s.error());
  // log p_final(v) = logit(v) - lse_t: the logits and one log-sum-exp per position, not (T, V) doubles
  std::vector<double> final_lse(static_cast<std::size_t>(T));
  for (int t = 0; t < T; t++) final_lse[std::size_t(t)] = model::row_log_sum_exp(fin.logits.data() + std::size_t(t) * V, V);

  model::ForwardOutput o;
  std::vector<double> logp;
  for (int e = 0; e <= last; e++) {
    const model::ForwardOutput* src = &fin;
    if (e < last) {
      if (Status s = entry_logits(e, o); !s) return tl::unexpected(s.error());
      src = &o;
    }
    for (int t = 0; t < T; t++) {
      const float* row = src->logits.data() + std::size_t(t) * V;
      log_softmax(row, V, logp);
      const float* fin_row = fin.logits.data() + std::size_t(t) * V;
      const double lse = final_lse[std::size_t(t)];
      double entropy = 0, kl = 0;
      for (int v = 0; v < V; v++) {
        const double fl = double(fin_row[v]) - lse;
        const double p = std::exp(logp[std::size_t(v)]), pf = std::exp(fl);
        if (p > 0) entropy -= p * logp[std::size_t(v)];
        if (pf > 0) kl += pf * (fl - logp[std::size_t(v)]);
      }
      LensCell& cell = r.cells[std::size_t(e) * T + t];
      cell.entropy = static_cast<float>(entropy);
      cell.kl_final = static_cast<float>(std::max(0.0, kl));  // >= 0; rounding may leave -1e-9
      for (int id : model::top_k(row, V, rq.top_k))
        cell.top.push_back({id, row[id], static_cast<float>(std::exp(logp[std::size_t(id)]))});
      for (int a : rq.answers) {
        int rank = 0;
        for (int v = 0; v < V; v++)
          if (row[v] > row[a]) rank++;
        cell.answers.push_back({a, rank, row[a], static_cast<float>(std::exp(logp[std::size_t(a)])),
                                static_cast<float>(logp[std::size_t(a)])});
      }
    }
  }
  return r;
}

}  // namespace headlab::research
