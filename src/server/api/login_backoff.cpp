// server/api/login_backoff.cpp — wait after the n-th failure: 0 while n < free_failures, else
// min(2^(n - free_failures + 1) s, max_wait): 2 s after the 5th, 4 s after the 6th, ...
#include "server/api/login_backoff.h"

#include <algorithm>

namespace headlab::server {

namespace {
std::int64_t ms(LoginBackoff::Clock::duration d) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}
}  // namespace

int LoginBackoff::step(const Policy& policy, State& e, std::int64_t now) {
  if (e.failures > 0 && now - e.last_ms >= ms(policy.forget_after)) e = State{};
  if (now < e.until_ms) return static_cast<int>(std::max<std::int64_t>(1, (e.until_ms - now + 999) / 1000));
  ++e.failures;
  e.last_ms = now;
  const std::int64_t past = e.failures - policy.free_failures + 1;
  if (past > 0) {
    const std::int64_t wait = past >= 30 ? ms(policy.max_wait) : std::min<std::int64_t>((std::int64_t{1} << past) * 1000,
                                                                                        ms(policy.max_wait));
    e.until_ms = now + wait;
  }
  return 0;
}

void LoginBackoff::share(Shared shared) {
  std::lock_guard<std::mutex> lock(mutex_);
  shared_ = std::move(shared);
}

int LoginBackoff::begin(const std::string& key, Clock::time_point at) {
  std::function<std::optional<int>(const std::string&, const std::function<int(State&, std::int64_t)>&)> shared;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    shared = shared_.begin;
  }
  if (shared) {  // outside the lock: a round trip to the database
    const Policy policy = policy_;
    if (auto wait = shared(key, [policy](State& s, std::int64_t now_ms) { return step(policy, s, now_ms); }))
      return *wait;
  }
  const std::int64_t now = ms(at.time_since_epoch());
  std::lock_guard<std::mutex> lock(mutex_);
  if (entries_.size() > 100000)  // a flood of keys: drop the idle ones, then all if need be
    for (auto it = entries_.begin(); it != entries_.end();)
      it = now - it->second.last_ms >= ms(policy_.forget_after) || now >= it->second.until_ms ? entries_.erase(it)
                                                                                               : std::next(it);
  if (entries_.size() > 100000) entries_.clear();
  return step(policy_, entries_[key], now);
}

void LoginBackoff::succeeded(const std::string& key) {
  std::function<bool(const std::string&)> shared;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    shared = shared_.succeeded;
    entries_.erase(key);
  }
  if (shared) shared(key);
}

}  // namespace headlab::server
