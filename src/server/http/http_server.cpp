// server/http/http_server.cpp — the only file that includes the HTTP library (libmicrohttpd).
// It turns a connection's request into HttpRequest, screens it (sizes, origin, content type),
// dispatches through the route table, serves the built web app from one folder, and puts
// every error into the JSON envelope.
//
// Threads: libmicrohttpd's event loop (epoll, `threads` of them) reads and writes every
// connection; an idle or trickling connection holds no thread. Quick routes are answered on
// the loop. A route whose lane is not the loop (the server's: the model, the password hash,
// the store's writes) is suspended and answered by its lane's HttpWorkQueue, in turns by
// client, then resumed: a slow hash or a write queued for the disk never holds the loop, and
// no more run at once than the lane has threads. A deadline thread closes connections whose
// request has not fully arrived within request_deadline_s of the connection's start or its
// previous answer.
#include <microhttpd.h>

#include <arpa/inet.h>
#include <malloc.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "server/http/http_server.h"

#include "server/http/errors.h"
#include "server/http/http_gzip.h"
#include "server/http/http_rules.h"
#include "server/http/http_work_queue.h"
#include "server/http/static_files.h"

namespace headlab::server {
namespace {

using Clock = std::chrono::steady_clock;

const std::pair<const char*, const char*> kDefaultHeaders[] = {
    {"X-Content-Type-Options", "nosniff"},
    {"Referrer-Policy", "no-referrer"},
    {"X-Frame-Options", "DENY"},
    {"Content-Security-Policy",
     "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; "
     "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"},
};

// One TCP connection (libmicrohttpd's socket context).
struct Connection {
  int fd = -1;
  Clock::time_point phase_start;  // accepted, or its previous answer finished
  bool busy = false;              // a request fully arrived and not yet answered
  bool cut = false;               // the deadline thread shut it down
};

// One request on a connection, from its first header to its answer.
struct Exchange {
  HttpRequest request;
  std::string host, origin, accept_encoding, range, forwarded_for;
  std::string repeated_query;           // the first query parameter given more than once
  std::optional<HttpResponse> refused;  // screened out: answered without reading the body
  bool dispatched = false;              // the route ran (or is running on the work queue)
  bool sent = false;                    // an answer is queued
  bool counted = false;                 // counted in Impl::in_flight
  // For a suspended request: its answer, set by a worker or by stop(), under `mutex`.
  std::mutex mutex;
  std::optional<HttpResponse> answer;
  bool resumed = false;
  MHD_Connection* connection = nullptr;
};

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string client_address(MHD_Connection* c) {
  const MHD_ConnectionInfo* info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  if (!info || !info->client_addr) return "";
  char buf[INET6_ADDRSTRLEN] = {0};
  const sockaddr* sa = info->client_addr;
  if (sa->sa_family == AF_INET)
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(sa)->sin_addr, buf, sizeof buf);
  else if (sa->sa_family == AF_INET6)
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr, buf, sizeof buf);
  return buf;
}

Connection* connection_of_info(MHD_Connection* c) {
  const MHD_ConnectionInfo* info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  return info ? static_cast<Connection*>(info->socket_context) : nullptr;
}

}  // namespace

// A lane's admission count: requests waiting or running, in all and by client.
struct LaneAdmission {
  std::mutex mutex;
  int pending = 0;
  std::map<std::string, int> by_client;
  std::map<std::string, int> by_route;
};

struct HttpServer::Impl {
  HttpServerOptions options;
  std::vector<Route> routes;
  std::unique_ptr<StaticFiles> web;
  std::vector<HttpLane> lanes;
  LaneOf lane_of;
  std::vector<std::unique_ptr<HttpWorkQueue>> work;          // one per lane
  std::vector<std::unique_ptr<LaneAdmission>> admission;     // one per lane
  MHD_Daemon* daemon = nullptr;
  sockaddr_storage address{};
  bool loopback = false;
  int port = 0;
  bool web_found = false;

  // Connections, for the deadline thread.
  std::mutex connections_mutex;
  std::set<Connection*> connections;
  std::thread deadline_thread;

  // Requests in flight (arrived, not yet answered), and the suspended ones among them.
  std::mutex flight_mutex;
  std::condition_variable flight_changed;
  int in_flight = 0;
  std::set<std::shared_ptr<Exchange>> suspended;
  // Set by stop() (under flight_mutex) before it answers the suspended requests: from then on
  // no request is suspended (a keep-alive connection's next request is answered 503 at once),
  // so none is left suspended when the daemon stops (libmicrohttpd aborts on that).
  bool closing = false;
  std::atomic<bool> accepting{true};  // false from stop(): new connections are closed at once

  std::mutex stop_mutex;
  std::condition_variable stopped_changed;
  bool stopping = false, stopped = false;

  // Answers queued and not yet read by their clients (their bodies are held until sent), by
  // id: what the unread-bytes budgets count and cut. A shared body (HttpResponse::shared_body:
  // one copy sent on many connections, as forty learners behind one address asking the same
  // run get) counts what it holds: its bytes once per client and once in the total, however
  // many connections wait to read it.
  struct Unread {
    std::string client;  // client_block of the address
    std::size_t bytes = 0;
    const void* shared = nullptr;  // the shared body's address; null: the connection's own copy
    Clock::time_point since;
    Connection* connection = nullptr;
    int fd = -1;
    bool cut = false;  // its connection was shut down; its bytes no longer count
  };
  mutable std::mutex unread_mutex;
  std::map<std::uint64_t, Unread> unread;
  std::map<std::string, std::size_t> unread_by_client;
  std::size_t unread_total = 0;
  // the uncut holders of each shared body, in all and per client
  std::map<const void*, int> shared_holders;
  std::map<std::pair<std::string, const void*>, int> shared_holders_by_client;
  std::uint64_t next_unread_id = 1;
  std::atomic<std::size_t> answered_since_trim{0};  // bytes of answers queued since the last trim
  Clock::time_point last_trim{};                    // the deadline thread's
  // Counts an answer queued on `c` for `client` (`shared`: the shared body's address, or null);
  // cuts the longest-waiting answers past a budget.
  std::uint64_t hold(MHD_Connection* c, const std::string& client, std::size_t bytes, const void* shared);
  void release(std::uint64_t id);  // its body was freed: sent, or its connection closed
  void cut_locked(Unread& u);
  void count_locked(const Unread& u);    // adds its bytes (a shared body's for its first holder)
  void uncount_locked(const Unread& u);  // takes them back (a shared body's with its last holder)

  HttpResponse dispatch(const HttpRequest& r, const Exchange& ex) const;
  std::optional<HttpResponse> screen(const Exchange& ex, int header_count, std::size_t header_bytes,
                                     int content_lengths, std::optional<unsigned long long> content_length,
                                     const std::string& transfer_encoding) const;
  // Queues the answer; `client` (the request's address, past a trusted proxy) is what its
  // unread bytes count against.
  MHD_Result send(MHD_Connection* c, const HttpResponse& r, const std::string& client);
  void watch_deadlines();
  // Suspends the exchange's connection and has `queue` answer it; `done` runs on the worker
  // after the answer is made (not when stop() drops the job).
  MHD_Result answer_off_loop(MHD_Connection* c, const std::shared_ptr<Exchange>& ex, HttpWorkQueue& queue,
                             std::function<void()> done = {});
  // Takes a place in lane `lane` for `client` on `route`; false when it is full.
  bool admit(int lane, const std::string& client, const std::string& route);
  void leave(int lane, const std::string& client, const std::string& route);
};

namespace {

HttpResponse refusal(int status, std::string_view code, const std::string& message) {
  HttpResponse r = error_response(status, code, message);
  r.headers.push_back({"Connection", "close"});
  return r;
}

}  // namespace

// Checks made once the headers have arrived, before the body is read.
std::optional<HttpResponse> HttpServer::Impl::screen(const Exchange& ex, int header_count, std::size_t header_bytes,
                                                 int content_lengths,
                                                 std::optional<unsigned long long> content_length,
                                                 const std::string& transfer_encoding) const {
  const HttpServerOptions& o = options;
  if (header_count > o.max_header_count)
    return refusal(431, "too_long", "The request has " + std::to_string(header_count) + " header fields; at most " +
                                        std::to_string(o.max_header_count) + " are read.");
  if (header_bytes > o.max_header_bytes)
    return refusal(431, "too_long", "The request's headers are larger than " +
                                        std::to_string(o.max_header_bytes / 1024) + " KB. Send fewer.");
  if (loopback && !is_loopback_host(ex.host))
    return refusal(403, "forbidden", "This server answers only to 127.0.0.1 and localhost, not to '" +
                                         ex.host.substr(0, 100) + "'.");
  if (!loopback && !host_allowed(ex.host, o.server_names))
    return refusal(403, "forbidden", "This server answers only to its names (--server-name) and its addresses, not to '" +
                                         ex.host.substr(0, 100) + "'.");
  if (content_lengths > 1)
    return refusal(400, "invalid_argument", "The request has more than one Content-Length header.");
  // A body is framed by Content-Length or by chunked alone (RFC 9112 6.1-6.3). Another coding
  // left libmicrohttpd waiting for a body it could not frame (the client got nothing after its
  // timeout), and both headers at once is how a request is smuggled past a proxy that reads
  // the other one.
  if (!transfer_encoding.empty()) {
    if (lower(transfer_encoding) != "chunked")
      return refusal(501, "not_implemented", "Transfer-Encoding '" + transfer_encoding.substr(0, 100) +
                                                 "' is not supported: send the body with Content-Length, or chunked alone.");
    if (content_lengths > 0)
      return refusal(400, "invalid_argument",
                     "The request has both Content-Length and Transfer-Encoding: chunked. Send one of them.");
  }
  // ?layer=0&layer=5 could mean either: which one a route read was the map's choice, not the client's
  if (!ex.repeated_query.empty() && ex.request.path.rfind("/api/", 0) == 0)
    return refusal(400, "invalid_argument", "The query parameter '" + ex.repeated_query.substr(0, 100) +
                                                "' is given more than once. Give it once.");
  if (content_length && *content_length > o.max_body_bytes)
    return refusal(413, "too_long",
                   "The request body is larger than " + std::to_string(o.max_body_bytes / 1024) + " KB. Send less.");
  const std::string& method = ex.request.method;
  if (method != "GET" && method != "HEAD" && method != "OPTIONS") {
    if (!origin_allowed(ex.origin, ex.host, o.allow_origins))
      return refusal(403, "forbidden", "Requests from " + ex.origin.substr(0, 100) +
                                           " are not accepted; only this server's own pages may write to it.");
    if (method == "POST" && !is_json_content_type(ex.request.content_type))
      return refusal(415, "unsupported_media_type", "A POST body must be JSON, sent with Content-Type: application/json.");
  }
  return std::nullopt;
}

HttpResponse HttpServer::Impl::dispatch(const HttpRequest& r, const Exchange& ex) const {
  const bool api = r.path.rfind("/api/", 0) == 0;
  const std::string method = r.method == "HEAD" ? "GET" : r.method;
  std::string allow;
  for (const Route& route : routes) {
    if (route.path != r.path) continue;
    if (route.method == method) {
      if (!route.reads_query && !r.query.empty())
        return error_response(400, "invalid_argument", "Unknown parameter '" + r.query.begin()->first.substr(0, 40) + "': " +
                                                           route.method + " " + route.path + " takes no query parameters.");
      try {
        HttpResponse out = route.handler(r);
        if (out.shared_body) {  // made once (cached): its gzip, if any, was made once too
          if (out.shared_body->size() >= options.gzip_min_bytes) out.headers.push_back({"Vary", "Accept-Encoding"});
          if (out.shared_gzip && out.shared_body->size() >= options.gzip_min_bytes &&
              accepts_encoding(ex.accept_encoding, "gzip")) {
            out.shared_body = std::move(out.shared_gzip);
            out.headers.push_back({"Content-Encoding", "gzip"});
          }
          out.shared_gzip.reset();
          return out;
        }
        // Compress here, on the thread of the request that made the answer.
        if (out.body.size() >= options.gzip_min_bytes) {
          out.headers.push_back({"Vary", "Accept-Encoding"});
          if (accepts_encoding(ex.accept_encoding, "gzip")) {
            if (auto z = gzip_fast(out.body)) {
              out.body = std::move(*z);
              out.headers.push_back({"Content-Encoding", "gzip"});
            }
          }
        }
        return out;
      } catch (const std::exception& e) {
        // A bug, not the caller's fault: answer in the envelope and keep serving.
        return error_response(500, "internal", std::string("Internal error: ") + e.what());
      }
    }
    allow += (allow.empty() ? "" : ", ") + route.method + (route.method == "GET" ? ", HEAD" : "");  // HEAD is answered as GET
  }
  if (!api && method == "OPTIONS") allow = "GET, HEAD";
  if (!allow.empty()) {
    HttpResponse e = error_response(405, "method_not_allowed",
                                    r.method + " is not allowed on " + r.path + "; use " + allow + ".");
    e.headers.push_back({"Allow", allow});
    return e;
  }
  if (api)  // the path cut to 200 bytes: a 10 KB path need not come back whole
    return error_response(404, "not_found", "No API route " + (r.path.size() > 200 ? r.path.substr(0, 200) + "..." : r.path) +
                                                ". See docs/api.md for the routes.");
  if (method != "GET") {
    HttpResponse none;
    none.status = 404;
    none.content_type = "text/plain; charset=utf-8";
    none.body = "Not found: " + r.path + "\n";
    return none;
  }
  HttpResponse file = web->serve(r.path, ex.accept_encoding);
  if (file.status == 200 && !ex.range.empty()) {
    bool encoded = false;
    for (const auto& h : file.headers) encoded |= h.first == "Content-Encoding";
    ByteRange range = encoded ? ByteRange{} : parse_single_range(ex.range, file.body.size());
    if (range.kind == ByteRange::unsatisfiable) {
      HttpResponse e = error_response(416, "invalid_argument", "The range is outside the file.");
      e.headers.push_back({"Content-Range", "bytes */" + std::to_string(file.body.size())});
      return e;
    }
    if (range.kind == ByteRange::range) {
      file.headers.push_back({"Content-Range", "bytes " + std::to_string(range.first) + "-" +
                                                   std::to_string(range.last) + "/" + std::to_string(file.body.size())});
      file.body = file.body.substr(range.first, range.last - range.first + 1);
      file.status = 206;
    }
  }
  if (file.status == 200 || file.status == 206) file.headers.push_back({"Accept-Ranges", "bytes"});
  return file;
}

namespace {

// A body handed to libmicrohttpd: owned, or a share of a cached one; freed (and its bytes
// released from the unread count) when the connection is done with it.
struct SentBody {
  HttpServer::Impl* server = nullptr;
  std::uint64_t unread_id = 0;
  std::string owned;
  std::shared_ptr<const std::string> shared;
  const std::string& bytes() const { return shared ? *shared : owned; }
};

}  // namespace

MHD_Result HttpServer::Impl::send(MHD_Connection* c, const HttpResponse& r, const std::string& client) {
  auto* body = new SentBody;
  body->server = this;
  if (r.shared_body) body->shared = r.shared_body;
  else body->owned = r.body;
  const std::string& bytes = body->bytes();
  MHD_Response* res = MHD_create_response_from_buffer_with_free_callback_cls(
      bytes.size(), const_cast<char*>(bytes.data()),
      [](void* cls) {
        auto* b = static_cast<SentBody*>(cls);
        if (b->unread_id) b->server->release(b->unread_id);
        delete b;
      },
      body);
  if (!res) {
    delete body;
    return MHD_NO;
  }
  for (const auto& [k, v] : kDefaultHeaders) MHD_add_response_header(res, k, v);
  bool has_cache_control = false;
  for (const auto& [k, v] : r.headers) {
    has_cache_control |= k == "Cache-Control";
    MHD_add_response_header(res, k.c_str(), v.c_str());
  }
  if (!has_cache_control) MHD_add_response_header(res, "Cache-Control", "no-store");
  MHD_add_response_header(res, "Content-Type", r.content_type.c_str());
  MHD_Result ok = MHD_queue_response(c, static_cast<unsigned int>(r.status), res);
  // Counted once queued: the connection now holds the body until its client reads it.
  if (ok == MHD_YES && !bytes.empty()) {
    answered_since_trim += bytes.size();
    body->unread_id = hold(c, client_block(client.empty() ? client_address(c) : client), bytes.size(),
                           body->shared ? static_cast<const void*>(body->shared.get()) : nullptr);
  }
  MHD_destroy_response(res);
  return ok;
}

void HttpServer::Impl::count_locked(const Unread& u) {
  if (!u.shared || shared_holders_by_client[{u.client, u.shared}]++ == 0) unread_by_client[u.client] += u.bytes;
  if (!u.shared || shared_holders[u.shared]++ == 0) unread_total += u.bytes;
}

void HttpServer::Impl::uncount_locked(const Unread& u) {
  bool last_of_client = true, last = true;
  if (u.shared) {
    auto c = shared_holders_by_client.find({u.client, u.shared});
    if (c != shared_holders_by_client.end() && --c->second > 0) last_of_client = false;
    else if (c != shared_holders_by_client.end()) shared_holders_by_client.erase(c);
    auto t = shared_holders.find(u.shared);
    if (t != shared_holders.end() && --t->second > 0) last = false;
    else if (t != shared_holders.end()) shared_holders.erase(t);
  }
  if (last_of_client)
    if (auto c = unread_by_client.find(u.client); c != unread_by_client.end() && (c->second -= u.bytes) == 0)
      unread_by_client.erase(c);
  if (last) unread_total -= u.bytes;
}

std::uint64_t HttpServer::Impl::hold(MHD_Connection* c, const std::string& client, std::size_t bytes,
                                     const void* shared) {
  std::lock_guard<std::mutex> lock(unread_mutex);
  const std::uint64_t id = next_unread_id++;
  Unread& u = unread[id];
  u.client = client;
  u.bytes = bytes;
  u.shared = shared;
  u.since = Clock::now();
  u.connection = connection_of_info(c);
  u.fd = u.connection ? u.connection->fd : -1;
  count_locked(u);
  // Past a budget, cut the longest-waiting answers (of this client; past the total, of the
  // client holding most) until it fits. One answer alone may exceed a budget: a client is
  // never cut for the answer it is about to read, nor for another connection's share of the
  // same body (cutting it would free nothing). A shared body is cut with all the client's
  // connections waiting to read it: its bytes leave only with its last holder.
  auto oldest_of = [&](const std::string& who) -> Unread* {
    Unread* found = nullptr;
    for (auto& [other_id, o] : unread)
      if (!o.cut && other_id != id && o.client == who && !(shared && o.shared == shared) &&
          (!found || o.since < found->since))
        found = &o;
    return found;
  };
  auto cut_answer = [&](Unread& victim) {
    const void* body = victim.shared;
    const std::string who = victim.client;
    cut_locked(victim);
    if (body)
      for (auto& [other_id, o] : unread)
        if (!o.cut && o.client == who && o.shared == body) cut_locked(o);
  };
  if (options.max_unread_bytes_per_client > 0)
    while (unread_by_client[client] > options.max_unread_bytes_per_client) {
      Unread* victim = oldest_of(client);
      if (!victim) break;
      cut_answer(*victim);
    }
  if (options.max_unread_bytes > 0)
    while (unread_total > options.max_unread_bytes) {
      auto most = std::max_element(unread_by_client.begin(), unread_by_client.end(),
                                   [](const auto& a, const auto& b) { return a.second < b.second; });
      Unread* victim = most == unread_by_client.end() ? nullptr : oldest_of(most->first);
      if (!victim) break;
      cut_answer(*victim);
    }
  return id;
}

void HttpServer::Impl::cut_locked(Unread& u) {
  u.cut = true;
  uncount_locked(u);
  // shutdown, not close: the event loop sees the end of the stream, closes the connection
  // and frees the body. The connection may have closed meanwhile: only a live one is cut.
  std::lock_guard<std::mutex> lock(connections_mutex);
  if (u.connection && connections.count(u.connection) && u.connection->fd == u.fd && !u.connection->cut) {
    ::shutdown(u.fd, SHUT_RDWR);
    u.connection->cut = true;
  }
}

void HttpServer::Impl::release(std::uint64_t id) {
  std::lock_guard<std::mutex> lock(unread_mutex);
  auto it = unread.find(id);
  if (it == unread.end()) return;
  Unread& u = it->second;
  if (!u.cut) uncount_locked(u);
  unread.erase(it);
}

MHD_Result HttpServer::Impl::answer_off_loop(MHD_Connection* c, const std::shared_ptr<Exchange>& shared, HttpWorkQueue& queue,
                                         std::function<void()> done) {
  shared->connection = c;
  {
    std::lock_guard<std::mutex> lock(flight_mutex);
    if (closing) {
      if (done) done();
      shared->sent = true;
      HttpResponse e = error_response(Error{ErrorCode::unavailable, "The server is shutting down."});
      e.headers.push_back({"Connection", "close"});
      return send(c, e, shared->request.remote_addr);
    }
    suspended.insert(shared);
    MHD_suspend_connection(c);
  }
  queue.push(client_block(shared->request.remote_addr), [this, shared, done = std::move(done)] {
    {
      std::lock_guard<std::mutex> lock(shared->mutex);
      if (shared->resumed) return;  // stop() answered it already
    }
    HttpResponse answer = dispatch(shared->request, *shared);
    if (done) done();
    {
      std::lock_guard<std::mutex> lock(shared->mutex);
      if (shared->resumed) return;
      shared->answer = std::move(answer);
      shared->resumed = true;
      MHD_resume_connection(shared->connection);
    }
    std::lock_guard<std::mutex> lock(flight_mutex);
    suspended.erase(shared);
  });
  return MHD_YES;
}

bool HttpServer::Impl::admit(int lane, const std::string& client, const std::string& route) {
  const HttpLane& l = lanes[std::size_t(lane)];
  LaneAdmission& a = *admission[std::size_t(lane)];
  std::lock_guard<std::mutex> lock(a.mutex);
  auto mine = a.by_client.find(client);
  auto theirs = a.by_route.find(route);
  const int by_client = mine == a.by_client.end() ? 0 : mine->second;
  const int by_route = theirs == a.by_route.end() ? 0 : theirs->second;
  if ((l.max_pending > 0 && a.pending >= l.max_pending) ||
      (l.max_pending_per_client > 0 && by_client >= l.max_pending_per_client) ||
      (l.max_pending_per_route > 0 && by_route >= l.max_pending_per_route))
    return false;
  ++a.pending;
  ++a.by_client[client];
  ++a.by_route[route];
  return true;
}

void HttpServer::Impl::leave(int lane, const std::string& client, const std::string& route) {
  LaneAdmission& a = *admission[std::size_t(lane)];
  std::lock_guard<std::mutex> lock(a.mutex);
  --a.pending;
  if (auto it = a.by_client.find(client); it != a.by_client.end() && --it->second <= 0) a.by_client.erase(it);
  if (auto it = a.by_route.find(route); it != a.by_route.end() && --it->second <= 0) a.by_route.erase(it);
}

void HttpServer::Impl::watch_deadlines() {
  const auto deadline = std::chrono::seconds(options.request_deadline_s);
  std::unique_lock<std::mutex> stop_lock(stop_mutex);
  while (!stopped) {
    stopped_changed.wait_for(stop_lock, std::chrono::milliseconds(250));
    // After a burst of large answers, give the heap's free pages back to the system: the
    // threads that made them (a lane's workers, each with its own malloc arena) keep freed
    // memory otherwise, and RSS would stay at the burst's peak.
    if (answered_since_trim.load() > (std::size_t(16) << 20) && Clock::now() - last_trim > std::chrono::seconds(1)) {
      answered_since_trim = 0;
      last_trim = Clock::now();
      malloc_trim(0);
    }
    auto now = Clock::now();
    std::lock_guard<std::mutex> lock(connections_mutex);
    for (Connection* c : connections) {
      // shutdown, not close: the event loop sees the end of the stream and closes the
      // connection itself (the descriptor stays valid until its CLOSED notice)
      if (!c->busy && !c->cut && now - c->phase_start > deadline) {
        ::shutdown(c->fd, SHUT_RDWR);
        c->cut = true;
      }
    }
  }
}

namespace {

struct HeaderTally {
  Exchange* ex = nullptr;
  int count = 0;
  std::size_t bytes = 0;
  int content_lengths = 0;
  std::optional<unsigned long long> content_length;
  std::string transfer_encoding;  // every Transfer-Encoding header's value, joined by ", "
};

MHD_Result on_header(void* cls, MHD_ValueKind, const char* key, size_t key_size, const char* value,
                     size_t value_size) {
  auto& t = *static_cast<HeaderTally*>(cls);
  ++t.count;
  t.bytes += key_size + value_size + 4;  // ": " and CRLF
  std::string k = lower(std::string(key, key_size));
  std::string v = value ? std::string(value, value_size) : std::string();
  if (k == "content-type") t.ex->request.content_type = v;
  else if (k == "host") t.ex->host = v;
  else if (k == "origin") t.ex->origin = v;
  else if (k == "accept-encoding") t.ex->accept_encoding = v;
  else if (k == "range") t.ex->range = v;
  else if (k == "x-forwarded-for") t.ex->forwarded_for = v;  // the last one, if repeated, ends the list
  else if (k == "cookie" || k == "if-none-match" || k == "x-forwarded-proto" || k == "x-headlab-learner")
    t.ex->request.headers[k] = v;
  else if (k == "transfer-encoding")
    t.transfer_encoding += (t.transfer_encoding.empty() ? "" : ", ") + v;
  else if (k == "content-length") {
    ++t.content_lengths;
    try {
      t.content_length = std::stoull(v);
    } catch (const std::exception&) {
      t.content_length = ~0ull;  // unreadable: treated as too large
    }
  }
  return MHD_YES;
}

MHD_Result on_query_argument(void* cls, MHD_ValueKind, const char* key, const char* value) {
  Exchange& ex = *static_cast<Exchange*>(cls);
  auto [at, fresh] = ex.request.query.try_emplace(key ? key : "", value ? value : "");
  if (!fresh && ex.repeated_query.empty()) ex.repeated_query = at->first;  // refused in screen()
  return MHD_YES;
}

Connection* connection_of(MHD_Connection* c) { return connection_of_info(c); }

MHD_Result on_request(void* cls, MHD_Connection* c, const char* url, const char* method, const char*,
                      const char* upload_data, size_t* upload_size, void** request_context) {
  HttpServer::Impl& m = *static_cast<HttpServer::Impl*>(cls);
  auto* holder = static_cast<std::shared_ptr<Exchange>*>(*request_context);
  if (!holder) {  // the headers have arrived
    holder = new std::shared_ptr<Exchange>(std::make_shared<Exchange>());
    *request_context = holder;
    Exchange& ex = **holder;
    ex.request.method = method;
    ex.request.path = url;
    HeaderTally tally;
    tally.ex = &ex;
    MHD_get_connection_values_n(c, MHD_HEADER_KIND, on_header, &tally);
    ex.request.remote_addr = forwarded_client(client_address(c), ex.forwarded_for, m.options.trusted_proxies);
    MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, on_query_argument, &ex);
    std::size_t line_bytes = std::strlen(url) + std::strlen(method) + 12;
    ex.refused = m.screen(ex, tally.count, tally.bytes + line_bytes, tally.content_lengths, tally.content_length,
                          tally.transfer_encoding);
    if (ex.refused) {
      ex.sent = true;
      return m.send(c, *ex.refused, ex.request.remote_addr);  // the body is not read
    }
    return MHD_YES;
  }
  Exchange& ex = **holder;
  if (ex.sent) {
    *upload_size = 0;
    return MHD_YES;
  }
  if (*upload_size > 0) {  // a piece of the body
    if (!ex.refused) {
      if (ex.request.body.size() + *upload_size > m.options.max_body_bytes)
        ex.refused = refusal(413, "too_long", "The request body is larger than " +
                                                  std::to_string(m.options.max_body_bytes / 1024) + " KB. Send less.");
      else
        ex.request.body.append(upload_data, *upload_size);
    }
    *upload_size = 0;
    return MHD_YES;
  }
  if (ex.refused) {
    ex.sent = true;
    return m.send(c, *ex.refused, ex.request.remote_addr);
  }
  if (ex.dispatched) {  // resumed: the worker (or stop()) left the answer
    std::lock_guard<std::mutex> lock(ex.mutex);
    if (!ex.answer) return MHD_YES;
    ex.sent = true;
    return m.send(c, *ex.answer, ex.request.remote_addr);
  }
  // The whole request has arrived.
  ex.dispatched = true;
  if (Connection* conn = connection_of(c)) {
    std::lock_guard<std::mutex> lock(m.connections_mutex);
    conn->busy = true;
  }
  {
    std::lock_guard<std::mutex> lock(m.flight_mutex);
    ++m.in_flight;
    ex.counted = true;
  }
  const int lane = m.lane_of ? m.lane_of(ex.request) : -1;
  if (lane < 0 || lane >= int(m.lanes.size())) {
    ex.sent = true;
    return m.send(c, m.dispatch(ex.request, ex), ex.request.remote_addr);
  }
  // A lane request waits for its turn without holding an event-loop thread.
  const std::string client = client_block(ex.request.remote_addr);
  const std::string route = ex.request.path;
  if (!m.admit(lane, client, route)) {
    ex.sent = true;
    return m.send(c, error_response(Error{ErrorCode::unavailable, m.lanes[std::size_t(lane)].busy_message}),
                  ex.request.remote_addr);
  }
  return m.answer_off_loop(c, *holder, *m.work[std::size_t(lane)], [&m, lane, client, route] { m.leave(lane, client, route); });
}

void on_completed(void* cls, MHD_Connection* c, void** request_context, MHD_RequestTerminationCode) {
  HttpServer::Impl& m = *static_cast<HttpServer::Impl*>(cls);
  auto* holder = static_cast<std::shared_ptr<Exchange>*>(*request_context);
  if (!holder) return;
  if ((*holder)->counted) {
    std::lock_guard<std::mutex> lock(m.flight_mutex);
    --m.in_flight;
    m.suspended.erase(*holder);
    m.flight_changed.notify_all();
  }
  if (Connection* conn = connection_of(c)) {
    std::lock_guard<std::mutex> lock(m.connections_mutex);
    conn->busy = false;
    conn->phase_start = Clock::now();  // the next request's deadline starts now
  }
  delete holder;
  *request_context = nullptr;
}

MHD_Result on_accept(void* cls, const sockaddr*, socklen_t) {
  return static_cast<HttpServer::Impl*>(cls)->accepting ? MHD_YES : MHD_NO;
}

void on_connection(void* cls, MHD_Connection* c, void** socket_context, MHD_ConnectionNotificationCode code) {
  HttpServer::Impl& m = *static_cast<HttpServer::Impl*>(cls);
  std::lock_guard<std::mutex> lock(m.connections_mutex);
  if (code == MHD_CONNECTION_NOTIFY_STARTED) {
    auto* conn = new Connection;
    const MHD_ConnectionInfo* info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    conn->fd = info ? info->connect_fd : -1;
    conn->phase_start = Clock::now();
    m.connections.insert(conn);
    *socket_context = conn;
  } else if (auto* conn = static_cast<Connection*>(*socket_context)) {
    m.connections.erase(conn);
    delete conn;
    *socket_context = nullptr;
  }
}

}  // namespace

HttpServer::HttpServer(HttpServerOptions options, std::vector<Route> routes, std::vector<HttpLane> lanes, LaneOf lane_of)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.options = std::move(options);
  m.routes = std::move(routes);
  m.lanes = std::move(lanes);
  m.lane_of = std::move(lane_of);
  m.web = std::make_unique<StaticFiles>(m.options.web_dir);
  m.web_found = m.web->found();
  for (const HttpLane& lane : m.lanes) {
    m.work.push_back(std::make_unique<HttpWorkQueue>(std::max(1, lane.threads)));
    m.admission.push_back(std::make_unique<LaneAdmission>());
  }
}

HttpServer::~HttpServer() {
  stop();
  if (impl_->deadline_thread.joinable()) impl_->deadline_thread.join();
  // A job still running (a hash, a model request whose answer stop() gave already) uses the
  // Impl's mutexes when it ends: wait for it before the members after the queues go.
  impl_->work.clear();
}

Status HttpServer::bind() {
  Impl& m = *impl_;
  const HttpServerOptions& o = m.options;
  const std::string where = o.host + ":" + std::to_string(o.port);
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  std::string port_text = std::to_string(o.port);
  if (getaddrinfo(o.host.c_str(), port_text.c_str(), &hints, &found) != 0 || !found)
    return make_error(ErrorCode::unavailable, "Cannot listen on " + o.host + ": not an address of this machine.");
  std::memcpy(&m.address, found->ai_addr, found->ai_addrlen);
  freeaddrinfo(found);
  const bool ipv6 = m.address.ss_family == AF_INET6;
  if (ipv6) {
    const auto& a6 = reinterpret_cast<const sockaddr_in6&>(m.address).sin6_addr;
    m.loopback = IN6_IS_ADDR_LOOPBACK(&a6);
  } else {
    const auto& a4 = reinterpret_cast<const sockaddr_in&>(m.address).sin_addr;
    m.loopback = (ntohl(a4.s_addr) >> 24) == 127;
  }

  unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ITC;
  if (ipv6) flags |= MHD_USE_IPv6;
  // The per-connection pool holds the request line, the headers and the read buffer.
  const std::size_t memory = std::max<std::size_t>(32 * 1024, o.max_header_bytes + 16 * 1024);
  errno = 0;
  m.daemon = MHD_start_daemon(
      flags, static_cast<uint16_t>(o.port), &on_accept, &m, &on_request, &m,                        //
      MHD_OPTION_SOCK_ADDR, reinterpret_cast<sockaddr*>(&m.address),                              //
      MHD_OPTION_THREAD_POOL_SIZE, static_cast<unsigned int>(std::max(1, o.threads)),            //
      MHD_OPTION_CONNECTION_LIMIT, static_cast<unsigned int>(o.max_connections),                 //
      MHD_OPTION_PER_IP_CONNECTION_LIMIT, static_cast<unsigned int>(o.max_connections_per_ip),   //
      MHD_OPTION_CONNECTION_TIMEOUT, static_cast<unsigned int>(o.idle_timeout_s),                //
      MHD_OPTION_CONNECTION_MEMORY_LIMIT, memory,                                                //
      MHD_OPTION_LISTEN_BACKLOG_SIZE, static_cast<unsigned int>(SOMAXCONN),                     //
      MHD_OPTION_NOTIFY_COMPLETED, &on_completed, &m,                                            //
      MHD_OPTION_NOTIFY_CONNECTION, &on_connection, &m,                                          //
      MHD_OPTION_END);
  if (!m.daemon) {
    const int why = errno;  // bind()'s, which libmicrohttpd leaves
    if (why == EADDRNOTAVAIL)
      return make_error(ErrorCode::unavailable, "Cannot listen on " + where + ": " + o.host +
                                                    " is not an address of this machine. Use one it has (`ip addr` "
                                                    "lists them), or --host 0.0.0.0 for all of them.");
    if (why == EACCES)
      return make_error(ErrorCode::unavailable, "Cannot listen on " + where +
                                                    ": ports below 1024 need root. Choose another with --port (8080).");
    return make_error(ErrorCode::unavailable,
                      "Cannot listen on " + where +
                          ". Is another program (or another headlab) using that port? Stop it, or choose "
                          "another with --port.");
  }
  const MHD_DaemonInfo* info = MHD_get_daemon_info(m.daemon, MHD_DAEMON_INFO_BIND_PORT);
  m.port = info ? info->port : o.port;
  m.deadline_thread = std::thread([&m] { m.watch_deadlines(); });
  return {};
}

void HttpServer::listen() {
  std::unique_lock<std::mutex> lock(impl_->stop_mutex);
  impl_->stopped_changed.wait(lock, [this] { return impl_->stopped || !impl_->daemon; });
}

void HttpServer::stop() {
  Impl& m = *impl_;
  {
    std::unique_lock<std::mutex> lock(m.stop_mutex);
    if (!m.daemon) {  // never bound, or stopped already
      m.stopped = true;
      m.stopped_changed.notify_all();
      return;
    }
    if (m.stopping) {  // another thread is stopping it: wait for the end of its drain
      m.stopped_changed.wait(lock, [&m] { return m.stopped; });
      return;
    }
    m.stopping = true;
  }
  // 1. Stop accepting: a new connection is closed at once (the accept policy); open ones go
  // on. Not MHD_quiesce_daemon: with a thread pool on epoll it races the workers that take
  // the listening socket out of their epoll sets themselves, and aborts when they win.
  m.accepting = false;
  // 2. Let the requests in flight finish, for at most the drain.
  {
    std::unique_lock<std::mutex> lock(m.flight_mutex);
    m.flight_changed.wait_for(lock, std::chrono::milliseconds(static_cast<int>(m.options.drain_s * 1000)),
                              [&m] { return m.in_flight == 0; });
  }
  // 3. Lane requests still waiting (the model, the password hash, the store): answer them 503 and give their
  // connections back.
  for (auto& queue : m.work) queue->stop();
  std::set<std::shared_ptr<Exchange>> waiting;
  {
    std::lock_guard<std::mutex> lock(m.flight_mutex);
    m.closing = true;
    waiting.swap(m.suspended);
  }
  for (const auto& ex : waiting) {
    std::lock_guard<std::mutex> lock(ex->mutex);
    if (ex->resumed) continue;
    ex->answer = error_response(Error{ErrorCode::unavailable, "The server is shutting down."});
    ex->resumed = true;
    MHD_resume_connection(ex->connection);
  }
  if (!waiting.empty()) {
    std::unique_lock<std::mutex> lock(m.flight_mutex);
    m.flight_changed.wait_for(lock, std::chrono::milliseconds(500), [&m] { return m.in_flight == 0; });
  }
  // 4. Close every connection (idle, trickling or still sending) and end the threads.
  MHD_stop_daemon(m.daemon);
  {
    std::lock_guard<std::mutex> lock(m.stop_mutex);
    m.daemon = nullptr;
    m.stopped = true;
  }
  m.stopped_changed.notify_all();
  if (m.deadline_thread.joinable() && m.deadline_thread.get_id() != std::this_thread::get_id())
    m.deadline_thread.join();
}

int HttpServer::port() const { return impl_->port; }
std::size_t HttpServer::unread_bytes() const {
  std::lock_guard<std::mutex> lock(impl_->unread_mutex);
  return impl_->unread_total;
}
bool HttpServer::web_app_found() const { return impl_->web_found; }

}  // namespace headlab::server
