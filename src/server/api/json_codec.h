// server/api/json_codec.h — the one codec between JSON bodies and the API's types.
// Decoding is strict: malformed JSON, a non-object body, unknown fields, missing fields
// and wrong types are invalid_argument errors that name the field.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "core/attention_pattern.h"
#include "server/api/api_types.h"
#include "server/api/handlers/course_handlers.h"
#include "util/result.h"

namespace headlab::server {

Result<WeightsRequest> decode_weights_request(std::string_view body);
Result<ProgressCheckRequest> decode_progress_check_request(std::string_view body);
Result<ProgressQuery> decode_progress_reset_request(std::string_view body);
Result<ProgressQuery> decode_progress_query(const std::map<std::string, std::string>& query);
Result<HeadSplitRequest> decode_head_split_query(const std::map<std::string, std::string>& query);

// POST /api/lessons/<id>/check
Result<LessonCheckRequest> decode_lesson_check(std::string_view body);
Result<Feedback> decode_feedback(std::string_view body);

std::string encode_lessons(const std::vector<LessonSummary>& lessons);
std::string encode_check_verdict(const CheckVerdict& v);
std::string encode_feedback_id(std::int64_t id);
std::string encode_health();
std::string encode_heads();
std::string encode_weights(const core::AttentionPattern& p);
std::string encode_head_split(const core::HeadSplit& s);
std::string encode_progress(const ProgressView& v);
std::string encode_programs(const std::vector<Program>& programs);

}  // namespace headlab::server
