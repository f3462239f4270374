// server/http/errors.h — the one place that maps an Error to an HTTP status and the one JSON
// error envelope: {"error": {"code": "invalid_argument", "message": "..."}}, and after those two
// the members of the Error's details_json when it has any (a 413's "cost", "limit", "narrowings").
#pragma once

#include "server/http/http_types.h"
#include "util/result.h"

namespace headlab::server {

int http_status(ErrorCode code);
HttpResponse error_response(const Error& error);
HttpResponse error_response(int status, std::string_view code, const std::string& message);

}  // namespace headlab::server
