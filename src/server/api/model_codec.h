// server/api/model_codec.h — JSON of the model API: strict decoding of requests (unknown fields,
// wrong types and out-of-range values are errors that name the field), plain encoding.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "analysis/scanner.h"
#include "server/api/handlers/induction_handlers.h"
#include "server/model_service/inference_pool.h"
#include "server/model_service/model_types.h"
#include "util/result.h"

namespace headlab::server {

Result<ModelRunRequest> decode_model_run_request(std::string_view body);
Result<ModelInterveneRequest> decode_model_intervene_request(std::string_view body);
// POST /api/model/cache: {"text" | "ids" | "prompts", "hooks", "bos"} (the answer is the file's bytes).
Result<ModelCacheRequest> decode_model_cache_request(std::string_view body);
// The optional field "steer" of an intervene or patch body: [{"layer", "coef", "vector": [C
// numbers], "from"} or {"layer", "coef", "plus", "minus", "from"}], at most 16; checked against
// the model later (ModelService).
Status read_steer_list(const nlohmann::json& j, std::vector<SteerSpec>& out);
// The body re-serialised with sorted keys: the cache key of a request.
std::string canonical_json(std::string_view body);

std::string encode_model_info(const ModelInfo& info);
std::string encode_model_run(const ModelRunResult& r);
// GET /api/model/queue?request_id=ID: {"state": "waiting" | "running" | "unknown", "ahead", "waiting"}.
std::string encode_queue_place(const QueuePlace& p);
// A run's request id (POST /api/model/run?request_id=ID): 1 to 64 letters, digits, '-' or '_'.
Status check_request_id(const std::string& id);
std::string encode_model_intervene(const ModelInterveneResult& r);
std::string encode_training_log(const TrainingLog& log);
// GET /api/model/scan and `headlab scan --format json`: the shape of docs/api.md, indented
// by two spaces, floats unrounded (the CLI and the API give the same numbers).
std::string encode_scan_report(const analysis::ScanReport& r, const std::string& model_name);

// POST /api/model/query-scores: {"text", "bos", "layer", "head", "query"}.
Result<QueryScoresRequest> decode_query_scores_request(std::string_view body);
std::string encode_query_scores(const QueryScoresResult& r);

// POST /api/lessons/causal-mask/induction: {"sentence": "..."}.
Result<InductionComparisonRequest> decode_induction_comparison_request(std::string_view body);
std::string encode_induction_comparison(const InductionComparison& c);

}  // namespace headlab::server
