// server/rate_limiter.cpp — a deque of recent times per client; old clients are dropped.
#include "server/rate_limiter.h"

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

}  // namespace headlab::server
