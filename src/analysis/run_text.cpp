// analysis/run_text.cpp — tokenise by the BOS rule, one recorded forward, the head views and
// the next-token outcome.
#include "analysis/run_text.h"

#include <utility>

#include "analysis/head_views.h"
#include "model/head_range.h"
#include "model/next_token.h"
#include "util/check.h"

namespace headlab::analysis {
namespace {

// Puts BOS first and applies the length limit (BOS is kept when truncating).
Result<RunInput> finish_input(std::vector<model::Token> tokens, const model::BpeTokenizer* tokenizer,
                              const model::ModelConfig& c, const RunInputOptions& o) {
  const int limit = o.max_tokens > 0 ? std::min(o.max_tokens, c.n_ctx) : c.n_ctx;
  const bool with_bos = o.bos.value_or(c.default_prepend_bos());
  const int bos = with_bos ? 1 : 0;
  const int total = static_cast<int>(tokens.size()) + bos;
  RunInput in;
  if (total > limit) {
    if (!o.truncate)
      return make_error(ErrorCode::too_long, "the text is " + std::to_string(total) + " tokens long" +
                                                 (with_bos ? " (with BOS)" : "") + ", more than " + o.limit_name + " (" +
                                                 std::to_string(limit) + "); " + o.truncate_hint + " to keep the last " +
                                                 std::to_string(limit) + ", or shorten it");
    tokens.erase(tokens.begin(), tokens.end() - (limit - bos));
    in.truncated = true;
  }
  if (with_bos) in.tokens.push_back({c.bos_token_id, tokenizer ? tokenizer->token_bytes(c.bos_token_id) : "", 0, 0});
  in.tokens.insert(in.tokens.end(), tokens.begin(), tokens.end());
  return in;
}

}  // namespace

std::vector<int> RunInput::ids() const {
  std::vector<int> out;
  for (const model::Token& t : tokens) out.push_back(t.id);
  return out;
}

Result<RunInput> run_input_from_text(const model::BpeTokenizer& tokenizer, const model::ModelConfig& c,
                                     const std::string& text, const RunInputOptions& o) {
  if (text.empty()) return make_error(ErrorCode::invalid_argument, "the text is empty: type something for the model to read");
  auto tokens = tokenizer.encode(text);
  if (!tokens) return tl::unexpected(tokens.error());
  return finish_input(std::move(*tokens), &tokenizer, c, o);
}

Result<RunInput> run_input_from_ids(const model::BpeTokenizer* tokenizer, const model::ModelConfig& c,
                                    std::vector<int> ids, const RunInputOptions& o) {
  if (ids.empty()) return make_error(ErrorCode::invalid_argument, "no token ids given");
  for (int id : ids)
    if (id < 0 || id >= c.vocab_size)
      return make_error(ErrorCode::invalid_argument, "token id " + std::to_string(id) +
                                                         " is outside the vocabulary [0, " +
                                                         std::to_string(c.vocab_size) + ")");
  std::vector<model::Token> tokens;
  for (int id : ids) tokens.push_back({id, tokenizer ? tokenizer->token_bytes(id) : "", 0, 0});
  return finish_input(std::move(tokens), tokenizer, c, o);
}

NextTokenOutcome next_token_outcome(std::span<const float> logits, std::span<const int> ids, int V, int top_k,
                                    const model::BpeTokenizer* tokenizer, int top_next_from) {
  NextTokenOutcome o;
  const int T = static_cast<int>(ids.size());
  HEADLAB_CHECK(logits.size() >= std::size_t(T) * V);
  // each row's log-sum-exp once: the loss of the token that came and the chances shown share it
  // (token_loss(row, V, target) is this lse - row[target], bit for bit)
  double sum = 0.0;
  for (int t = 0; t < T; ++t) {
    const float* row = logits.data() + std::size_t(t) * V;
    const bool loss = t + 1 < T, shown = t >= top_next_from;
    const double lse = loss || shown ? model::row_log_sum_exp(row, V) : 0.0;
    if (loss) {
      HEADLAB_CHECK(ids[std::size_t(t) + 1] >= 0 && ids[std::size_t(t) + 1] < V);
      o.token_loss.push_back(static_cast<float>(lse - double(row[ids[std::size_t(t) + 1]])));
      sum += o.token_loss.back();
    }
    std::vector<Prediction> preds;
    if (shown)
      for (const model::TokenChance& p : model::top_next(row, V, top_k, lse))
        preds.push_back({p.id, tokenizer ? tokenizer->token_bytes(p.id) : "", p.logit, p.prob});
    o.top_next.push_back(std::move(preds));
  }
  o.loss = o.token_loss.empty() ? 0.0f : static_cast<float>(sum / o.token_loss.size());
  return o;
}

Result<model::ForwardOptions> run_forward_options(const model::ModelConfig& c, const RunRequest& rq) {
  for (const HeadRef& h : rq.heads)
    if (Status s = model::check_layer_head(c, h.layer, h.head); !s) return tl::unexpected(s.error());
  if (rq.top_k < 0 || rq.top_k > 1000)
    return make_error(ErrorCode::invalid_argument, "top_k must be between 0 and 1000");
  const bool per_head = !rq.heads.empty();
  model::ForwardOptions opt;
  opt.record.pattern = (per_head && (rq.views.pattern || rq.views.value_weighted)) || rq.views.rollout;
  opt.record.scores = per_head && rq.views.scores;
  opt.record.qkv = per_head && rq.views.value_weighted;
  opt.hooks = rq.hooks;
  return opt;
}

RunReport run_report(const model::Parameters& params, const model::BpeTokenizer* tokenizer, std::span<const int> ids,
                     const RunRequest& rq, const model::ForwardOutput& out) {
  const model::ModelConfig& c = params.config;
  RunReport r;
  r.T = out.T;
  r.V = out.V;
  auto keep = [&](const float* packed) {
    if (rq.keep) return rq.keep(packed);
    return std::vector<float>(packed, packed + model::ActivationRecord::packed_size(out.T));
  };
  const std::size_t P = model::ActivationRecord::packed_size(out.T);
  for (const HeadRef& h : rq.heads) {
    HeadViews v{h.layer, h.head, {}, {}, {}};
    const std::size_t at = (std::size_t(h.layer) * c.n_head + h.head) * P;
    if (rq.views.pattern) v.pattern = keep(out.record.pattern.data() + at);
    if (rq.views.scores) v.scores = keep(out.record.scores.data() + at);
    if (rq.views.value_weighted) v.value_weighted = keep(value_weighted_pattern(params, out.record, h.layer, h.head).data());
    r.heads.push_back(std::move(v));
  }
  if (rq.views.rollout) r.rollout = keep(attention_rollout(out.record).data());
  r.outcome = next_token_outcome(out.logits, ids, out.V, rq.top_k, tokenizer, rq.top_next_from);
  if (rq.logits) r.logits = out.logits;
  return r;
}

RunReport run_report(const model::Parameters& params, const model::BpeTokenizer* tokenizer, std::span<const int> ids,
                     const RunRequest& rq, model::ForwardOutput&& out) {
  RunRequest read = rq;
  read.logits = false;  // moved below, not copied
  RunReport r = run_report(params, tokenizer, ids, read, std::as_const(out));
  if (rq.logits) r.logits = std::move(out.logits);
  return r;
}

Result<RunReport> run_model(const model::Parameters& params, const model::BpeTokenizer* tokenizer,
                            std::span<const int> ids, const RunRequest& rq, model::Workspace& ws) {
  auto opt = run_forward_options(params.config, rq);
  if (!opt) return tl::unexpected(opt.error());
  model::ForwardOutput out;
  if (Status s = model::forward(params, ids, *opt, out, ws); !s) return tl::unexpected(s.error());
  return run_report(params, tokenizer, ids, rq, std::move(out));
}

}  // namespace headlab::analysis
