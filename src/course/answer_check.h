// course/answer_check.h — what every lesson's answer check does around its pure checks: say
// which challenges exist when the id is unknown, say how to load a model when there is none,
// take the credit away when the answer was shown first, and print numbers one way.
//
//   Result<Verdict> check_word_order_answer(const Answer& a, LessonModel* model) {
//     return without_credit_if_revealed(check_on_evidence(a, model), a.revealed, "The server remembers that you looked ...");
//   }
//   // inside check_on_evidence:
//   if (auto s = require_model(model); !s) return tl::unexpected(s.error());
#pragma once

#include <string>
#include <string_view>

#include "course/lesson.h"

namespace headlab::course {

// v with `digits` decimals ("0.47"); percent(0.473) is "47%".
std::string fixed(double v, int digits = 2);
std::string percent(double share);

// invalid_argument naming the unknown id (cut to 64 bytes) and the lesson's challenge ids.
tl::unexpected<Error> unknown_challenge(const Lesson& lesson, const std::string& id);

// ok when a model is loaded; else unavailable, saying how to start the server with one.
Status require_model(const LessonModel* model);

// A guess key (course::Verdict::guess): "<what the evidence is>#<which>", e.g. "position#20".
// The part before '#' names the evidence in the server's sentence ("only the first answer
// on a position counts"). `which` is digest() of long evidence (a text): 16 hex digits of
// its FNV-1a hash, so a key stays short.
std::string guess_key(const std::string& what, const std::string& which);
std::string digest(std::string_view bytes);

// A verdict for an answer sent with `revealed` (the learner saw the answer before checking):
// checked and explained, never met. A met one says why it earned nothing and `retry` (how to
// earn it); one not met only notes that the answer was shown. Errors pass through unchanged.
Result<Verdict> without_credit_if_revealed(Result<Verdict> v, bool revealed, const std::string& retry);

}  // namespace headlab::course
