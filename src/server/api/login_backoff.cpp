// server/api/login_backoff.cpp — wait after the n-th failure: 0 while n < free_failures, else
// min(2^(n - free_failures + 1) s, max_wait): 2 s after the 5th, 4 s after the 6th, ...
#include "server/api/login_backoff.h"

#include <algorithm>

namespace headlab::server {

int LoginBackoff::begin(const std::string& key, Clock::time_point now) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (entries_.size() > 100000)  // a flood of keys: drop the idle ones, then all if need be
    for (auto it = entries_.begin(); it != entries_.end();)
      it = now - it->second.last >= policy_.forget_after || now >= it->second.until ? entries_.erase(it) : std::next(it);
  if (entries_.size() > 100000) entries_.clear();
  Entry& e = entries_[key];
  if (e.failures > 0 && now - e.last >= policy_.forget_after) e = Entry{};
  if (now < e.until) {
    auto s = std::chrono::ceil<std::chrono::seconds>(e.until - now).count();
    return static_cast<int>(std::max<decltype(s)>(1, s));
  }
  ++e.failures;
  e.last = now;
  const int past = e.failures - policy_.free_failures + 1;
  if (past > 0) {
    const Clock::duration wait = past >= 30 ? policy_.max_wait
                                            : std::min<Clock::duration>(std::chrono::seconds(std::int64_t{1} << past),
                                                                        policy_.max_wait);
    e.until = now + wait;
  }
  return 0;
}

void LoginBackoff::succeeded(const std::string& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  entries_.erase(key);
}

}  // namespace headlab::server
