// server/api/handlers/progress_handlers.h — challenge progress: run lesson 1's detectors on
// what the learner has on screen and keep what they completed in the ProgressStore.
#pragma once

#include "server/api/api_types.h"
#include "server/store/progress_store.h"
#include "util/result.h"

namespace headlab::server {

// Errors (invalid_argument): a learner id that is not 8-64 characters of A-Z a-z 0-9 - _,
// an unknown lesson, or (check) a bad head, sentence or query. io_error from the store.
Result<ProgressView> handle_progress_get(ProgressStore& store, const ProgressQuery& query);
Result<ProgressView> handle_progress_check(ProgressStore& store, const ProgressCheckRequest& request);
Result<ProgressView> handle_progress_reset(ProgressStore& store, const ProgressQuery& query);

// For other handlers that record progress: the learner id and lesson checks, and the view.
Status validate_progress_query(const ProgressQuery& query);
Result<ProgressView> view_of(ProgressStore& store, const ProgressQuery& query);

}  // namespace headlab::server
