// course/trained_heads.h — lesson 2, "What trained heads learn". Its four challenges are
// answers the learner sends, checked against the loaded model on the learner's own text:
//   pattern-quiz      the pattern a previous-token head draws: below-diagonal
//   find-induction    on the learner's text, which must repeat a span, the head gives at
//                     least 30% (the scanner's induction bar) of each repeated token's
//                     attention to the token after its earlier copy
//   find-sink         on the learner's text the head puts at least half of its attention
//                     on the first token, and the learner says rightly whether it is a sink
//                     (value-weighted share under half of that, the scanner's rule) or
//                     reads the first token
//   ablation-matters  on the learner's text, zero-ablating the head raises the loss at
//                     least half as much as the head whose ablation hurts most
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

// The numbers both the page and the check show for find-sink, over rows q >= 1 (row 0,
// BOS, has no other key): mean p[q][0] and mean value_weighted[q][0].
struct FirstTokenShares {
  double attention = 0.0, value_weighted = 0.0;
  bool parks() const { return value_weighted < 0.5 * attention; }  // the scanner's sink rule
};
FirstTokenShares first_token_shares(const FirstTokenEvidence& e);

struct AblationEvidence {
  int layer = 0, head = 0;  // the learner's head
  int n_head = 0;
  std::vector<float> loss_deltas;  // (n_layer * n_head) layer-major, nats
};

Verdict check_pattern_quiz(const PatternQuizEvidence& e);
Verdict check_find_induction(const InductionEvidence& e);
Verdict check_find_sink(const FirstTokenEvidence& e);
Verdict check_ablation_matters(const AblationEvidence& e);

// The AnswerCheck of the lesson (see course/lesson.h for the errors).
Result<Verdict> check_trained_heads_answer(const Answer& answer, LessonModel* model);

Lesson trained_heads_lesson();

}  // namespace headlab::course
