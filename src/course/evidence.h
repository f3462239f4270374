// course/evidence.h — what the learner sends to an answer check, and the model as the
// checks see it. The course does not run models: the server implements LessonModel with
// its ModelService, a test with numbers of its own.
#pragma once

#include <string>
#include <vector>

#include "analysis/scanner.h"
#include "util/result.h"

namespace headlab::course {

// One answer, as POST /api/lessons/<id>/check sends it in "answer"; a challenge reads
// the fields it needs and says which one is missing.
struct Answer {
  std::string challenge;        // the challenge's id
  std::string choice;           // a multiple-choice answer
  int layer = -1, head = -1;    // a head of the model (-1: not given)
  std::string text;             // the text the learner tried it on
  bool revealed = false;        // the learner saw the answer before checking: no credit
  std::vector<int> positions;   // positions the learner picked (lesson 3: a query and a key, pairs [m, n])
  std::vector<int> order;       // a permutation of the text's tokens (lesson 3's shuffle)
};

// The learner's text as the model's tokens (no BOS).
struct TokensOfText {
  std::vector<int> ids;            // (T)
  std::vector<std::string> texts;  // (T) each token's bytes
};

// Cosine similarity of the model's learned position vectors (wpe): (N, N) row-major.
struct PositionSimilarity {
  int N = 0;
  std::vector<float> cosine;
};

// One head run on the learner's text: its tokens (BOS first) and two of its views.
struct HeadOnText {
  int T = 0;
  std::vector<int> ids;               // (T) token ids, BOS first
  std::vector<float> pattern;         // (T, T) row-major, zeros above the diagonal
  std::vector<float> value_weighted;  // (T, T) the same, Kobayashi et al. 2020
};

class LessonModel {
 public:
  virtual ~LessonModel() = default;
  virtual int n_layer() const = 0;
  virtual int n_head() const = 0;
  // The head scanner's report on this model (analysis/scanner.h).
  virtual Result<analysis::ScanReport> scan_report() = 0;
  // Loss on `text` with each head zero-ablated, minus the loss without: (n_layer * n_head),
  // layer-major. Errors: the text is empty or too long for the model, the model is busy.
  virtual Result<std::vector<float>> head_ablation_deltas(const std::string& text) = 0;
  // One head on `text` with BOS prepended. Errors: those of head_ablation_deltas.
  virtual Result<HeadOnText> head_on_text(const std::string& text, int layer, int head) = 0;
  // Lesson 3 (word order). The defaults say the model cannot answer: a test's model or a
  // server without these views need not implement them.
  virtual Result<TokensOfText> tokens_of_text(const std::string& /*text*/) { return not_here(); }
  // Layer 0's head on the token embeddings only (analysis::content_only_pattern): (T, T).
  virtual Result<std::vector<float>> content_only_pattern(const std::vector<int>& /*ids*/, int /*head*/) {
    return not_here();
  }
  // Errors: unsupported when the model has no learned positions.
  virtual Result<PositionSimilarity> learned_position_similarity() { return not_here(); }

 private:
  static tl::unexpected<Error> not_here() {
    return make_error(ErrorCode::unavailable, "This model cannot show the word-order views.");
  }
};

}  // namespace headlab::course
