// server/api/handlers/induction_handlers.h — lesson 1's rule-built induction head beside the
// loaded model's induction head, on the same repeated sentence, both scored by the
// scanner's prefix-matching measure (analysis/head_scores.h, Olsson et al. 2022):
//   score = mean over queries q with an earlier copy of their token of
//           sum_{k: tok[k-1] = tok[q], k-1 < q} p[q][k]
// Both heads read the model's tokens of the sentence (BOS first), so they see the same
// positions; the rule-built head's pattern is core::compute_pattern(induction, ..., mask).
//
//   auto c = handle_induction_comparison(svc, {.sentence = "the cat sat . the cat sat ."});
//   c->rule_built.score.score;  // near 1: the rule finds every earlier copy
#pragma once

#include <string>
#include <vector>

#include "analysis/head_scores.h"
#include "tokenizer/bpe_tokenizer.h"
#include "server/model_service/model_service.h"
#include "util/result.h"

namespace headlab::server {

struct InductionComparisonRequest {
  std::string sentence;
};

struct InductionHeadOnText {
  std::string name;                         // "induction" (rule-built) or "1.2" (the model's)
  int layer = -1, head = -1;                // the model's head; -1 for the rule-built one
  std::vector<std::vector<float>> pattern;  // (T, q+1): row q holds keys 0..q
  analysis::Scored score;                   // prefix matching, and a uniform head's score
};

struct InductionComparison {
  std::vector<model::Token> tokens;  // (T,) BOS first
  int queries_scored = 0;            // queries whose token occurred earlier: the measure's rows
  bool model_head_labelled = false;  // the scanner labels the model's head induction (else: its top scorer)
  InductionHeadOnText rule_built, model_head;
};

// Errors: the model's (no heldout.txt for the scanner, a text too long); invalid_argument
// when no token of the sentence occurs twice (the measure has no query to score).
Result<InductionComparison> handle_induction_comparison(ModelService& model, const InductionComparisonRequest& request);

}  // namespace headlab::server
