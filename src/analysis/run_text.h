// analysis/run_text.h — "run the model and report", written once: a text (or token ids)
// becomes the model's input by the BOS rule, one forward records what the views need, and
// the answer holds each chosen head's views and what the model predicts at every position.
// `headlab run` and POST /api/model/run are adapters over these; the interventions reuse
// run_input_from_text and next_token_outcome.
//
//   auto in = run_input_from_text(tok, params.config, "The cat sat", RunInputOptions{});
//   RunRequest rq;  rq.heads = {{0, 3}};
//   auto report = run_model(params, &tok, in->ids(), rq, workspace);
//   report->heads[0].pattern;          // packed causal half (T*(T+1)/2)
//   report->outcome.top_next[T - 1];   // what comes after the last token
//
// The BOS rule, the same everywhere: the model's BOS token (bos_token_id) is put first when
// its family's default says so (ModelConfig::default_prepend_bos, TransformerLens's rule: on
// for GPT-2, Llama, Mistral and Gemma, off for GPT-NeoX and Qwen 2/3, whose tokenizers never
// add one), unless the caller decides; without it the first real token takes the attention a
// head parks on the start.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tokenizer/bpe_tokenizer.h"
#include "model/config.h"
#include "model/forward.h"
#include "model/parameters.h"
#include "util/result.h"

namespace headlab::analysis {

struct HeadRef {
  int layer = 0;
  int head = 0;
};

struct RunInputOptions {
  std::optional<bool> bos;  // bos_token_id first or not; unset: the family's default (the BOS rule above)
  int max_tokens = 0;       // the most tokens a run takes, BOS included; 0: the model's n_ctx
  bool truncate = false;    // keep BOS and the last tokens instead of refusing a longer input
  // How the caller names the limit and the way to truncate, for the too_long message:
  //   "the text is 40 tokens long, more than <limit_name> (32); <truncate_hint> to keep the last 32"
  std::string limit_name = "the model's n_ctx";
  std::string truncate_hint = "truncate";
};

struct RunInput {
  std::vector<model::Token> tokens;  // (T) BOS first when asked; begin/end are byte spans in the text
  bool truncated = false;
  std::vector<int> ids() const;      // (T)
};

// Errors: invalid_argument (empty text), too_long (more than max_tokens without truncate),
// the tokenizer's.
Result<RunInput> run_input_from_text(const model::BpeTokenizer& tokenizer, const model::ModelConfig& config,
                                     const std::string& text, const RunInputOptions& options);
// The same from token ids; tokenizer may be null (token texts are then empty). Errors:
// invalid_argument (no ids, an id outside the vocabulary [0, vocab_size)), too_long.
Result<RunInput> run_input_from_ids(const model::BpeTokenizer* tokenizer, const model::ModelConfig& config,
                                    std::vector<int> ids, const RunInputOptions& options);

struct Prediction {
  int id = 0;
  std::string text;   // the token's bytes; "" without a tokenizer
  float logit = 0.0f;
  float prob = 0.0f;  // softmax over the vocabulary
};

// What the model predicts at each position, and how well it predicted the text.
struct NextTokenOutcome {
  float loss = 0.0f;                              // mean of token_loss (0 when T < 2)
  std::vector<float> token_loss;                  // (T-1) loss of ids[t+1] at position t
  std::vector<std::vector<Prediction>> top_next;  // (T, top_k): top_next[t] predicts the token after t
};
// logits: (T, V) with T = ids.size(). tokenizer may be null. Positions before
// top_next_from get an empty list (a caller that shows only the last saves T-1 passes).
NextTokenOutcome next_token_outcome(std::span<const float> logits, std::span<const int> ids, int V, int top_k,
                                    const model::BpeTokenizer* tokenizer, int top_next_from = 0);

struct RunViews {
  bool pattern = true;
  bool value_weighted = false;
  bool scores = false;
  bool rollout = false;  // one view of the whole model, not per head
};

struct RunRequest {
  std::vector<HeadRef> heads;  // whose views to keep; checked with model::check_layer_head
  RunViews views;
  int top_k = 5;               // 0..1000
  int top_next_from = 0;       // positions before this get no predictions (see next_token_outcome)
  bool logits = false;         // keep the logits (T, V)
  // Cuts each (T*(T+1)/2) view as it is made (the server keeps a window of it); empty:
  // keep the whole packed causal half.
  std::function<std::vector<float>(const float* packed)> keep;
  // Hook points that change the run (steering, research/steering.h); null: none.
  const model::ForwardHooks* hooks = nullptr;
};

struct HeadViews {
  int layer = 0, head = 0;
  std::vector<float> pattern;         // kept cells of the packed causal half; empty when not asked
  std::vector<float> value_weighted;  // the same
  std::vector<float> scores;          // the same
};

struct RunReport {
  int T = 0, V = 0;
  std::vector<HeadViews> heads;  // in the order asked
  std::vector<float> rollout;    // kept cells; empty when not asked
  NextTokenOutcome outcome;
  std::vector<float> logits;     // (T, V) when asked
};

// One forward of `ids` with the record the views need. Errors: invalid_argument (a head
// that does not exist, top_k outside 0..1000), the forward's.
Result<RunReport> run_model(const model::Parameters& params, const model::BpeTokenizer* tokenizer,
                            std::span<const int> ids, const RunRequest& request, model::Workspace& workspace);
// run_model in its two halves, for a caller that runs the forward elsewhere (the server's
// pool, in a batch with other requests): the checks and the forward's options, then the
// report from the forward's output: read (the pool's answer is shared by the requests that
// asked for it; request.logits copies its logits), or consumed (request.logits moves them).
Result<model::ForwardOptions> run_forward_options(const model::ModelConfig& config, const RunRequest& request);
RunReport run_report(const model::Parameters& params, const model::BpeTokenizer* tokenizer, std::span<const int> ids,
                     const RunRequest& request, const model::ForwardOutput& out);
RunReport run_report(const model::Parameters& params, const model::BpeTokenizer* tokenizer, std::span<const int> ids,
                     const RunRequest& request, model::ForwardOutput&& out);

}  // namespace headlab::analysis
