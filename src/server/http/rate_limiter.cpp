// server/http/rate_limiter.cpp — a deque of recent times per client; old clients are dropped.
#include "server/http/rate_limiter.h"

#include <algorithm>

namespace headlab::server {

bool RateLimiter::allow(const std::string& client, Clock::time_point now) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (events_.size() > 100000) events_.clear();  // bounded memory under a flood of addresses
  auto& times = events_[client];
  while (!times.empty() && now - times.front() >= window_) times.pop_front();
  if (static_cast<int>(times.size()) >= max_) return false;
  times.push_back(now);
  return true;
}

int RateLimiter::retry_after_s(const std::string& client, Clock::time_point now) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = events_.find(client);
  if (it == events_.end() || it->second.empty()) return 1;
  auto wait = window_ - (now - it->second.front());
  auto s = std::chrono::ceil<std::chrono::seconds>(wait).count();
  return static_cast<int>(std::max<decltype(s)>(1, s));
}

}  // namespace headlab::server
