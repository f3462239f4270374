// course/answer_check.cpp — the envelope every lesson's answer check shares (answer_check.h).
#include "course/answer_check.h"

#include <cstdio>

namespace headlab::course {

std::string fixed(double v, int digits) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string percent(double share) { return fixed(share * 100, 0) + "%"; }

std::string guess_key(const std::string& what, const std::string& which) { return what + "#" + which; }

std::string digest(std::string_view bytes) {
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a, 64 bits
  for (unsigned char c : bytes) h = (h ^ c) * 1099511628211ull;
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return hex;
}

tl::unexpected<Error> unknown_challenge(const Lesson& lesson, const std::string& id) {
  std::string ids;
  for (const Challenge& c : lesson.challenges) ids += (ids.empty() ? "" : ", ") + c.id;
  return make_error(ErrorCode::invalid_argument, "Unknown challenge '" + id.substr(0, 64) + "'. Challenges: " + ids + ".");
}

Status require_model(const LessonModel* model) {
  if (model) return {};
  return make_error(ErrorCode::unavailable,
                    "No model is loaded, so this challenge cannot be checked. Start the server with --model DIR.");
}

Result<Verdict> without_credit_if_revealed(Result<Verdict> v, bool revealed, const std::string& retry) {
  if (v && revealed) {
    v->explanation += v->met ? " But you were shown this challenge\u2019s answer, so it earns no credit. " + retry
                             : " (You were shown this challenge\u2019s answer.)";
    v->met = false;
  }
  return v;
}

}  // namespace headlab::course
