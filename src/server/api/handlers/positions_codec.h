// server/api/handlers/positions_codec.h — JSON for the word-order lesson's routes (docs/api.md,
// "Word order"). Strict like the main codec: unknown fields, wrong types and out-of-range
// numbers are invalid_argument errors that name the field.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "server/api/handlers/positions_handlers.h"
#include "util/result.h"

namespace headlab::server {

Result<RopeRequest> decode_rope_request(std::string_view body);
Result<WavelengthQuery> decode_wavelength_query(const std::map<std::string, std::string>& query);
Result<ContentOnlyRequest> decode_content_only_request(std::string_view body);
Result<LengthRequest> decode_length_request(std::string_view body);
Result<LessonRunRequest> decode_lesson_run_request(std::string_view body);

std::string encode_rope(const RopeAnswer& a);
std::string encode_wavelengths(const WavelengthAnswer& a);
std::string encode_positions(const PositionsAnswer& a);
std::string encode_content_only(const ContentOnlyAnswer& a);
std::string encode_positions_models(const std::vector<LessonModelSummary>& models);
std::string encode_length(const LengthAnswer& a);
std::string encode_lesson_run(const LessonRunAnswer& a);

}  // namespace headlab::server
