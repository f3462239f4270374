// server/api/routes.h — the route table: method, path, and the function that answers.
#pragma once

#include <string>
#include <vector>

#include "server/api/class_routes.h"
#include "server/http/http_types.h"
#include "server/store/feedback_store.h"
#include "course/lesson_models.h"
#include "server/model_service/model_service.h"
#include "server/http/rate_limiter.h"
#include "server/store/progress_store.h"
#include "server/model_service/response_cache.h"

namespace headlab::server {

// What routes may use; owned by the Server, outliving every request.
struct ServerContext {
  ProgressStore* store = nullptr;  // null when the database could not be opened
  std::string store_error;         // then: why
  ModelService* model = nullptr;   // null when no model was loaded
  std::string model_error;         // then: why
  ResponseCache* cache = nullptr;  // answers of identical model requests
  FeedbackStore* feedback = nullptr;  // null when the database could not be opened
  RateLimiter* feedback_limiter = nullptr;
  RateLimiter* learner_writes = nullptr;  // progress writes and answer checks per learner id; null: none
  ClassRoutesContext* classes = nullptr;  // the class routes; null: none (checks are not noted)
  course::LessonModelShelf* lesson_models = nullptr;  // the word-order lesson's models, by name
};

std::vector<Route> make_routes(ServerContext& context);

}  // namespace headlab::server
