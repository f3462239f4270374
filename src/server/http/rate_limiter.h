// server/http/rate_limiter.h — at most `max_events` per client in a sliding `window`. A client
// that is an IPv6 address counts by its /64 (client_block in http_rules.h).
//
//   RateLimiter joins(60, std::chrono::minutes(1));
//   if (!joins.allow(address)) return rate_limited("Too many joins.", joins.retry_after_s(address));
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "util/result.h"

namespace headlab::server {

class RateLimiter {
 public:
  using Clock = std::chrono::steady_clock;
  // When more than kMaxClients clients count at once (a flood of addresses or ids), a new
  // client is refused (refuse_new_when_full, for limits that guard a secret or a class) or let
  // through uncounted (for limits another limit backs, as a learner's behind its address's).
  RateLimiter(int max_events, Clock::duration window, bool refuse_new_when_full = true)
      : max_(max_events), window_(window), refuse_new_when_full_(refuse_new_when_full) {}
  // True (and counted) when the client may act now.
  bool allow(const std::string& client, Clock::time_point now = Clock::now());
  // Whole seconds (at least 1) until the client may act again, after allow() said no: when
  // its oldest counted event leaves the window.
  int retry_after_s(const std::string& client, Clock::time_point now = Clock::now());

  // Counts shared by several servers (one PostgreSQL database): allow() asks `shared` with the
  // key "<scope> <client block>", and the limit holds across the servers. `shared` answers
  // whether the client may act now (counting it when so) and the seconds to wait when not, or
  // nothing when the shared store cannot answer: this process's own count decides then.
  struct SharedVerdict {
    bool allowed = true;
    int retry_after_s = 1;
  };
  using Shared = std::function<std::optional<SharedVerdict>(const std::string& key, int max_events,
                                                           Clock::duration window)>;
  void share(std::string scope, Shared shared);

 private:
  static constexpr std::size_t kMaxClients = 100000;
  int max_;
  Clock::duration window_;
  bool refuse_new_when_full_;
  std::unordered_map<std::string, std::deque<Clock::time_point>> events_;
  std::mutex mutex_;
  std::string scope_;
  Shared shared_;
  std::unordered_map<std::string, int> shared_waits_;  // the shared store's last "wait", by client
};

// The rate_limited error a refusal returns, carrying the wait (the HTTP Retry-After).
inline tl::unexpected<Error> rate_limited(std::string message, int retry_after_s) {
  return tl::unexpected<Error>(Error{ErrorCode::rate_limited, std::move(message), retry_after_s});
}

}  // namespace headlab::server
