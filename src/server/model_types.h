// server/model_types.h — typed requests and answers of the model API (docs/api.md).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "model/bpe_tokenizer.h"
#include "model/config.h"

namespace headlab::server {

struct HeadRef {
  int layer = 0;
  int head = 0;
};

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
  bool bos = true;
  bool truncate = false;           // keep the last max_tokens tokens instead of refusing
  bool all_heads = true;           // "heads" omitted
  std::vector<HeadRef> heads;
  bool want_pattern = true;        // views
  bool want_value_weighted = false;
  bool want_scores = false;
  bool rollout = false;
  std::optional<TokenWindow> window;  // omitted: every row and key
  int top_k = 5;
};

struct InterventionSpec {
  struct Ablate { int layer, head; bool mean; };
  struct Block { int layer, head, key; };
  struct Replace { int layer, head; };  // uniform
  std::vector<Ablate> ablate;
  std::vector<Block> block;
  std::vector<Replace> replace;
};

struct ModelInterveneRequest {
  std::string text;
  bool bos = true;
  bool truncate = false;
  InterventionSpec interventions;
  int top_k = 5;
};

struct Prediction {
  int id = 0;
  std::string text;
  float prob = 0.0f;
};

// Each view holds the cells of the answer's window, row by row (window_cells in
// model_views.h); without a window, the packed causal half (T*(T+1)/2).
struct HeadView {
  int layer = 0, head = 0;
  std::vector<float> pattern;          // window cells; empty when not asked (see Sends)
  std::vector<float> value_weighted;   // window cells; empty when not asked
  std::vector<float> scores;           // window cells; empty when not asked
};

struct Outcome {
  float loss = 0.0f;                          // mean of token_loss
  std::vector<float> token_loss;              // (T-1)
  std::vector<std::vector<Prediction>> top_next;  // (T, top_k)
};

struct ModelRunResult {
  std::vector<model::Token> tokens;
  int n_layer = 0, n_head = 0;
  struct Sends {
    bool pattern = false, value_weighted = false, scores = false, rollout = false;
  } sends;  // the views asked for: a window's cells may be none, and the view is still sent
  std::vector<HeadView> heads;
  std::vector<float> rollout;  // window cells; empty when not asked
  Outcome outcome;
  bool truncated = false;
  std::optional<TokenWindow> window;  // the window asked for, echoed; none: the whole view
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
