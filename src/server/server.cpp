// server/server.cpp — `headlab serve` put together: the store (store/), the model service
// (model_service/), the lessons' models (course/lesson_models.h) and the API's routes (api/)
// wired onto the HTTP layer (http/), with the lane each route is answered on.
#include "server/server.h"

#include <algorithm>
#include <filesystem>
#include <thread>

#include "course/lesson_models.h"
#include "server/api/class_routes.h"
#include "server/api/learner_clients.h"
#include "server/api/routes.h"
#include "server/http/errors.h"
#include "server/http/http_server.h"
#include "server/http/rate_limiter.h"
#include "server/model_service/inference_pool.h"
#include "server/model_service/model_service.h"
#include "server/model_service/response_cache.h"
#include "server/store/class_store.h"
#include "server/store/feedback_store.h"
#include "server/store/progress_store.h"
#include "server/store/rate_store.h"
#include "server/store/target.h"

namespace headlab::server {

struct Server::Impl {
  ServerOptions options;
  std::unique_ptr<ProgressStore> store;
  std::unique_ptr<ModelService> model;
  std::unique_ptr<ResponseCache> cache;
  std::unique_ptr<FeedbackStore> feedback;
  std::unique_ptr<RateLimiter> feedback_limiter;
  std::unique_ptr<RateLimiter> progress_limiter;  // null: no limit
  std::unique_ptr<RateLimiter> learner_limiter;   // null: no limit
  std::unique_ptr<ClassStore> classes;
  std::unique_ptr<LearnerClients> learner_clients;  // null without a class store: by address only
  std::unique_ptr<RateStore> rates;  // PostgreSQL: the limits shared by every server on it
  std::unique_ptr<RateLimiter> class_create_limiter, login_by_address, join_by_class, join_by_address;
  ClassRoutesContext class_context;
  std::unique_ptr<course::LessonModelShelf> lesson_models;
  ServerContext context;
  std::unique_ptr<HttpServer> http;  // last: it goes first, before what its routes use
};

namespace {

// The lanes, in the order lane_of numbers them.
enum Lane { kModelLane = 0, kPasswordLane = 1, kStoreLane = 2, kLessonModelLane = 3, kTeacherViewLane = 4 };

bool is_lesson_check(const std::string& method, const std::string& path) {
  return method == "POST" && path.rfind("/api/lessons/", 0) == 0 && path.size() > 6 &&
         path.compare(path.size() - 6, 6, "/check") == 0;
}

// Where a request is answered: on the event loop (quick, -1), or suspended and answered by a
// lane's workers: the model's, the password hash's, or the store's (a write waits for the
// database: SQLite's one writer and its fsync, a PostgreSQL round trip; the loop meanwhile
// answers reads, the teachers' views among them).
// A route that touches a model never runs on the loop: the served model's routes wait for the
// inference pool's turns on the model lane; the word-order lesson's small models and the
// content-only pattern compute on their own lane, in turns by client.
int lane_of(const HttpRequest& r) {
  auto starts = [&](const char* prefix) { return r.path.rfind(prefix, 0) == 0; };
  if ((starts("/api/model/") && r.method == "POST") || r.path == "/api/model/scan" ||
      r.path == "/api/lessons/trained-heads/check" || r.path == "/api/lessons/causal-mask/induction")
    return kModelLane;
  if (starts("/api/positions/") && r.method == "POST") return kLessonModelLane;
  // The teacher's view and export read a whole class: off the loop, a few at a time.
  if (r.path == "/api/class/view" || r.path == "/api/class/export") return kTeacherViewLane;
  if (r.method != "POST") return -1;
  if (r.path == "/api/classes" || r.path == "/api/class/login") return kPasswordLane;
  if (starts("/api/progress/") || r.path == "/api/feedback" || starts("/api/class/") || is_lesson_check(r.method, r.path))
    return kStoreLane;
  return -1;
}

std::vector<HttpLane> lanes(const ServerOptions& o) {
  int hash_threads = o.password_hash_threads;
  if (hash_threads <= 0) hash_threads = std::max(1u, std::thread::hardware_concurrency() / 2);
  std::vector<HttpLane> l(5);
  // More workers than the model queue holds: a request beyond it is refused (503) at once
  // by the inference pool instead of waiting here unseen.
  l[kModelLane].threads = o.model_queue + 4;
  l[kPasswordLane].threads = hash_threads;
  l[kPasswordLane].max_pending = o.password_hash_queue;
  l[kPasswordLane].max_pending_per_client = o.password_hash_queue_per_client;
  // Creating classes may hold at most five eighths of the places: a flood of creations from
  // many addresses leaves the teachers' logins room (issue 24: 14 of 14 logins got 503).
  l[kPasswordLane].max_pending_per_route = std::max(1, o.password_hash_queue * 5 / 8);
  l[kPasswordLane].busy_message =
      "Many teachers are logging in or creating classes at this moment; try again in a few seconds.";
  l[kStoreLane].threads = std::max(1, o.store_threads);
  // Both cores' worth of small models; a class's clicks wait their turn, a flood gets 503.
  l[kLessonModelLane].threads = 2;
  l[kLessonModelLane].max_pending = 64;
  l[kLessonModelLane].max_pending_per_client = 8;
  l[kLessonModelLane].busy_message = "The lesson's models are busy with many requests; try again in a few seconds.";
  l[kTeacherViewLane].threads = 2;
  l[kTeacherViewLane].max_pending = 32;
  l[kTeacherViewLane].max_pending_per_client = 4;
  l[kTeacherViewLane].busy_message = "Many class views are being made at this moment; try again in a few seconds.";
  return l;
}

HttpServerOptions http_options(const ServerOptions& o) {
  HttpServerOptions h;
  h.host = o.host;
  h.port = o.port;
  h.web_dir = o.web_dir;
  h.threads = o.threads;
  h.max_connections = o.max_connections;
  h.max_connections_per_ip = o.max_connections_per_ip;
  h.idle_timeout_s = o.idle_timeout_s;
  h.request_deadline_s = o.request_deadline_s;
  h.max_header_bytes = o.max_header_bytes;
  h.max_header_count = o.max_header_count;
  h.max_body_bytes = o.max_body_bytes;
  h.allow_origins = o.allow_origins;
  h.drain_s = o.drain_s;
  h.gzip_min_bytes = o.gzip_min_bytes;
  h.trusted_proxies = o.trusted_proxies;
  h.server_names = o.server_names;
  h.max_unread_bytes = o.max_unread_bytes;
  h.max_unread_bytes_per_client = o.max_unread_bytes_per_client;
  return h;
}

// The API's routes, each handler run with the model service's client scope (the inference
// pool's turns and budget are by client: the address, or address + learner for a model
// request carrying X-Headlab-Learner of a learner who joined a class, learner_clients.h)
// and the progress writes under their rate limit.
std::vector<Route> guarded_routes(Server::Impl& m) {
  std::vector<Route> routes = make_routes(m.context);
  LearnerClients* learners = m.learner_clients.get();
  RateLimiter* progress_limiter = m.progress_limiter.get();
  const int per_minute = m.options.progress_writes_per_minute;
  for (Route& route : routes) {
    // Every route that writes a learner's progress: the progress routes and each lesson's
    // answer checks (a check is stored, so it counts as a write).
    const bool progress_write = route.method == "POST" && (route.path.rfind("/api/progress/", 0) == 0 ||
                                                           is_lesson_check(route.method, route.path));
    route.handler = [handler = std::move(route.handler), progress_write, progress_limiter, per_minute,
                     learners](const HttpRequest& r) {
      if (progress_write && progress_limiter && !progress_limiter->allow(r.remote_addr)) {
        HttpResponse e = error_response(429, "rate_limited",
                                        "Too many progress writes and answer checks from this address (at most " +
                                            std::to_string(per_minute) + " a minute); wait a moment.");
        e.headers.push_back({"Retry-After", "10"});
        return e;
      }
      // Only on the model lane: a learner seen first is a database read, never on the event loop.
      auto learner = r.headers.find("x-headlab-learner");
      const bool by_learner = learners && learner != r.headers.end() && lane_of(r) == kModelLane;
      InferencePool::ClientScope as(by_learner ? learners->client(r.remote_addr, learner->second) : r.remote_addr);
      return handler(r);
    };
  }
  return routes;
}

// On PostgreSQL (several servers on one database) every limit on a client counts in the
// database, so it holds across the servers: class creations, logins, joins and feedback (a
// row per event), the progress writes per address and per learner (thousands a minute: a
// counter per minute, one upsert each) and the login's growing wait per (class, address).
// When the database cannot be reached each server counts alone.
void share_limits_across_servers(Server::Impl& m) {
  if (!m.store) return;
  auto target = db::parse_target(m.store->path());
  if (!target || target->engine != db::Engine::postgresql) return;
  auto rates = RateStore::open(m.store->path());
  if (!rates) return;
  m.rates = std::move(*rates);
  RateStore* store = m.rates.get();
  auto shared = [store](const std::string& key, int max_events, RateLimiter::Clock::duration window)
      -> std::optional<RateLimiter::SharedVerdict> {
    auto v = store->allow(key, max_events, std::chrono::duration_cast<std::chrono::milliseconds>(window).count());
    if (!v) return std::nullopt;
    return RateLimiter::SharedVerdict{v->allowed, static_cast<int>((v->retry_after_ms + 999) / 1000)};
  };
  m.class_create_limiter->share("class-create", shared);
  m.login_by_address->share("class-login", shared);
  m.join_by_class->share("class-join-class", shared);
  m.join_by_address->share("class-join-address", shared);
  m.class_context.join_by_class_and_address->share("class-join-pair", shared);
  m.feedback_limiter->share("feedback", shared);
  auto counted = [store](const std::string& key, int max_events, RateLimiter::Clock::duration window)
      -> std::optional<RateLimiter::SharedVerdict> {
    auto v = store->count(key, max_events, std::chrono::duration_cast<std::chrono::milliseconds>(window).count());
    if (!v) return std::nullopt;
    return RateLimiter::SharedVerdict{v->allowed, static_cast<int>((v->retry_after_ms + 999) / 1000)};
  };
  if (m.progress_limiter) m.progress_limiter->share("progress-write", counted);
  if (m.learner_limiter) m.learner_limiter->share("learner-write", counted);
  LoginBackoff::Shared waits;
  waits.begin = [store](const std::string& key, const std::function<int(LoginBackoff::State&, std::int64_t)>& step)
      -> std::optional<int> {
    auto wait = store->update("login-wait " + key, [&step](RateStore::KeyState& k, std::int64_t now_ms) {
      LoginBackoff::State s{k.failures, k.last_at, k.until_at};
      const int w = step(s, now_ms);
      k = {s.failures, s.last_ms, s.until_ms};
      return w;
    });
    if (!wait) return std::nullopt;
    return *wait;
  };
  waits.succeeded = [store](const std::string& key) { return store->forget("login-wait " + key).has_value(); };
  m.class_context.login_backoff->share(std::move(waits));
}

}  // namespace

Result<std::unique_ptr<Server>> Server::create(const ServerOptions& options) {
  std::unique_ptr<Server> server(new Server());
  Impl& m = *server->impl_;
  m.options = options;
  // A store that cannot be opened does not stop the lessons: progress routes then answer
  // 503 with the reason, and `headlab serve` warns at start-up.
  auto store = ProgressStore::open(options.db_path.empty() ? default_database_path() : options.db_path,
                                   options.db_max_bytes);
  if (store) {
    m.store = std::move(*store);
    m.context.store = m.store.get();
    auto feedback = FeedbackStore::open(m.store->path(), options.db_max_bytes);
    if (feedback) {
      m.feedback = std::move(*feedback);
      m.context.feedback = m.feedback.get();
    }
  } else {
    m.context.store_error = store.error().message;
  }
  m.feedback_limiter = std::make_unique<RateLimiter>(5, std::chrono::minutes(10));
  if (options.progress_writes_per_minute > 0)
    m.progress_limiter = std::make_unique<RateLimiter>(options.progress_writes_per_minute, std::chrono::minutes(1));
  m.context.feedback_limiter = m.feedback_limiter.get();
  if (options.learner_writes_per_minute > 0) {
    // Ids are anyone's to invent: past the limiter's size a new one passes uncounted, the
    // address's limit still holding.
    m.learner_limiter = std::make_unique<RateLimiter>(options.learner_writes_per_minute, std::chrono::minutes(1),
                                                      /*refuse_new_when_full=*/false);
    m.context.learner_writes = m.learner_limiter.get();
  }
  if (m.store) {
    ClassStoreOptions co;
    co.max_bytes = options.db_max_bytes;
    auto classes = ClassStore::open(m.store->path(), co);
    if (classes) m.classes = std::move(*classes);
    else m.class_context.store_error = classes.error().message;
    if (m.classes) {
      ClassStore* store = m.classes.get();
      LearnerClientsOptions lo;
      lo.window_s = options.client_model_window_s;
      m.learner_clients = std::make_unique<LearnerClients>(
          [store](const std::string& learner) -> Result<std::optional<std::string>> {
            auto found = store->membership(learner);
            if (!found) return tl::unexpected(found.error());
            if (!*found) return std::optional<std::string>();
            return std::optional<std::string>((*found)->first.code);
          },
          lo);
      m.class_context.learner_clients = m.learner_clients.get();
    }
  } else {
    m.class_context.store_error = m.context.store_error;
  }
  m.class_create_limiter = std::make_unique<RateLimiter>(20, std::chrono::hours(1));
  m.login_by_address = std::make_unique<RateLimiter>(30, std::chrono::minutes(10));
  // A class joining at once (60 learners in the minute, behind one address or many) passes;
  // a script filling a class with names, or one address trying code after code, waits. One
  // address may spend at most 60 of a class's 90 (class_routes.h), so it cannot keep the
  // others out.
  m.join_by_class = std::make_unique<RateLimiter>(90, std::chrono::minutes(1));
  m.join_by_address = std::make_unique<RateLimiter>(120, std::chrono::minutes(1));
  m.class_context.store = m.classes.get();
  m.class_context.create_limiter = m.class_create_limiter.get();
  m.class_context.login_by_address = m.login_by_address.get();
  m.class_context.join_by_class = m.join_by_class.get();
  m.class_context.join_by_address = m.join_by_address.get();
  m.class_context.trust_forwarded_proto = options.trust_forwarded_proto;
  share_limits_across_servers(m);
  m.context.classes = &m.class_context;
  m.cache = std::make_unique<ResponseCache>(options.cache_bytes);
  m.context.cache = m.cache.get();
  if (options.model_dir.empty()) {
    m.context.model_error = options.no_model_reason;
  } else {
    ModelServiceOptions mo;
    mo.dir = options.model_dir;
    mo.max_patch_multiply_adds = options.max_patch_multiply_adds;  // POST /api/model/patch
    mo.load = options.model_load;
    mo.compute_auto = options.compute_auto;
    mo.bf16_speedup = options.bf16_speedup;
    mo.max_tokens = options.max_tokens;
    mo.max_cache_bytes = options.max_activation_cache_bytes;
    mo.pool = {options.model_queue, options.model_timeout_ms};
    mo.pool.client_model_seconds = options.client_model_seconds;
    mo.pool.model_window_s = options.client_model_window_s;
    auto model = ModelService::load(mo);
    if (!model) return tl::unexpected(model.error());  // asked for a model: refuse to start without it
    m.model = std::move(*model);
    m.context.model = m.model.get();
  }
  {
    std::string dir = options.models_dir;
    if (dir.empty() && !options.model_dir.empty()) {
      std::filesystem::path p = std::filesystem::path(options.model_dir).lexically_normal();
      if (p.filename().empty()) p = p.parent_path();  // "models/headlab-tiny/"
      dir = p.parent_path().string();
    }
    m.lesson_models = std::make_unique<course::LessonModelShelf>(dir.empty() ? "models" : dir);
    m.context.lesson_models = m.lesson_models.get();
  }
  m.http = std::make_unique<HttpServer>(http_options(options), guarded_routes(m), lanes(options), lane_of);
  return server;
}


Server::Server() : impl_(std::make_unique<Impl>()) {}
Server::~Server() {
  if (impl_->http) impl_->http->stop();
  impl_->http.reset();  // its lanes' running jobs end before the stores and the model go
}

Status Server::bind() { return impl_->http->bind(); }
void Server::listen() { impl_->http->listen(); }
void Server::stop() { impl_->http->stop(); }
int Server::port() const { return impl_->http->port(); }
bool Server::web_app_found() const { return impl_->http->web_app_found(); }
std::string Server::database_path() const { return impl_->store ? impl_->store->path() : std::string(); }
const std::string& Server::store_error() const { return impl_->context.store_error; }
std::string Server::model_name() const { return impl_->model ? impl_->model->info().name : std::string(); }
const std::string& Server::model_error() const { return impl_->context.model_error; }
std::vector<std::string> Server::model_notes() const {
  return impl_->model ? impl_->model->parameters().notes : std::vector<std::string>();
}
std::vector<std::string> Server::store_notes() const {
  if (!impl_->classes) return {};
  const NicknameRekey& r = impl_->classes->nickname_rekey();
  if (r.rekeyed == 0 && r.bans == 0) return {};
  std::string note = std::to_string(r.rekeyed) + " nickname(s) and " + std::to_string(r.bans) +
                     " ban(s) stored before nicknames were NFKC-normalised were re-keyed";
  if (r.marked > 0)
    note += "; " + std::to_string(r.marked) +
            " had a name already taken in their class: both learners kept everything, the later one's name is "
            "marked so no one new can take it";
  return {note + "."};
}

}  // namespace headlab::server
