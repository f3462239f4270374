// server/api/handlers/path_patch_codec.h — path patching's JSON: POST /api/model/path-patch's
// request and answer, the answer also `headlab patch --path --format json`'s (docs/api.md):
//   {"kind": "path_patch", "metric", "direction", "senders": "all" | ["0.1", …],
//    "receivers": "final" | ["1.2:k", …], "axes": ["layer", "head"], "values": [[…]] (null where a
//    head was not a sender), "layers", "heads", "clean", "corrupted", "tokens",
//    "corrupted_tokens", "pairs", "cost": {"forwards", "block_tokens", "multiply_adds"}, "skipped"}
// Values are float32 printed in their shortest exact form (the CLI and the API give the same numbers).
#pragma once

#include <string>
#include <string_view>

#include "server/api/handlers/path_patch_handlers.h"
#include "util/result.h"

namespace headlab::server {

// The pair fields of POST /api/model/patch ({"clean", "corrupted", "answer", "wrong"}, the ids,
// or "prompts"), "bos", "metric", and "senders" ("all", "0.1,1.*" or a list of such strings),
// "receivers" ("final", "1.2:k,1.3:q" or a list), "noising" (default true, ARENA's). Errors name the field.
Result<ModelPathPatchRequest> decode_model_path_patch_request(std::string_view body);
std::string encode_model_path_patch(const ModelPathPatchResult& r);

}  // namespace headlab::server
