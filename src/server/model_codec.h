// server/model_codec.h — JSON of the model API: strict decoding of requests (unknown fields,
// wrong types and out-of-range values are errors that name the field), plain encoding.
#pragma once

#include <string>
#include <string_view>

#include "server/model_types.h"
#include "util/result.h"

namespace headlab::server {

Result<ModelRunRequest> decode_model_run_request(std::string_view body);
Result<ModelInterveneRequest> decode_model_intervene_request(std::string_view body);
// The body re-serialised with sorted keys: the cache key of a request.
std::string canonical_json(std::string_view body);

std::string encode_model_info(const ModelInfo& info);
std::string encode_model_run(const ModelRunResult& r);
std::string encode_model_intervene(const ModelInterveneResult& r);
std::string encode_training_log(const TrainingLog& log);

}  // namespace headlab::server
