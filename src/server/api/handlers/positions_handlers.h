// server/api/handlers/positions_handlers.h — the word-order lesson's routes as plain functions
// from a typed request to a Result (docs/api.md, "Word order"): RoPE's rotation and
// wavelengths, the similarity of position vectors, a content-only head on a (shuffled)
// text, and the three lesson models side by side. No HTTP, no JSON here.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "analysis/position_views.h"
#include "analysis/scanner.h"
#include "course/trained_heads.h"
#include "course/word_order.h"
#include "tokenizer/bpe_tokenizer.h"
#include "course/lesson_models.h"
#include "server/model_service/model_service.h"
#include "util/result.h"

namespace headlab::server {

// POST /api/rope: q and k (default: the lesson's, course::word_order_q/k) rotated to each
// pair's positions by the engine's rotary code.
struct RopeRequest {
  std::vector<float> q, k;  // (HS) each; empty: the lesson's
  float theta = 10000.0f;
  std::vector<std::pair<int, int>> pairs;  // [m, n]
};
struct RopeAnswer {
  float theta = 0;
  int head_size = 0;
  std::vector<analysis::RopeDot> dots;
};
// Errors: those of analysis::rope_dots.
Result<RopeAnswer> handle_rope(const RopeRequest& request);

// GET /api/rope/wavelengths?theta=&head_size=: both as typed, so the message can say what is wrong.
struct WavelengthQuery {
  std::string theta = "10000", head_size = "64";
};
struct RopePreset {
  std::string name;
  double theta = 0;
  int head_size = 0;
  int context = 0;  // the context length the model was trained for
};
struct WavelengthAnswer {
  double theta = 0;
  int head_size = 0;
  std::vector<analysis::RopePair> pairs;
  std::vector<RopePreset> presets;
};
// Errors: invalid_argument, saying what to type instead.
Result<WavelengthAnswer> handle_rope_wavelengths(const WavelengthQuery& query);

// GET /api/positions: the loaded model's learned wpe and the sinusoids of the same size,
// each as a cosine-similarity matrix over at most kMaxPositionsShown positions.
inline constexpr int kMaxPositionsShown = 128;
struct PositionsAnswer {
  std::string model;           // empty without a model
  int n_ctx = 0, n_embd = 0;
  std::vector<int> positions;  // (N) the positions shown (every one when n_ctx <= 128)
  std::vector<float> learned;  // (N, N) empty when the model has no learned positions
  std::string learned_note;    // then: why
  std::vector<float> sinusoidal;  // (N, N)
};
// model may be null: the sinusoids of 128 positions x 128 channels are shown alone.
Result<PositionsAnswer> handle_positions(ModelService* model);

// POST /api/positions/content-only: layer 0's head on the token embeddings alone.
struct ContentOnlyRequest {
  std::string text;
  int head = 0;
  std::vector<int> order;  // token i of the shown text is token order[i] of the text; empty: as typed
};
struct ContentOnlyAnswer {
  std::vector<model::Token> tokens;  // (T) in the shown order
  std::vector<int> order;            // (T)
  int head = 0, n_head = 0;
  std::vector<float> pattern;  // (T, T) every key, no mask
};
// Errors: invalid_argument (empty or over-long text, a head or order that does not fit), the tokenizer's.
Result<ContentOnlyAnswer> handle_content_only(ModelService& model, const ContentOnlyRequest& request);

// GET /api/positions/models: the three lesson models, each found or not, with the scanner's
// best previous-token and induction heads, and the previous-token head's share by query band
// (course::previous_token_bands of the trained context) on the scanner's natural windows.
struct LessonModelSummary {
  std::string positions, name, title;  // the lesson's table (course::word_order_models)
  std::string config_positions;         // what the folder's config says: learned, rotary or none
  bool available = false;
  std::string error;  // when not available: why
  int n_layer = 0, n_head = 0, n_ctx = 0, trained_context = 0, run_limit = 0;
  analysis::BestHead previous_token, induction;
  double previous_token_chance = 0, induction_chance = 0;
  std::vector<course::PreviousTokenShare> previous_by_position;  // the previous-token head, by query band
  // The heads the scanner labels sinks (first_token high, first_token_value_weighted under
  // half of it), largest margin first: lesson 2 shows one when the built-in model has none.
  struct Sink {
    int layer = 0, head = 0;
    double first_token = 0, value_weighted = 0;
  };
  std::vector<Sink> sinks;
};
Result<std::vector<LessonModelSummary>> handle_positions_models(course::LessonModelShelf& shelf);

// POST /api/positions/length: the loss at each position of one text (default: the model's
// heldout.txt, repeated to fill run_limit), inside and past the trained context.
struct LengthRequest {
  std::string model, text;
};
struct LengthAnswer {
  std::string model, positions;
  int trained_context = 0, run_limit = 0, T = 0;
  std::vector<float> token_loss;  // (T - 1) nats: predicting token t + 1 at position t
  double inside = 0, beyond = 0;  // mean loss at positions < trained_context and >= it (beyond: NaN when none)
  int beyond_count = 0;
};
// Errors: the shelf's, invalid_argument (a text under 8 tokens), the forward's.
Result<LengthAnswer> handle_positions_length(course::LessonModelShelf& shelf, const LengthRequest& request);

// POST /api/positions/run: one head of a lesson model on a text, BOS first, causal.
struct LessonRunRequest {
  std::string model, text;
  int layer = 0, head = 0;
};
struct LessonRunAnswer {
  std::string model, positions;
  std::vector<model::Token> tokens;  // (T) BOS first
  std::vector<float> pattern;        // (T, T) zeros above the diagonal
  course::PreviousTokenShare previous_token;  // the head's share on the token before, queries 2..T-1
  std::vector<float> value_weighted;          // (T, T) Kobayashi et al.'s |p f(x)| rows, zeros above the diagonal
  course::FirstTokenShares first_token;       // the find-sink numbers (course::first_token_shares), rows 2..T-1
};
Result<LessonRunAnswer> handle_positions_run(course::LessonModelShelf& shelf, const LessonRunRequest& request);

}  // namespace headlab::server
