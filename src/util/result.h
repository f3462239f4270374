// util/result.h — errors as values: Result<T> is a T or an Error (code + message).
//
//   Result<Sentence> s = tokenize_sentence(text);
//   if (!s) return tl::unexpected(s.error());      // pass it on
//   use(*s);
//
// Expected failures (bad user input, missing or corrupt files) travel as values; only
// programmer errors assert. The server maps ErrorCode to an HTTP status in one place and
// the CLI prints "headlab: error: <message>".
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include <tl/expected.hpp>

namespace headlab {

enum class ErrorCode {
  invalid_argument,  // a value the caller gave is wrong (bad head name, query out of range)
  too_long,          // input longer than allowed (tokens, bytes)
  not_found,         // a file, route or record that does not exist
  io_error,          // reading or writing failed (disk full, permissions)
  corrupt,           // a file exists but its contents are wrong
  unsupported,       // valid but not handled (unknown dtype, architecture)
  unavailable,       // busy or shutting down; try again later
  rate_limited,      // too many requests from one client; try again later
  storage_full,      // a store reached its size cap (or the disk is full); reads go on
  unauthorized,      // no valid credential (none, wrong or expired): log in again
  forbidden,         // a valid credential that does not cover this (another class's)
  internal,          // a bug: should never reach a user
};

// The stable string for an ErrorCode, used in JSON ("invalid_argument", ...).
std::string_view error_code_name(ErrorCode code);

struct Error {
  ErrorCode code = ErrorCode::internal;
  std::string message;  // a sentence for a person: what was wrong and how to fix it
  int retry_after_s = 0;  // rate_limited, unavailable: when to try again, in seconds, if the
                          // code that refused knows it (the HTTP Retry-After); 0: it does not
  // What a program can act on besides the message, as the text of a JSON object whose members
  // the API's error envelope carries beside "code" and "message" (a 413's cost, limit and the
  // narrower requests that fit); empty: none. Text, so util needs no JSON library.
  std::string details_json = {};
};

template <class T>
using Result = tl::expected<T, Error>;

// Status is Result<void>: ok or an Error.
using Status = tl::expected<void, Error>;

inline tl::unexpected<Error> make_error(ErrorCode code, std::string message) {
  return tl::unexpected<Error>(Error{code, std::move(message)});
}

inline std::string_view error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::invalid_argument: return "invalid_argument";
    case ErrorCode::too_long: return "too_long";
    case ErrorCode::not_found: return "not_found";
    case ErrorCode::io_error: return "io_error";
    case ErrorCode::corrupt: return "corrupt";
    case ErrorCode::unsupported: return "unsupported";
    case ErrorCode::unavailable: return "unavailable";
    case ErrorCode::rate_limited: return "rate_limited";
    case ErrorCode::storage_full: return "storage_full";
    case ErrorCode::unauthorized: return "unauthorized";
    case ErrorCode::forbidden: return "forbidden";
    case ErrorCode::internal: return "internal";
  }
  return "internal";
}

}  // namespace headlab
