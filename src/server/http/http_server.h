// server/http/http_server.h — the HTTP layer: connections, limits, the screen of every
// request, the route table, the built web app, compression and the lanes that answer slow
// routes off the event loop. The only code that sees the HTTP library (libmicrohttpd);
// it knows routes and lanes, not what they do (server/server.cpp wires the API onto it).
//
//   HttpServer http(options, routes, {{.threads = 2}}, [](const HttpRequest& r) { return r.method == "POST" ? 0 : -1; });
//   if (auto s = http.bind(); !s) die(s.error().message);
//   http.listen();   // blocks until stop() (from another thread or a signal)
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "server/http/http_types.h"
#include "util/result.h"

namespace headlab::server {

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;                    // 0: a free port (port() tells which after bind())
  std::string web_dir;                // the built web front end, served for non-API paths
  int threads = 4;                    // event-loop threads; lane requests wait off them
  int max_connections = 4096;         // open connections in all; more are refused at accept
  int max_connections_per_ip = 512;
  int idle_timeout_s = 8;             // a keep-alive connection silent this long is closed
  int request_deadline_s = 10;        // headers and body within this of the connection's start
                                      // or its previous answer; trickled bytes do not extend it
  std::size_t max_header_bytes = 16 * 1024;  // more: 431
  int max_header_count = 64;                  // more: 431
  std::size_t max_body_bytes = 64 * 1024;     // more: 413
  std::vector<std::string> allow_origins;     // other origins allowed to POST
  double drain_s = 5;                 // on stop: how long requests in flight may take to finish
  std::size_t gzip_min_bytes = 1024;  // answers at least this long are gzipped (level 1)
  std::vector<std::string> trusted_proxies;  // their X-Forwarded-For names the client
  // Bytes of answers queued for connections and not yet read by their clients, in all and by
  // client (an IPv6 client by its /64). Past either, the connection of that client (past the
  // total: of the client holding most) whose answer has waited longest is cut. 0: no bound.
  std::size_t max_unread_bytes = std::size_t(512) << 20;
  std::size_t max_unread_bytes_per_client = std::size_t(64) << 20;
  // Host names a server listening beyond loopback answers to (a rebound page's Host is
  // refused); empty: any. A loopback server answers to 127.0.0.1 and localhost only.
  std::vector<std::string> server_names;
};

// A lane: worker threads that answer its requests while their connections are suspended (an
// event-loop thread is never held), in turns by client (HttpWorkQueue). Admission: past
// max_pending requests waiting or running in all, or max_pending_per_client from one client
// address, a request is answered 503 with `busy_message` at once (0: no such limit; the
// route may then refuse by itself, as the model service's queue does).
struct HttpLane {
  int threads = 1;
  int max_pending = 0;
  int max_pending_per_client = 0;
  // Places one route (path) may hold of max_pending (0: all): a flood of one route (40
  // addresses creating classes) leaves the others (teachers logging in) room in the lane.
  int max_pending_per_route = 0;
  std::string busy_message = "The server is busy; try again in a few seconds.";
};

// The lane a request is answered on: an index into the lanes, or -1 for the event loop
// (quick routes).
using LaneOf = std::function<int(const HttpRequest&)>;

class HttpServer {
 public:
  HttpServer(HttpServerOptions options, std::vector<Route> routes, std::vector<HttpLane> lanes, LaneOf lane_of);
  ~HttpServer();  // stop(), then waits for the lanes' running jobs

  // Binds the socket. Errors: unavailable when the port is taken, with advice.
  Status bind();
  // Serves until stop(); call after bind().
  void listen();
  // Graceful: stops accepting, lets requests in flight finish for at most drain_s, answers
  // the lane requests still waiting 503, closes idle and half-sent connections. Blocks
  // until done; listen() then returns.
  void stop();
  int port() const;
  bool web_app_found() const;
  // Bytes of answers queued and not yet read, in all (for tests and the health figures).
  std::size_t unread_bytes() const;

  struct Impl;  // public only so the library's C callbacks can name it

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace headlab::server
