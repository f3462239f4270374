// server/http/http_types.h — the server's own request and response types. Handlers and the
// route table see these, never the HTTP library (only http/http_server.cpp includes it).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace headlab::server {

struct HttpRequest {
  std::string method;                         // "GET", "POST"
  std::string path;                           // "/api/heads"
  std::map<std::string, std::string> query;   // decoded ?key=value pairs
  std::string body;
  std::string content_type;
  std::string remote_addr;  // the client's address, for rate limits
  // The few other headers routes read, by lower-case name: cookie, if-none-match,
  // x-forwarded-proto, x-headlab-learner (the page's learner id on model requests).
  std::map<std::string, std::string> headers;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  // An answer made once and sent many times (a cached model answer): every connection that
  // sends it shares this one copy, and its gzip made once beside it (null: send it as it is).
  // `body` is then empty.
  std::shared_ptr<const std::string> shared_body, shared_gzip;
};

using RouteHandler = std::function<HttpResponse(const HttpRequest&)>;

struct Route {
  std::string method;   // "GET" or "POST"
  std::string path;     // exact path
  RouteHandler handler;
  // false: a query parameter is refused before the handler runs (nothing is silently ignored);
  // true: the handler reads the query and refuses the parameters it does not know itself
  bool reads_query = false;
};

inline constexpr bool kReadsQuery = true;

}  // namespace headlab::server
