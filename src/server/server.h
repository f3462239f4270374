// server/server.h — `headlab serve`: the JSON API and the built web app on one port.
//
//   auto server = Server::create({.host = "127.0.0.1", .port = 8080, .db_path = "x.db", .web_dir = "web/dist"});
//   if (!server) die(server.error().message);
//   (*server)->listen();       // blocks until stop() (from another thread or a signal)
//
// Port 0 picks a free port (tests); port() tells which after bind().
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/parameters.h"
#include "util/result.h"

namespace headlab::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;
  std::string db_path;   // empty: default_database_path()
  std::string web_dir;   // the built web front end (web/dist)
  std::string model_dir;  // empty: no model (the model routes answer 503 and say why)
  model::LoadOptions model_load;  // --dtype: the type its matrices are kept in
  // serve's --compute auto: model_load.compute is bf16 because the CPU's AVX512_BF16 dot products
  // outran its float32 ones (bf16_speedup, model::cpu_bf16_speedup; 0 without AVX512_BF16); a model
  // that keeps no bf16 matrix then runs in float32 instead of being refused (ModelServiceOptions)
  bool compute_auto = false;
  double bf16_speedup = 0.0;
  std::string no_model_reason = "the server was started with --no-model.";  // said then
  std::string models_dir;  // the word-order lesson's models, by name; empty: model_dir's parent, else models
  int max_tokens = 256;   // tokens per model request (at most the model's n_ctx)
  double max_patch_multiply_adds = 1e11;  // POST /api/model/patch: a sweep's work (research::PatchCost)
  // Model requests waiting beyond the running batch (a class of forty clicking at once fits);
  // the queue is bounded too by the memory its runs will need and their answers still hold
  // (InferencePoolOptions) and by model_timeout_ms. More get 503.
  int model_queue = 64;
  int model_timeout_ms = 30000;
  // Model time one client may take in client_model_window_s seconds while other clients use
  // the model too (a request of theirs waits or runs, or ran within the window;
  // --client-model-seconds, --client-model-window, InferencePoolOptions): past it, its new
  // model requests get 429 with Retry-After. Alone with the model it is never limited. 0: no
  // budget. A client is an address, or address + learner for a learner who joined a class
  // (api/learner_clients.h).
  double client_model_seconds = 30;
  int client_model_window_s = 60;
  std::size_t cache_bytes = 64u << 20;
  // POST /api/model/cache: the largest activation file it answers (under a client's unread
  // answers' cap, max_unread_bytes_per_client); larger: 413 with the size and how to narrow.
  std::size_t max_activation_cache_bytes = 32u << 20;
  // The HTTP layer (libmicrohttpd, event-driven: an open connection holds no thread).
  int threads = 4;                    // event-loop threads; model requests wait off them
  int max_connections = 4096;         // open connections in all; more are refused at accept
  int max_connections_per_ip = 512;   // a school behind one NAT address shares this
  int idle_timeout_s = 8;             // a keep-alive connection silent this long is closed
  int request_deadline_s = 10;        // headers and body must arrive within this, counted from
                                      // the connection's start or its previous answer; trickled
                                      // bytes do not extend it
  std::size_t max_header_bytes = 16 * 1024;  // request line and headers; more: 431
  int max_header_count = 64;                  // header fields; more: 431
  std::size_t max_body_bytes = 64 * 1024;     // more: 413
  std::vector<std::string> allow_origins;     // other origins ("http://host:port") allowed to POST
  // Host names a server listening beyond loopback answers to (--server-name): a page whose DNS
  // name was rebound to this server's address sends its own name and is refused. Empty: any
  // (`headlab serve` warns). Requests by IP address are always answered.
  std::vector<std::string> server_names;
  // Answers queued and not yet read by their clients, in MB, in all and per client address
  // (an IPv6 client by its /64); past either, the slowest reader's connection is cut.
  std::size_t max_unread_bytes = std::size_t(512) << 20;
  std::size_t max_unread_bytes_per_client = std::size_t(64) << 20;
  double drain_s = 5;                 // on stop: how long requests in flight may take to finish
  std::size_t gzip_min_bytes = 1024;  // API answers at least this long are gzipped (level 1)
  std::int64_t db_max_bytes = 512ll << 20;  // the database's cap; progress writes past it: 507
  int progress_writes_per_minute = 3000;    // per client address (a class behind one NAT shares
                                            // it); more: 429. 0: no limit
  int learner_writes_per_minute = 600;      // the same per learner id (ten a second: lesson 1 reports
                                            // every view change, a held arrow key included); 0: no limit
  bool trust_forwarded_proto = false;  // a TLS proxy in front sets X-Forwarded-Proto: the
                                       // teacher's cookie is then marked Secure
  // Load balancers in front (their addresses, "127.0.0.1"): a request from one of them is
  // counted, for every per-address limit and turn, as from the last X-Forwarded-For address.
  // The connection limits stay the proxy's (raise --max-connections-per-ip behind one).
  std::vector<std::string> trusted_proxies;
  // Argon2id (creating a class, a teacher's login: a tenth of a second to half a second of
  // one core and 64 MiB each) runs off the event loop on this many threads (0: half the
  // cores, at least one), so a flood of logins cannot take every core from the learners.
  int password_hash_threads = 0;
  // Hashes waiting or running at once, in all and per client address; past either the
  // request is answered 503 with Retry-After at once.
  int password_hash_queue = 16;
  int password_hash_queue_per_client = 2;
  // Writes to the store (progress, answers, feedback, joins, ...) are answered off the event
  // loop on this many threads, so reads go on while writes wait for the database.
  int store_threads = 8;
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
  // Graceful: stops accepting, lets requests in flight finish for at most drain_s, answers
  // the model requests still waiting 503, closes idle and half-sent connections. Blocks
  // until done; listen() then returns.
  void stop();
  int port() const;
  bool web_app_found() const;
  std::string database_path() const;  // empty when the store could not be opened
  const std::string& store_error() const;  // why, when it could not
  std::string model_name() const;          // empty when no model is loaded
  const std::string& model_error() const;  // why, when a model was asked for and failed
  std::vector<std::string> model_notes() const;  // the loader's notes (its weights cache), or none
  std::vector<std::string> store_notes() const;  // what opening the stores changed (nickname keys), or none

  struct Impl;  // server.cpp: the stores, the model service and the HTTP layer

 private:
  Server();
  std::unique_ptr<Impl> impl_;
};

}  // namespace headlab::server
