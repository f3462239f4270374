// server/model_service/model_types.h — typed requests and answers of the model API (docs/api.md).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "analysis/run_text.h"
#include "tokenizer/bpe_tokenizer.h"
#include "model/config.h"

namespace headlab::server {

using HeadRef = analysis::HeadRef;

// A half-open range of token positions [begin, end), counted after BOS is added.
struct TokenRange {
  int begin = 0, end = 0;
};

// The part of each (T, T) view an answer carries: rows queries.begin..queries.end-1, and
// in row q the keys keys.begin..min(keys.end, q+1)-1 (the key range's causal half). The
// whole view is {queries: [0, T], keys: [0, T]}.
struct TokenWindow {
  TokenRange queries, keys;
};

struct ModelRunRequest {
  std::string text;
  // Put the model's BOS token first; omitted: the family's rule (ModelConfig::
  // default_prepend_bos: off for GPT-NeoX and Qwen 2/3), as the CLI does.
  std::optional<bool> bos;
  bool truncate = false;           // keep the last max_tokens tokens instead of refusing
  // What a text past the limit is told to do. Empty: send "truncate": true (POST /api/model/run);
  // a route without that field (a lesson's) says its own ("shorten the sentence").
  std::string too_long_hint;
  bool all_heads = true;           // "heads" omitted
  std::vector<HeadRef> heads;
  bool want_pattern = true;        // views
  bool want_value_weighted = false;
  bool want_scores = false;
  bool rollout = false;
  std::optional<TokenWindow> window;  // omitted: every row and key
  int top_k = 5;
  // false: no top_next, token_loss nor loss; the forward then stops after the last layer
  // of the heads asked for (model::ForwardOptions::stop_at_layer) unless rollout needs all
  bool predictions = true;
  // "encoding": "base64": each view one base64 string (probabilities as uint16, scores as
  // float32, little-endian; docs/api.md) instead of rows of 5-decimal numbers
  bool compact = false;
};

struct InterventionSpec {
  struct Ablate { int layer, head; bool mean; };
  struct Block { int layer, head, key; };
  struct Replace { int layer, head; };  // uniform
  std::vector<Ablate> ablate;
  std::vector<Block> block;
  std::vector<Replace> replace;
};

// Steering at blocks.{layer}.hook_resid_pre (research/steering.h): coef * vector from
// position `from` on, or ActAdd when plus and minus are given (their resid_pre's difference
// over the shorter, tokenised by the request's BOS rule).
struct SteerSpec {
  int layer = 0;
  float coef = 1.0f;
  int from = 0;
  std::vector<float> vector;  // (C) or empty with plus/minus
  std::string plus, minus;
};

struct ModelInterveneRequest {
  std::string text;
  std::optional<bool> bos;  // as in ModelRunRequest
  bool truncate = false;
  InterventionSpec interventions;
  std::vector<SteerSpec> steer;
  int top_k = 5;
};

// POST /api/model/cache: the activations of the selected hooks as a safetensors file
// (research/cache.h). One of: texts (one "text" or the "prompts" list, BOS by the rule) or ids
// (given ids: BOS only when "bos" is true).
struct ModelCacheRequest {
  std::vector<std::string> texts;
  std::vector<int> ids;
  std::optional<bool> bos;
  std::string hooks;  // TransformerLens names or globs, comma-separated
};

// POST /api/model/query-scores: one query's scores against every key, the later ones too.
struct QueryScoresRequest {
  std::string text;
  std::optional<bool> bos;  // as in ModelRunRequest
  int layer = 0, head = 0, query = 0;
};
struct QueryScoresResult {
  std::vector<model::Token> tokens;
  int layer = 0, head = 0, query = 0;
  std::vector<float> scores;  // (T,) q·k * attention_scale(layer); keys after `query` are what the mask hides
};

using Prediction = analysis::Prediction;  // id, text, logit, prob

// Each view holds the cells of the answer's window, row by row (window_cells in
// model_views.h); without a window, the packed causal half (T*(T+1)/2). A view not asked
// for is empty (see sends).
using HeadView = analysis::HeadViews;  // layer, head, pattern, value_weighted, scores

using Outcome = analysis::NextTokenOutcome;  // loss, token_loss (T-1), top_next (T, top_k)

struct ModelRunResult {
  std::vector<model::Token> tokens;
  int n_layer = 0, n_head = 0;
  analysis::RunViews sends;  // the views asked for: a window's cells may be none, and the view is still sent
  std::vector<HeadView> heads;
  std::vector<float> rollout;  // window cells; empty when not asked
  Outcome outcome;
  bool predictions = true;  // outcome sent (the request's "predictions")
  bool compact = false;     // views as base64 (the request's "encoding")
  bool truncated = false;
  std::optional<TokenWindow> window;  // the window asked for, echoed; none: the whole view
  int V = 0;
  std::vector<float> logits;          // (T, V) when asked (headlab run --logits); else empty
  // Its views' and logits' bytes (model_run_result_bytes) in the model pool's budget while it
  // lives (InferencePool::hold): until the route has encoded it.
  std::shared_ptr<const void> held;
};

struct ModelInterveneResult {
  std::vector<model::Token> tokens;
  Outcome baseline, intervened;
};

struct ModelInfo {
  std::string name;
  model::ModelConfig config;
  int bos_id = 0;
  std::string bos_text;
  int max_tokens = 0;
  bool has_training_log = false;
};

struct TrainingLog {
  std::vector<std::string> columns;
  std::vector<std::vector<double>> rows;
};

}  // namespace headlab::server
