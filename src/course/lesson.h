// course/lesson.h — what a lesson is to the course: an id (the web app's slug), a title,
// its challenges, and how an answer to one is checked. Every check returns a Verdict:
// met or not, and why, in numbers from the learner's evidence.
//
//   const Lesson* l = find_lesson("trained-heads");
//   Result<Verdict> v = l->check_answer(answer, model);   // v->met, v->explanation
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "course/evidence.h"
#include "util/result.h"

namespace headlab::course {

struct Challenge {
  std::string id;    // stable: stored with a learner's progress ("pattern-quiz")
  std::string text;  // the task as the learner reads it
  // A multiple-choice challenge's answers ('choice' must be one of them); empty: the
  // challenge takes no 'choice'.
  std::vector<std::string> choices = {};
};

struct Verdict {
  bool met = false;
  std::string explanation;  // computed from the evidence: the numbers that decided it
  // For the challenges a wrong answer is told how far off (or what the head is): the piece of
  // evidence this explanation spoke about, as a short key (course::guess_key, at most 200
  // bytes; "position#20", "head#1.3"). Only the first answer on each piece can earn credit
  // (the server keeps them: ProgressStore::note_guess). Empty when the explanation showed
  // nothing to learn the answer from (a text too short, a tie), so such an answer spends nothing.
  std::string guess;

  Verdict() = default;
  Verdict(bool met_, std::string explanation_, std::string guess_ = {})
      : met(met_), explanation(std::move(explanation_)), guess(std::move(guess_)) {}
};

// Checks one answer to one of the lesson's challenges. model is null when no model is
// loaded. Errors: invalid_argument (unknown challenge, missing or out-of-range answer
// fields), unavailable (the challenge needs a model and none is loaded), the model's errors.
using AnswerCheck = Result<Verdict> (*)(const Answer& answer, LessonModel* model);

struct Lesson {
  std::string id;  // "causal-mask": the URL slug and the API's lesson id
  int number = 0;  // set by the course from the lesson's place in course_lessons()
  std::string title;
  bool coming = false;  // announced, not built yet: no challenges, no page
  std::vector<Challenge> challenges;
  // POST /api/lessons/<id>/check; null when the challenges are detected from what the
  // learner looks at instead (lesson 1, POST /api/progress/check).
  AnswerCheck check_answer = nullptr;
};

}  // namespace headlab::course
