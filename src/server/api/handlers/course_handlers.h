// server/api/handlers/course_handlers.h — the course around the lessons: the table of contents
// with a learner's progress, the lessons' answer checks (src/course/ decides; this records
// what it decided), and feedback.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "course/evidence.h"
#include "server/api/api_types.h"
#include "server/store/feedback_store.h"
#include "server/model_service/model_service.h"
#include "server/store/progress_store.h"
#include "server/http/rate_limiter.h"
#include "util/result.h"

namespace headlab::server {

struct LessonSummary {
  std::string id, title;
  int number = 0;
  bool coming = false;
  int total = 0, completed_count = 0;
};

// learner may be empty (no progress then). store may be null (counts stay 0).
Result<std::vector<LessonSummary>> handle_lessons(ProgressStore* store, const std::string& learner);

struct LessonCheckRequest {
  std::string learner;
  course::Answer answer;   // its challenge, and the fields that challenge reads
  std::string request_id;  // "" or 1-64 bytes chosen by the client: a retry sends the same
                           // one, and the class's teacher sees the check once
};

struct CheckVerdict {
  bool correct = false;
  std::string explanation;
  ProgressView progress;
  bool revealed = false;  // the learner was shown the answer, in this check or before (not sent)
};

// Checks an answer to a challenge of `lesson` (one with a course::AnswerCheck) against the
// model (null when none is loaded), and records it when it is met.
// A 'choice' must be one of the challenge's choices (course::Challenge::choices), and is
// refused for a challenge that has none: what a learner typed never reaches the teacher's
// list of wrong answers unless it is one of the answers offered.
// Errors: invalid_argument (unknown learner, lesson or challenge, missing or out-of-range
// answer fields, a choice not offered), unavailable (no model loaded, or the model is
// busy), the store's io_error.
Result<CheckVerdict> handle_lesson_check(ProgressStore& store, ModelService* model, const std::string& lesson,
                                         const LessonCheckRequest& request);

// Errors: invalid_argument (bad lesson, empty or over-long message/contact),
// rate_limited (more than 5 notes from one client in 10 minutes), io_error.
Result<std::int64_t> handle_feedback(FeedbackStore& store, RateLimiter& limiter, const std::string& client,
                                     const Feedback& feedback);

}  // namespace headlab::server
