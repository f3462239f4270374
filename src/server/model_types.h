// server/model_types.h — typed requests and answers of the model API (docs/api.md).
#pragma once

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

struct HeadView {
  int layer = 0, head = 0;
  std::vector<float> pattern;          // packed causal half, or empty
  std::vector<float> value_weighted;   // packed, or empty
  std::vector<float> scores;           // packed, or empty
};

struct Outcome {
  float loss = 0.0f;                          // mean of token_loss
  std::vector<float> token_loss;              // (T-1)
  std::vector<std::vector<Prediction>> top_next;  // (T, top_k)
};

struct ModelRunResult {
  std::vector<model::Token> tokens;
  int n_layer = 0, n_head = 0;
  std::vector<HeadView> heads;
  std::vector<float> rollout;  // packed, or empty
  Outcome outcome;
  bool truncated = false;
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
