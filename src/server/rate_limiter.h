// server/rate_limiter.h — at most `max_events` per client in a sliding `window`.
#pragma once

#include <chrono>
#include <deque>
#include <mutex>
#include <string>
#include <unordered_map>

namespace headlab::server {

class RateLimiter {
 public:
  using Clock = std::chrono::steady_clock;
  RateLimiter(int max_events, Clock::duration window) : max_(max_events), window_(window) {}
  // True (and counted) when the client may act now.
  bool allow(const std::string& client, Clock::time_point now = Clock::now());

 private:
  int max_;
  Clock::duration window_;
  std::unordered_map<std::string, std::deque<Clock::time_point>> events_;
  std::mutex mutex_;
};

}  // namespace headlab::server
