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

Result<PatchInput> patch_input_from_prompts(const model::BpeTokenizer& tok, const model::ModelConfig& c,
                                            std::span<const PromptPair> prompts,
                                            const analysis::RunInputOptions& options, PatchMetric metric) {
  PatchInput in;
  for (std::size_t i = 0; i < prompts.size(); i++) {
    const PromptPair& p = prompts[i];
    const std::string which = prompts.size() == 1 ? std::string()
                                                  : "pair " + std::to_string(i + 1) +
                                                        (p.line > 0 ? " (line " + std::to_string(p.line) + ")" : "") + ": ";
    auto bad = [&](const std::string& why) { return make_error(ErrorCode::invalid_argument, which + why); };
    if (p.corrupted.empty())
      return bad("no corrupted prompt: patching puts the clean run's activations into a corrupted run (give "
                 "\"corrupted\": the same prompt with the detail that changes the answer)");
    auto clean = analysis::run_input_from_text(tok, c, p.clean, options);
    if (!clean) return bad("the clean prompt: " + clean.error().message);
    auto corrupted = analysis::run_input_from_text(tok, c, p.corrupted, options);
    if (!corrupted) return bad("the corrupted prompt: " + corrupted.error().message);
    if (clean->tokens.size() != corrupted->tokens.size())
      return bad("the clean prompt is " + std::to_string(clean->tokens.size()) + " tokens (" +
                 quoted_tokens(tok, clean->tokens, 24) + ") and the corrupted one " +
                 std::to_string(corrupted->tokens.size()) + " (" + quoted_tokens(tok, corrupted->tokens, 24) +
                 "); patching puts each position of one run into the same position of the other, so both need the "
                 "same number of tokens: change a word for one of the same token count");
    PatchPair pair;
    pair.clean = clean->ids();
    pair.corrupted = corrupted->ids();
    // one token each, never with BOS: the metric reads one logit
    auto one_token = [&](const std::string& text, const char* name, bool needed, int& id) -> Status {
      if (text.empty()) {
        if (!needed) return {};
        return bad(std::string("the ") + std::string(patch_metric_name(metric)) + " metric needs the " + name +
                   " token: give it (\"" + name + "\": \" Mary\", with its leading space when it follows a word)");
      }
      auto tokens = tok.encode(text);
      if (!tokens) return tl::unexpected(tokens.error());
      if (tokens->size() != 1)
        return bad(std::string("the ") + name + " '" + text + "' is " + std::to_string(tokens->size()) +
                   " tokens (" + quoted_tokens(tok, *tokens, 8) +
                   "), and a metric reads one logit: give a single token (often the word with a leading space, "
                   "or its first token)");
      id = tokens->front().id;
      return {};
    };
    if (Status s = one_token(p.answer, "answer", metric != PatchMetric::loss, pair.answer); !s)
      return tl::unexpected(s.error());
    if (Status s = one_token(p.wrong, "wrong", metric == PatchMetric::logit_diff || metric == PatchMetric::normalized,
                             pair.wrong);
        !s)
      return tl::unexpected(s.error());
    in.pairs.push_back(std::move(pair));
    in.clean.push_back(std::move(*clean));
    in.corrupted.push_back(std::move(*corrupted));
  }
  if (in.pairs.empty()) return make_error(ErrorCode::invalid_argument, "no prompt pair given");
  return in;
}

}  // namespace headlab::research
