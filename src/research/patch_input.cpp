// research/patch_input.cpp — prompt pairs as text to patching's ids (see patch_input.h).
#include "research/patch_input.h"

#include "tokenizer/unicode.h"

namespace headlab::research {
namespace {

std::string quoted_tokens(const model::BpeTokenizer& tok, const std::vector<model::Token>& tokens, std::size_t most) {
  std::string s;
  for (std::size_t i = 0; i < tokens.size() && i < most; i++)
    s += (i ? " '" : "'") + patch_token_label(&tok, tokens[i].id) + "'";
  if (tokens.size() > most) s += " …";
  return s;
}

}  // namespace

std::string patch_token_label(const model::BpeTokenizer* tok, int id) {
  if (!tok) return "#" + std::to_string(id);
  std::string s;
  for (char c : tok->token_bytes(id)) {
    if (c == '\n') s += "\\n";
    else if (c == '\t') s += "\\t";
    else s.push_back(c);
  }
  return model::utf8_find_invalid(s) >= 0 ? "#" + std::to_string(id) : s;
}

namespace {

// The answer or wrong token of a pair: one token of text, or "#id". `needed`: the metric reads it.
Status one_token(const model::BpeTokenizer* tok, const model::ModelConfig& c, const std::string& which,
                 const std::string& text, const char* name, bool needed, PatchMetric metric, int& id) {
  auto bad = [&](const std::string& why) { return make_error(ErrorCode::invalid_argument, which + why); };
  if (text.empty()) {
    if (!needed) return {};
    return bad(std::string("the ") + std::string(patch_metric_name(metric)) + " metric needs the " + name +
               " token: give it (\"" + name + "\": \" Mary\", with its leading space when it follows a word, or an "
               "id like \"#1234\")");
  }
  if (text.size() > 1 && text[0] == '#' && text.find_first_not_of("0123456789", 1) == std::string::npos) {
    const std::string digits = text.substr(1);
    if (digits.size() > 9 || std::stoi(digits) >= c.vocab_size)
      return bad(std::string("the ") + name + " " + text + " is outside the vocabulary [0, " +
                 std::to_string(c.vocab_size) + ")");
    id = std::stoi(digits);
    return {};
  }
  if (!tok)
    return bad(std::string("the ") + name + " '" + text +
               "' is text, but this model has no tokenizer: give the token's id as \"#1234\"");
  auto tokens = tok->encode(text);
  if (!tokens) return tl::unexpected(tokens.error());
  if (tokens->size() != 1)
    return bad(std::string("the ") + name + " '" + text + "' is " + std::to_string(tokens->size()) + " tokens (" +
               quoted_tokens(*tok, *tokens, 8) +
               "), and a metric reads one logit: give a single token (often the word with a leading space, "
               "or its first token, or an id like \"#1234\")");
  id = tokens->front().id;
  return {};
}

// The pair's checks once both prompts are tokens: equal lengths, the metric's tokens.
Status finish_pair(const model::BpeTokenizer* tok, const model::ModelConfig& c, const std::string& which,
                   analysis::RunInput clean, analysis::RunInput corrupted, const std::string& answer,
                   const std::string& wrong, PatchMetric metric, PatchInput& in) {
  if (clean.tokens.size() != corrupted.tokens.size()) {
    auto shown = [&](const analysis::RunInput& r) {
      if (tok) return quoted_tokens(*tok, r.tokens, 24);
      std::string s;
      for (std::size_t i = 0; i < r.tokens.size() && i < 24; i++) s += (i ? " " : "") + std::to_string(r.tokens[i].id);
      return s + (r.tokens.size() > 24 ? " …" : "");
    };
    return make_error(ErrorCode::invalid_argument,
                      which + "the clean prompt is " + std::to_string(clean.tokens.size()) + " tokens (" + shown(clean) +
                          ") and the corrupted one " + std::to_string(corrupted.tokens.size()) + " (" + shown(corrupted) +
                          "); patching puts each position of one run into the same position of the other, so both "
                          "need the same number of tokens: change a word for one of the same token count");
  }
  PatchPair pair;
  pair.clean = clean.ids();
  pair.corrupted = corrupted.ids();
  if (Status s = one_token(tok, c, which, answer, "answer", metric != PatchMetric::loss, metric, pair.answer); !s)
    return s;
  const bool wrong_needed = metric == PatchMetric::logit_diff || metric == PatchMetric::normalized;
  if (Status s = one_token(tok, c, which, wrong, "wrong", wrong_needed, metric, pair.wrong); !s) return s;
  in.pairs.push_back(std::move(pair));
  in.clean.push_back(std::move(clean));
  in.corrupted.push_back(std::move(corrupted));
  return {};
}

}  // namespace

Result<PatchInput> patch_input_from_prompts(const model::BpeTokenizer& tok, const model::ModelConfig& c,
                                            std::span<const PromptPair> prompts,
                                            const analysis::RunInputOptions& options, PatchMetric metric) {
  PatchInput in;
  for (std::size_t i = 0; i < prompts.size(); i++) {
    const PromptPair& p = prompts[i];
    const std::string which = prompts.size() == 1 ? std::string()
                                                  : "pair " + std::to_string(i + 1) +
                                                        (p.line > 0 ? " (line " + std::to_string(p.line) + ")" : "") + ": ";
    if (p.corrupted.empty())
      return make_error(ErrorCode::invalid_argument,
                        which + "no corrupted prompt: patching puts the clean run's activations into a corrupted run "
                                "(give \"corrupted\": the same prompt with the detail that changes the answer)");
    // the tokenizer's and the length's errors keep their code (too_long: the API's 413)
    auto clean = analysis::run_input_from_text(tok, c, p.clean, options);
    if (!clean) return make_error(clean.error().code, which + "the clean prompt: " + clean.error().message);
    auto corrupted = analysis::run_input_from_text(tok, c, p.corrupted, options);
    if (!corrupted)
      return make_error(corrupted.error().code, which + "the corrupted prompt: " + corrupted.error().message);
    if (Status s = finish_pair(&tok, c, which, std::move(*clean), std::move(*corrupted), p.answer, p.wrong, metric, in);
        !s)
      return tl::unexpected(s.error());
  }
  if (in.pairs.empty()) return make_error(ErrorCode::invalid_argument, "no prompt pair given");
  return in;
}

Result<PatchInput> patch_input_from_ids(const model::BpeTokenizer* tok, const model::ModelConfig& c,
                                        std::vector<int> clean_ids, std::vector<int> corrupted_ids,
                                        const std::string& answer, const std::string& wrong,
                                        const analysis::RunInputOptions& options, PatchMetric metric) {
  analysis::RunInputOptions as_given = options;
  as_given.bos = false;  // given ids are the whole prompt
  auto clean = analysis::run_input_from_ids(tok, c, std::move(clean_ids), as_given);
  if (!clean) return make_error(clean.error().code, "the clean ids: " + clean.error().message);
  auto corrupted = analysis::run_input_from_ids(tok, c, std::move(corrupted_ids), as_given);
  if (!corrupted) return make_error(corrupted.error().code, "the corrupted ids: " + corrupted.error().message);
  PatchInput in;
  if (Status s = finish_pair(tok, c, "", std::move(*clean), std::move(*corrupted), answer, wrong, metric, in); !s)
    return tl::unexpected(s.error());
  return in;
}

}  // namespace headlab::research
