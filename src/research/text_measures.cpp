// research/text_measures.cpp — a prompt and answer tokens as typed, then the lens or the
// attribution (see text_measures.h).
#include "research/text_measures.h"

#include <charconv>
#include <cstdio>

namespace headlab::research {

Result<int> answer_token(const model::BpeTokenizer* tok, const model::ModelConfig& c, const std::string& answer,
                         const std::string& field) {
  auto bad = [](const std::string& m) { return make_error(ErrorCode::invalid_argument, m); };
  if (answer.empty()) return bad(field + " is empty: give one token, like \" Mary\" (with its leading space), or an id like \"#1234\"");
  if (answer.size() > 1 && answer[0] == '#') {
    int id = -1;
    auto [end, ec] = std::from_chars(answer.data() + 1, answer.data() + answer.size(), id);
    if (ec == std::errc() && end == answer.data() + answer.size()) {
      if (id < 0 || id >= c.vocab_size)
        return bad(field + " " + answer + ": token id " + std::to_string(id) + " is outside the vocabulary [0, " +
                   std::to_string(c.vocab_size) + ")");
      return id;
    }
  }
  if (!tok) return bad(field + " \"" + answer + "\" is text, but this model has no tokenizer: give the token's id as \"#1234\"");
  auto ids = tok->encode_ids(answer);
  if (!ids) return tl::unexpected(ids.error());
  if (ids->size() != 1) {
    std::string parts;
    for (int id : *ids) parts += (parts.empty() ? "" : ", ") + std::string("\"") + tok->token_bytes(id) + "\" (#" + std::to_string(id) + ")";
    return bad(field + " \"" + answer + "\" is " + std::to_string(ids->size()) + " tokens: " + parts +
               "; an answer must be one token (mind the leading space: \" Mary\" is one token where \"Mary\" may not be)");
  }
  if ((*ids)[0] >= c.vocab_size)
    return bad(field + " \"" + answer + "\" is token " + std::to_string((*ids)[0]) + ", outside the model's vocabulary");
  return (*ids)[0];
}

Result<analysis::RunInput> prompt_input(const model::BpeTokenizer* tok, const model::ModelConfig& c, const TextPrompt& p) {
  if (p.text.empty() == p.ids.empty())
    return make_error(ErrorCode::invalid_argument, "give exactly one of a text and token ids");
  analysis::RunInputOptions o = p.input;
  o.bos = p.bos;
  if (!p.text.empty()) {
    if (!tok) return make_error(ErrorCode::invalid_argument, "this model has no tokenizer: give token ids instead of text");
    return analysis::run_input_from_text(*tok, c, p.text, o);
  }
  o.bos = p.bos.value_or(false);  // the BOS rule is never applied to given ids (issue 27): --bos asks
  return analysis::run_input_from_ids(tok, c, p.ids, o);
}

Result<LensTextAnswer> logit_lens_text(const model::Parameters& params, const model::BpeTokenizer* tok,
                                       const LensTextRequest& rq, model::Workspace& ws) {
  LensTextAnswer a;
  for (const std::string& s : rq.answers) {
    auto id = answer_token(tok, params.config, s, "answer");
    if (!id) return tl::unexpected(id.error());
    a.answers.push_back(*id);
  }
  auto in = prompt_input(tok, params.config, rq.prompt);
  if (!in) return tl::unexpected(in.error());
  a.input = std::move(*in);
  const int T = static_cast<int>(a.input.tokens.size());
  if (rq.max_work > 0 && logit_lens_cost(params.config, T, rq.incl_mid) > rq.max_work) {
    const int fit = static_cast<int>(rq.max_work / logit_lens_cost(params.config, 1, rq.incl_mid));
    char cost[32], limit[32];
    std::snprintf(cost, sizeof cost, "%.2g", logit_lens_cost(params.config, T, rq.incl_mid));
    std::snprintf(limit, sizeof limit, "%.2g", rq.max_work);
    return make_error(ErrorCode::too_long, "the logit lens of " + std::to_string(T) + " tokens costs " + cost +
                                               " multiply-adds ((L + 1) T C V), over the limit of " + limit +
                                               "; send at most " + std::to_string(fit) +
                                               " tokens, or run `headlab lens` on your own machine");
  }
  LensRequest lr;
  lr.top_k = rq.top_k;
  lr.incl_mid = rq.incl_mid;
  lr.answers = a.answers;
  auto lens = logit_lens(params, a.input.ids(), lr, ws);
  if (!lens) return tl::unexpected(lens.error());
  a.lens = std::move(*lens);
  return a;
}

Result<AttributionTextAnswer> direct_logit_attribution_text(const model::Parameters& params,
                                                            const model::BpeTokenizer* tok,
                                                            const AttributionTextRequest& rq, model::Workspace& ws) {
  AttributionRequest ar;
  auto answer = answer_token(tok, params.config, rq.answer, "answer");
  if (!answer) return tl::unexpected(answer.error());
  ar.answer = *answer;
  if (!rq.wrong.empty()) {
    auto wrong = answer_token(tok, params.config, rq.wrong, "wrong");
    if (!wrong) return tl::unexpected(wrong.error());
    ar.wrong = *wrong;
  }
  ar.position = rq.position;
  auto in = prompt_input(tok, params.config, rq.prompt);
  if (!in) return tl::unexpected(in.error());
  AttributionTextAnswer a;
  a.input = std::move(*in);
  auto attr = direct_logit_attribution(params, a.input.ids(), ar, ws);
  if (!attr) return tl::unexpected(attr.error());
  a.attribution = std::move(*attr);
  return a;
}

Result<AttributionBatchAnswer> direct_logit_attribution_batch(const model::Parameters& params,
                                                              const model::BpeTokenizer* tok,
                                                              const AttributionBatchRequest& rq, model::Workspace& ws) {
  if (rq.prompts.empty()) return make_error(ErrorCode::invalid_argument, "the batch holds no prompt");
  AttributionBatchAnswer b;
  for (const PromptPair& p : rq.prompts) {
    auto where = [&](Error e) {
      e.message = "prompt " + std::to_string(b.each.size() + 1) + (p.line > 0 ? " (line " + std::to_string(p.line) + ")" : "") +
                  ": " + e.message;
      return tl::unexpected(e);
    };
    AttributionTextRequest one;
    one.prompt.text = p.clean;
    one.prompt.bos = rq.bos;
    one.prompt.input = rq.input;
    one.answer = p.answer.empty() ? rq.answer : p.answer;
    one.wrong = p.answer.empty() ? rq.wrong : p.wrong;
    if (one.answer.empty())
      return where(Error{ErrorCode::invalid_argument, "no answer: give \"answer\" in the line or one answer for all"});
    auto a = direct_logit_attribution_text(params, tok, one, ws);
    if (!a) return where(a.error());
    b.each.push_back(std::move(*a));
  }
  const std::size_t parts = b.each.front().attribution.parts.size();
  b.mean.assign(parts, 0.0);
  for (const AttributionTextAnswer& a : b.each) {
    for (std::size_t i = 0; i < parts; i++) b.mean[i] += a.attribution.parts[i].value / double(b.each.size());
    b.mean_logit_diff += a.attribution.logit_diff / double(b.each.size());
    b.mean_logit_diff_uncapped += a.attribution.logit_diff_uncapped / double(b.each.size());
  }
  return b;
}

}  // namespace headlab::research
