// server/api/handlers/path_patch_handlers.h — POST /api/model/path-patch (docs/api.md, "POST
// /api/model/path-patch"): path patching (research/path_patching.h) of one prompt pair or a
// batch, its cost checked against the server's patching limit (the one POST /api/model/patch
// has) before anything runs, then run in the inference pool's turns. `headlab patch --path`
// fills the same answer, so both print the same JSON (path_patch_codec.h). No HTTP, no JSON here.
#pragma once

#include <vector>

#include "research/path_patching.h"
#include "server/model_service/model_service.h"
#include "server/model_service/patch_types.h"
#include "util/result.h"

namespace headlab::server {

struct ModelPathPatchRequest {
  ModelPatchRequest input;  // the pairs, "bos" and "metric" as POST /api/model/patch reads them
  std::vector<research::HeadIndex> senders;       // empty: every head
  std::vector<research::PathReceiver> receivers;  // empty: the final residual stream
  bool noising = true;                            // ARENA's direction (false: "direction": "denoising")
};

struct ModelPathPatchResult {
  research::PathPatchResult result;
  std::vector<model::Token> tokens;            // the first pair's clean prompt
  std::vector<model::Token> corrupted_tokens;  // the first pair's corrupted prompt
  int pairs = 0;
  bool senders_all = true;  // the request named no senders: every head (said as "all")
};

// Errors: those of patch_input_from_prompts / _from_ids and path_patch; too_long when the cost
// is past the server's max_patch_multiply_adds (the message gives it and how to narrow; the
// error's details the first senders that fit: work_refusal.h).
Result<ModelPathPatchResult> handle_model_path_patch(ModelService& model, const ModelPathPatchRequest& request);

}  // namespace headlab::server
