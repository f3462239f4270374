// server/http.cpp — the only file that includes the HTTP library (cpp-httplib 0.11).
// It turns httplib requests into HttpRequest, dispatches through the route table, serves
// the built web app from one folder, and puts every error into the JSON envelope.
#include <httplib.h>

#include <sys/socket.h>

#include <cstdio>
#include <filesystem>
#include <regex>

#include "server/errors.h"
#include "server/progress_store.h"
#include "server/routes.h"
#include "server/static_files.h"
#include "server/server.h"

namespace headlab::server {
namespace {

constexpr std::size_t kMaxBodyBytes = 64 * 1024;

HttpRequest to_request(const httplib::Request& req) {
  HttpRequest r;
  r.method = req.method;
  r.path = req.path;
  r.body = req.body;
  r.content_type = req.get_header_value("Content-Type");
  r.remote_addr = req.remote_addr;
  for (const auto& [k, v] : req.params) r.query[k] = v;
  return r;
}

void write_response(const HttpResponse& from, httplib::Response& to) {
  to.status = from.status;
  for (const auto& [k, v] : from.headers) to.set_header(k, v);
  bool has_cache_control = false;
  for (const auto& h : from.headers) has_cache_control |= h.first == "Cache-Control";
  if (!has_cache_control) to.set_header("Cache-Control", "no-store");
  to.set_content(from.body, from.content_type.c_str());
}

std::string regex_escape(const std::string& s) {
  static const std::regex special(R"([.^$|()\[\]{}*+?\\])");
  return std::regex_replace(s, special, R"(\$&)");
}

}  // namespace

struct Server::Impl {
  ServerOptions options;
  std::unique_ptr<ProgressStore> store;
  std::unique_ptr<StaticFiles> web;
  std::unique_ptr<ModelService> model;
  std::unique_ptr<ResponseCache> cache;
  std::unique_ptr<FeedbackStore> feedback;
  std::unique_ptr<RateLimiter> feedback_limiter;
  ServerContext context;
  std::vector<Route> routes;
  httplib::Server http;
  int port = 0;
  bool web_found = false;
  int listen_socket = -1;
};

Server::Server() : impl_(std::make_unique<Impl>()) {}
Server::~Server() = default;

Result<std::unique_ptr<Server>> Server::create(const ServerOptions& options) {
  std::unique_ptr<Server> server(new Server());
  Impl& m = *server->impl_;
  m.options = options;
  // A store that cannot be opened does not stop the lessons: progress routes then answer
  // 503 with the reason, and `headlab serve` warns at start-up.
  auto store = ProgressStore::open(options.db_path.empty() ? default_database_path() : options.db_path);
  if (store) {
    m.store = std::move(*store);
    m.context.store = m.store.get();
    auto feedback = FeedbackStore::open(m.store->path());
    if (feedback) {
      m.feedback = std::move(*feedback);
      m.context.feedback = m.feedback.get();
    }
  } else {
    m.context.store_error = store.error().message;
  }
  m.feedback_limiter = std::make_unique<RateLimiter>(5, std::chrono::minutes(10));
  m.context.feedback_limiter = m.feedback_limiter.get();
  m.cache = std::make_unique<ResponseCache>(options.cache_bytes);
  m.context.cache = m.cache.get();
  if (options.model_dir.empty()) {
    m.context.model_error = options.no_model_reason;
  } else {
    ModelServiceOptions mo;
    mo.dir = options.model_dir;
    mo.max_tokens = options.max_tokens;
    mo.pool = {options.model_queue, options.model_timeout_ms};
    auto model = ModelService::load(mo);
    if (!model) return tl::unexpected(model.error());  // asked for a model: refuse to start without it
    m.model = std::move(*model);
    m.context.model = m.model.get();
  }
  m.routes = make_routes(m.context);

  httplib::Server& http = m.http;
  const int threads = options.threads;
  http.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  http.set_payload_max_length(kMaxBodyBytes);
  http.set_read_timeout(10, 0);
  // Keep-alive: each open connection holds a worker, so there are more workers (threads)
  // than a class has connections, and connections live long instead of reconnecting.
  http.set_keep_alive_timeout(5);
  http.set_keep_alive_max_count(10000);
  http.set_tcp_nodelay(true);  // no 40 ms wait for delayed ACKs on small JSON answers
  // Remember the listening socket: bind() raises its backlog past the library's 5.
  http.set_socket_options([&m](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, reinterpret_cast<const void*>(&yes), sizeof yes);
    m.listen_socket = sock;
  });
  http.set_write_timeout(10, 0);
  http.set_default_headers({
      {"X-Content-Type-Options", "nosniff"},
      {"Referrer-Policy", "no-referrer"},
      {"X-Frame-Options", "DENY"},
      {"Content-Security-Policy",
       "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; "
       "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"},
  });

  for (const Route& route : m.routes) {
    auto handler = [&route](const httplib::Request& req, httplib::Response& res) {
      try {
        write_response(route.handler(to_request(req)), res);
      } catch (const std::exception& e) {
        // A bug, not the caller's fault: answer in the envelope and keep serving.
        write_response(error_response(500, "internal", std::string("Internal error: ") + e.what()), res);
      }
    };
    std::string pattern = regex_escape(route.path);
    if (route.method == "GET") http.Get(pattern, handler);
    else if (route.method == "POST") http.Post(pattern, handler);
  }
  // Anything else under /api/: 405 when the path exists with another method, else 404.
  auto unknown = [&m](const httplib::Request& req, httplib::Response& res) {
    std::string allow;
    for (const Route& r : m.routes)
      if (r.path == req.path) allow += (allow.empty() ? "" : ", ") + r.method;
    if (!allow.empty()) {
      HttpResponse e = error_response(405, "method_not_allowed",
                                      req.method + " is not allowed on " + req.path + "; use " + allow + ".");
      e.headers.push_back({"Allow", allow});
      write_response(e, res);
    } else {
      write_response(error_response(404, "not_found", "No API route " + req.path + ". See docs/api.md for the routes."),
                     res);
    }
  };
  http.Get(R"(/api/.*)", unknown);
  http.Post(R"(/api/.*)", unknown);
  http.Put(R"(/api/.*)", unknown);
  http.Delete(R"(/api/.*)", unknown);
  http.Patch(R"(/api/.*)", unknown);

  // Errors that never reached a route (body too large, bad request line, missing file).
  http.set_error_handler(httplib::Server::HandlerWithResponse([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    bool api = req.path.rfind("/api/", 0) == 0;
    std::string message = res.status == 413 ? "The request body is larger than 64 KB. Send less."
                          : res.status == 404 ? "Nothing at " + req.path + "."
                                              : "The request could not be read (HTTP " + std::to_string(res.status) +
                                                  "). A POST needs a JSON body and a Content-Length header.";
    std::string code = res.status == 413 ? "too_long" : res.status == 404 ? "not_found" : "invalid_argument";
    if (api || res.status != 404) {
      HttpResponse e = error_response(res.status, code, message);
      res.set_content(e.body, "application/json");
    } else {
      res.set_content("Not found: " + req.path + "\n", "text/plain; charset=utf-8");
    }
    return httplib::Server::HandlerResponse::Handled;
  }));

  // The built web app, for every other GET.
  m.web = std::make_unique<StaticFiles>(options.web_dir);
  m.web_found = m.web->found();
  http.Get(R"(/.*)", [&m](const httplib::Request& req, httplib::Response& res) {
    write_response(m.web->serve(req.path), res);
  });
  return server;
}

Status Server::bind() {
  Impl& m = *impl_;
  if (m.options.port == 0) {
    m.port = m.http.bind_to_any_port(m.options.host);
    if (m.port <= 0)
      return make_error(ErrorCode::unavailable, "Cannot listen on " + m.options.host + ": no free port.");
    return {};
  }
  if (!m.http.bind_to_port(m.options.host, m.options.port))
    return make_error(ErrorCode::unavailable,
                      "Cannot listen on " + m.options.host + ":" + std::to_string(m.options.port) +
                          ". Is another program (or another headlab) using that port? Stop it, or choose "
                          "another with --port.");
  m.port = m.options.port;
  return {};
}

void Server::listen() {
  // A class reconnecting at once overflows a backlog of 5 and waits seconds on SYN retries;
  // listen() again on the bound socket raises it (Linux updates the backlog in place).
  if (impl_->listen_socket >= 0) ::listen(impl_->listen_socket, SOMAXCONN);
  impl_->http.listen_after_bind();
}
void Server::stop() { impl_->http.stop(); }
int Server::port() const { return impl_->port; }
bool Server::web_app_found() const { return impl_->web_found; }
std::string Server::database_path() const { return impl_->store ? impl_->store->path() : std::string(); }
const std::string& Server::store_error() const { return impl_->context.store_error; }
std::string Server::model_name() const { return impl_->model ? impl_->model->info().name : std::string(); }
const std::string& Server::model_error() const { return impl_->context.model_error; }

}  // namespace headlab::server
