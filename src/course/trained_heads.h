// course/trained_heads.h — lesson 2, "What trained heads learn". Its four challenges are
// answers the learner sends, checked against the loaded model:
//   pattern-quiz      the pattern a previous-token head draws: below-diagonal
//   find-induction    a head the scanner labels induction
//   find-sink         a head the scanner labels sink or first_token
//   ablation-matters  on the learner's text, zero-ablating the head raises the loss at
//                     least half as much as the head whose ablation hurts most
// Each check is a pure function of its evidence; check_trained_heads_answer gathers the
// evidence through a LessonModel and calls it.
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

struct AblationEvidence {
  int layer = 0, head = 0;  // the learner's head
  int n_head = 0;
  std::vector<float> loss_deltas;  // (n_layer * n_head) layer-major, nats
};

Verdict check_pattern_quiz(const PatternQuizEvidence& e);
Verdict check_find_induction(const analysis::HeadReport& head);
Verdict check_find_sink(const analysis::HeadReport& head);
Verdict check_ablation_matters(const AblationEvidence& e);

// The AnswerCheck of the lesson (see course/lesson.h for the errors).
Result<Verdict> check_trained_heads_answer(const Answer& answer, LessonModel* model);

Lesson trained_heads_lesson();

}  // namespace headlab::course
