// server/api/handlers/lesson_handlers.h — the first lesson's computations as plain functions
// from a typed request to a Result. No HTTP, no JSON here.
#pragma once

#include "core/attention_pattern.h"
#include "core/head_split.h"
#include "server/api/api_types.h"
#include "util/result.h"

namespace headlab::server {

// One constructed head over a sentence. Errors: unknown head, bad sentence.
Result<core::AttentionPattern> handle_weights(const WeightsRequest& request);

// Splitting the model width into heads. Errors: see core::head_split.
Result<core::HeadSplit> handle_head_split(const HeadSplitRequest& request);

}  // namespace headlab::server
