// server/model_service/work_refusal.h — the 413 of a patching sweep over the server's work limit
// (POST /api/model/patch, /api/model/path-patch; docs/api.md): the message for a person, and in
// the error envelope beside it the sweep's cost, the limit and the narrower requests that fit
// (research/patch_narrowing.h), each with the fields it changes and its own cost:
//   {"error": {"code": "too_long", "message": "...", "cost": 3.2e11, "limit": 1e11,
//              "narrowings": [{"label": "layers 0–2 only (3 of 12)", "layers": [0, 1, 2], "cost": 9.6e10}]}}
#pragma once

#include <string>
#include <vector>

#include "research/patch_narrowing.h"
#include "util/result.h"

namespace headlab::server {

Error work_refusal(std::string message, double cost, double limit, const std::vector<research::PatchNarrowing>& narrowings);

}  // namespace headlab::server
