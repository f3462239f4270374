// course/challenge_titles.h — the short names a teacher reads for the course's challenges
// and their multiple-choice answers: the column heads of the class view and the wrong
// answers under them, instead of ids ("induction-next-word", "below-diagonal").
//
//   challenge_title("causal-mask", "induction-next-word");            // "Induction: the next word"
//   choice_label("trained-heads", "pattern-quiz", "below-diagonal");   // "the line just below the diagonal"
//
// Contract: never fails. A challenge without a title here (one added later) is named by its
// task text; an unknown choice by its id with spaces for dashes.
#pragma once

#include <string>

namespace headlab::course {

std::string challenge_title(const std::string& lesson, const std::string& challenge);
std::string choice_label(const std::string& lesson, const std::string& challenge, const std::string& choice);

// True when challenge_title has a title of its own for it (not the task text): for the test
// that every challenge of the course has one.
bool has_challenge_title(const std::string& lesson, const std::string& challenge);

}  // namespace headlab::course
