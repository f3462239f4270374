// server/handlers/course_handlers.h — the course around the lessons: the table of contents
// with a learner's progress, lesson 2's answer checks, and feedback.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "server/api_types.h"
#include "server/feedback_store.h"
#include "server/model_service.h"
#include "server/progress_store.h"
#include "server/rate_limiter.h"
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

struct TrainedHeadsCheckRequest {
  std::string learner;
  std::string challenge;
  std::string choice;       // pattern-quiz
  int layer = -1, head = -1;  // find-induction, find-sink, ablation-matters
  std::string text;         // ablation-matters
};

struct CheckVerdict {
  bool correct = false;
  std::string explanation;
  ProgressView progress;
};

// Errors: invalid_argument (unknown challenge, missing or out-of-range answer fields),
// unavailable (no model loaded, or the model is busy), the store's io_error.
Result<CheckVerdict> handle_trained_heads_check(ProgressStore& store, ModelService* model,
                                                const TrainedHeadsCheckRequest& request);

// Errors: invalid_argument (bad lesson, empty or over-long message/contact),
// rate_limited (more than 5 notes from one client in 10 minutes), io_error.
Result<std::int64_t> handle_feedback(FeedbackStore& store, RateLimiter& limiter, const std::string& client,
                                     const Feedback& feedback);

}  // namespace headlab::server
