// server/http/rate_limiter.cpp — a deque of recent times per client; old clients are dropped.
#include "server/http/rate_limiter.h"

#include <algorithm>

#include "server/http/http_rules.h"

namespace headlab::server {

void RateLimiter::share(std::string scope, Shared shared) {
  std::lock_guard<std::mutex> lock(mutex_);
  scope_ = std::move(scope);
  shared_ = std::move(shared);
}

bool RateLimiter::allow(const std::string& client, Clock::time_point now) {
  Shared shared;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    shared = shared_;
  }
  if (shared) {  // outside the lock: a round trip to the database
    const std::string key = client_block(client);
    if (auto v = shared(scope_ + " " + key, max_, window_)) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (v->allowed) shared_waits_.erase(key);
      else if (shared_waits_.size() < kMaxClients) shared_waits_[key] = std::max(1, v->retry_after_s);
      return v->allowed;
    }
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (events_.size() > kMaxClients) {
    // Bounded memory under a flood of addresses: forget the clients with nothing in the
    // window; if all still count, refuse new ones (never forget a counted client: that
    // would let a flood of addresses reset everyone's limit).
    std::erase_if(events_, [&](const auto& e) { return e.second.empty() || now - e.second.back() >= window_; });
    if (events_.size() > kMaxClients && !events_.count(client_block(client))) return !refuse_new_when_full_;
  }
  auto& times = events_[client_block(client)];
  while (!times.empty() && now - times.front() >= window_) times.pop_front();
  if (static_cast<int>(times.size()) >= max_) return false;
  times.push_back(now);
  return true;
}

int RateLimiter::retry_after_s(const std::string& client, Clock::time_point now) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto w = shared_waits_.find(client_block(client)); w != shared_waits_.end()) return w->second;
  auto it = events_.find(client_block(client));
  if (it == events_.end() || it->second.empty()) return 1;
  auto wait = window_ - (now - it->second.front());
  auto s = std::chrono::ceil<std::chrono::seconds>(wait).count();
  return static_cast<int>(std::max<decltype(s)>(1, s));
}

}  // namespace headlab::server
