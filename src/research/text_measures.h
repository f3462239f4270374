// research/text_measures.h — the logit lens and direct logit attribution from what a person
// types: a text (or token ids) made the model's input by the BOS rule (analysis/run_text.h),
// and answer tokens given as text (" Mary": exactly one token) or as an id ("#1234").
// `headlab lens` / `headlab attribute` and POST /api/model/lens / attribute call these, so the
// CLI and the API give the same numbers for the same input.
//
//   LensTextRequest rq;  rq.prompt.text = "When Mary and John went to the store, John gave a drink to";
//   rq.answers = {" Mary"};
//   Result<LensTextAnswer> a = logit_lens_text(params, &tokenizer, rq, workspace);
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "analysis/run_text.h"
#include "research/attribution.h"
#include "research/lens.h"
#include "research/prompts.h"
#include "tokenizer/bpe_tokenizer.h"

namespace headlab::research {

struct TextPrompt {
  std::string text;             // one of text and ids
  std::vector<int> ids;
  std::optional<bool> bos;      // unset: the family's default for text; no BOS before given ids
  analysis::RunInputOptions input;  // max_tokens, truncate and how messages name them (bos is set from `bos`)
};

// The token id an answer names: "#1234" is id 1234; any other text must encode to exactly one
// token. `field` names the option or field in messages ("--answer", "'answer'").
// Errors: invalid_argument (an empty text, a text of several tokens — the message lists them
// —, an id outside the vocabulary, text without a tokenizer).
Result<int> answer_token(const model::BpeTokenizer* tokenizer, const model::ModelConfig& config,
                         const std::string& answer, const std::string& field);

// The model's input from a prompt. Errors: invalid_argument (neither or both of text and ids,
// text without a tokenizer), those of run_input_from_text / run_input_from_ids.
Result<analysis::RunInput> prompt_input(const model::BpeTokenizer* tokenizer, const model::ModelConfig& config,
                                        const TextPrompt& prompt);

struct LensTextRequest {
  TextPrompt prompt;
  std::vector<std::string> answers;  // each one token (see answer_token)
  int top_k = 5;
  bool incl_mid = false;  // each block's resid_mid too (LensRequest::incl_mid)
  double max_work = 0;  // > 0: refuse (too_long) an input whose logit_lens_cost exceeds it, saying how many tokens fit
};
struct LensTextAnswer {
  analysis::RunInput input;
  std::vector<int> answers;  // ids, in the request's order
  LensResult lens;
};
Result<LensTextAnswer> logit_lens_text(const model::Parameters& params, const model::BpeTokenizer* tokenizer,
                                       const LensTextRequest& request, model::Workspace& workspace);

struct AttributionTextRequest {
  TextPrompt prompt;
  std::string answer;  // required
  std::string wrong;   // "": the answer's logit alone
  int position = -1;   // -1: the last
};
struct AttributionTextAnswer {
  analysis::RunInput input;
  Attribution attribution;
};
Result<AttributionTextAnswer> direct_logit_attribution_text(const model::Parameters& params,
                                                            const model::BpeTokenizer* tokenizer,
                                                            const AttributionTextRequest& request,
                                                            model::Workspace& workspace);

// A batch (ARENA's IOI recipe): each prompt attributed at its own last position (prompts of
// unequal length need no padding), and the mean of each part over the prompts.
struct AttributionBatchRequest {
  std::vector<PromptPair> prompts;   // clean text, answer, wrong (corrupted is not read)
  std::string answer, wrong;         // for a prompt that gives none
  std::optional<bool> bos;
  analysis::RunInputOptions input;
};
struct AttributionBatchAnswer {
  std::vector<AttributionTextAnswer> each;  // (prompts) in the file's order
  std::vector<double> mean;                 // (parts) each part's mean over the prompts
  double mean_logit_diff = 0;               // the model's, averaged
  double mean_logit_diff_uncapped = 0;      // what the means add up to
};
// Errors: invalid_argument naming the prompt's line (no answer, an answer of several tokens,
// an empty text), those of direct_logit_attribution_text.
Result<AttributionBatchAnswer> direct_logit_attribution_batch(const model::Parameters& params,
                                                              const model::BpeTokenizer* tokenizer,
                                                              const AttributionBatchRequest& request,
                                                              model::Workspace& workspace);

}  // namespace headlab::research
