// research/patch_input.h — prompt pairs as text (research/prompts.h) become the token ids a
// patching sweep reads (research/patching.h), by the BOS rule of analysis/run_text.h, checked
// where a person can act on it: a pair whose prompts tokenise to different lengths, an answer or
// wrong token that is not one token (its tokenization is shown). The CLI and the API call this.
//
//   auto in = patch_input_from_prompts(tok, params.config, prompts, {}, PatchMetric::logit_diff);
//   auto r = patch(params, in->pairs, request, ws);
//   in->clean[0].tokens;   // the first pair's tokens, for the output's labels
#pragma once

#include <span>
#include <string>
#include <vector>

#include "analysis/run_text.h"
#include "research/patching.h"
#include "research/prompts.h"
#include "tokenizer/bpe_tokenizer.h"
#include "util/result.h"

namespace headlab::research {

struct PatchInput {
  std::vector<PatchPair> pairs;                 // (pairs) ids, answer and wrong
  std::vector<analysis::RunInput> clean;        // (pairs) the tokens of each clean prompt
  std::vector<analysis::RunInput> corrupted;    // (pairs)
};

// Errors (invalid_argument, naming the pair — "pair 2 (line 3)" from a file, nothing for one
// pair): no corrupted prompt; clean and corrupted of different token counts (both counts and
// tokens shown); an answer or wrong token the metric reads missing, or more than one token
// ("' Mary' is 2 tokens: ' M' 'ary'"); the tokenizer's and run_input_from_text's (too_long).
Result<PatchInput> patch_input_from_prompts(const model::BpeTokenizer& tokenizer, const model::ModelConfig& config,
                                            std::span<const PromptPair> prompts,
                                            const analysis::RunInputOptions& options, PatchMetric metric);

// A token's bytes for a label: "\n" and "\t" escaped, invalid UTF-8 as "#id".
std::string patch_token_label(const model::BpeTokenizer* tokenizer, int id);

}  // namespace headlab::research
