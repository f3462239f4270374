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

namespace {

// {"error": {"code", "message", ...details}}: details' members (an Error's details_json) after
// the two every error has, which they cannot replace.
HttpResponse envelope(int status, std::string_view code, const std::string& message, const std::string& details_json) {
  HttpResponse r;
  r.status = status;
  nlohmann::ordered_json error = {{"code", code}, {"message", message}};
  if (!details_json.empty()) {
    auto details = nlohmann::ordered_json::parse(details_json, nullptr, /*allow_exceptions=*/false);
    if (details.is_object())
      for (auto it = details.begin(); it != details.end(); ++it)
        if (it.key() != "code" && it.key() != "message") error[it.key()] = std::move(it.value());
  }
  nlohmann::ordered_json body = {{"error", std::move(error)}};
  // replace, not throw: a message may quote bytes of a request that were not UTF-8
  r.body = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return r;
}

}  // namespace

HttpResponse error_response(int status, std::string_view code, const std::string& message) {
  return envelope(status, code, message, {});
}

HttpResponse error_response(const Error& error) {
  HttpResponse r = envelope(http_status(error.code), error_code_name(error.code), error.message, error.details_json);
  // The refusing code's own wait when it knows one, else a default per code.
  auto retry = [&](int fallback) {
    r.headers.push_back({"Retry-After", std::to_string(error.retry_after_s > 0 ? error.retry_after_s : fallback)});
  };
  if (error.code == ErrorCode::unavailable) retry(2);
  if (error.code == ErrorCode::rate_limited) retry(600);
  return r;
}

}  // namespace headlab::server
