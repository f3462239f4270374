// server/api/patch_codec.h — JSON of activation patching: POST /api/model/patch's request and
// answer, the answer also `headlab patch --format json`'s (docs/api.md, "POST /api/model/patch"):
//   {"what", "metric", "direction", "axes": ["layer", "pos"], "values": [[…]] (nested in the axes'
//    order, TL's), "layers", "positions", "heads", "patch_types" (the *_every's), "clean",
//    "corrupted", "tokens", "corrupted_tokens", "pairs", "cost": {"forwards", "block_tokens",
//    "multiply_adds"}, "skipped"}
// Values are float32 printed in their shortest exact form (the CLI and the API give the same numbers).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/model_service/patch_types.h"
#include "util/result.h"

namespace headlab::server {

// {"clean", "corrupted", "answer", "wrong"}, {"clean_ids", "corrupted_ids", "answer", "wrong"}
// or {"prompts": [{…}]}, and "what", "metric", "noising", "layers", "positions", "bos". Errors
// name the field.
Result<ModelPatchRequest> decode_model_patch_request(std::string_view body);
std::string encode_model_patch(const ModelPatchResult& r);
// A patching answer's "tokens" and "corrupted_tokens": [{"id", "text"}, ...] (path patching's too).
nlohmann::ordered_json encode_patch_tokens(const std::vector<model::Token>& tokens);

}  // namespace headlab::server
