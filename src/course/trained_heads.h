// course/trained_heads.h — lesson 2, "What trained heads learn". Its four challenges are
// answers the learner sends, checked against the loaded model on the learner's own text:
//   pattern-quiz      the pattern a previous-token head draws: below-diagonal
//   find-induction    on the learner's text, which must repeat a span, the head gives the
//                     token after each repeated token's earlier copy at least 30% (the
//                     scanner's induction bar) and twice an even spread's share of its
//                     attention, and more than it gives the previous token. Only queries
//                     whose earlier-copy targets are neither the previous nor the current
//                     token count (on "x x x" or "a b a b" they coincide, and the text cannot
//                     tell induction from previous-token); a text whose targets are most of
//                     each row is refused as telling nothing.
//   find-sink         on the learner's text (at least 4 tokens) the head puts at least half
//                     of its attention on the first token, over the rows from the third
//                     token on (before it the first token is also the previous one), and the
//                     learner says rightly whether it is a sink (value-weighted share under
//                     half of that, the scanner's rule) or reads the first token
//   ablation-matters  on the learner's text, which must repeat a span, zero-ablating the head
//                     raises the loss, and at least half as much as the head whose ablation
//                     hurts most
// Each check is a pure function of its evidence; check_trained_heads_answer gathers the
// evidence through a LessonModel and calls it. An answer sent with "revealed" (the
// learner saw the answer first) is checked and explained but never met.
#pragma once

#include <string>
#include <vector>

#include "analysis/scanner.h"
#include "course/lesson.h"

namespace headlab::course {

inline constexpr const char* kTrainedHeadsLesson = "trained-heads";

// The quiz's choices: "diagonal", "first-column", "below-diagonal", "uniform".
const std::vector<std::string>& pattern_quiz_choices();

struct PatternQuizEvidence {
  std::string choice;                           // one of pattern_quiz_choices()
  const analysis::ScanReport* scan = nullptr;   // the model's heads; null without a model
};

// find-induction: one head on the learner's text.
struct InductionEvidence {
  int layer = 0, head = 0;
  std::vector<int> ids;        // (T) BOS first
  std::vector<float> pattern;  // (T, T)
};

// find-sink: the head on the learner's text and what the learner says it is.
struct FirstTokenEvidence {
  int layer = 0, head = 0;
  std::string choice;                 // "sink" or "reads-first"
  int T = 0;
  std::vector<float> pattern;         // (T, T)
  std::vector<float> value_weighted;  // (T, T)
};

// The sink question's choices: "sink", "reads-first".
const std::vector<std::string>& first_token_choices();

// The numbers both the page and the check show for find-sink, over rows q >= 2 (row 0 has no
// other key, and row 1's previous token is the first token): mean p[q][0] and mean
// value_weighted[q][0]; rows = T - 2 of them.
struct FirstTokenShares {
  double attention = 0.0, value_weighted = 0.0;
  int rows = 0;
  bool parks() const { return value_weighted < 0.5 * attention; }  // the scanner's sink rule
};
FirstTokenShares first_token_shares(const FirstTokenEvidence& e);

struct AblationEvidence {
  int layer = 0, head = 0;  // the learner's head
  int n_head = 0;
  std::vector<float> loss_deltas;  // (n_layer * n_head) layer-major, nats
  std::vector<int> ids;            // (T) the learner's text as token ids, BOS first
};

// Tokens of `ids` (BOS first) that sit in a repeated span: q >= 2 whose pair
// (ids[q-1], ids[q]) occurred earlier in the same order.
int repeated_span_tokens(const std::vector<int>& ids);

Verdict check_pattern_quiz(const PatternQuizEvidence& e);
Verdict check_find_induction(const InductionEvidence& e);
Verdict check_find_sink(const FirstTokenEvidence& e);
Verdict check_ablation_matters(const AblationEvidence& e);

// The AnswerCheck of the lesson (see course/lesson.h for the errors).
Result<Verdict> check_trained_heads_answer(const Answer& answer, LessonModel* model);

Lesson trained_heads_lesson();

}  // namespace headlab::course
