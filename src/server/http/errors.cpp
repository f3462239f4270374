// server/http/errors.cpp — ErrorCode -> HTTP status, and the error envelope.
#include "server/http/errors.h"

#include <nlohmann/json.hpp>

namespace headlab::server {

int http_status(ErrorCode code) {
  switch (code) {
    case ErrorCode::invalid_argument: return 400;
    case ErrorCode::too_long: return 413;
    case ErrorCode::not_found: return 404;
    case ErrorCode::unsupported: return 422;
    case ErrorCode::unavailable: return 503;
    case ErrorCode::rate_limited: return 429;
    case ErrorCode::storage_full: return 507;
    case ErrorCode::unauthorized: return 401;
    case ErrorCode::forbidden: return 403;
    case ErrorCode::io_error:
    case ErrorCode::corrupt:
    case ErrorCode::internal: return 500;
  }
  return 500;
}

HttpResponse error_response(int status, std::string_view code, const std::string& message) {
  HttpResponse r;
  r.status = status;
  nlohmann::json body = {{"error", {{"code", code}, {"message", message}}}};
  // replace, not throw: a message may quote bytes of a request that were not UTF-8
  r.body = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return r;
}

HttpResponse error_response(const Error& error) {
  HttpResponse r = error_response(http_status(error.code), error_code_name(error.code), error.message);
  // The refusing code's own wait when it knows one, else a default per code.
  auto retry = [&](int fallback) {
    r.headers.push_back({"Retry-After", std::to_string(error.retry_after_s > 0 ? error.retry_after_s : fallback)});
  };
  if (error.code == ErrorCode::unavailable) retry(2);
  if (error.code == ErrorCode::rate_limited) retry(600);
  return r;
}

}  // namespace headlab::server
