// server/server.h — `headlab serve`: the JSON API and the built web app on one port.
//
//   auto server = Server::create({.host = "127.0.0.1", .port = 8080, .db_path = "x.db", .web_dir = "web/dist"});
//   if (!server) die(server.error().message);
//   (*server)->listen();       // blocks until stop() (from another thread or a signal)
//
// Port 0 picks a free port (tests); port() tells which after bind().
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "util/result.h"

namespace headlab::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;
  std::string db_path;   // empty: default_database_path()
  std::string web_dir;   // the built web front end (web/dist)
  std::string model_dir;  // empty: no model (the model routes answer 503 and say why)
  std::string no_model_reason = "the server was started with --no-model.";  // said then
  int max_tokens = 256;   // tokens per model request (at most the model's n_ctx)
  int model_queue = 8;    // model requests waiting beyond the running one; more get 503
  int model_timeout_ms = 30000;
  std::size_t cache_bytes = 64u << 20;
  int threads = 256;    // HTTP workers: a keep-alive connection holds one while open, so
                        // there are more workers than a class has browser connections
};

class Server {
 public:
  // Opens the store and builds the routes; does not bind yet.
  static Result<std::unique_ptr<Server>> create(const ServerOptions& options);
  ~Server();

  // Binds the socket. Errors: unavailable when the port is taken, with advice.
  Status bind();
  // Serves until stop(); call after bind().
  void listen();
  void stop();
  int port() const;
  bool web_app_found() const;
  std::string database_path() const;  // empty when the store could not be opened
  const std::string& store_error() const;  // why, when it could not
  std::string model_name() const;          // empty when no model is loaded
  const std::string& model_error() const;  // why, when a model was asked for and failed

 private:
  Server();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace headlab::server
