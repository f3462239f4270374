// server/api/login_backoff.h — failed logins slow down one key (a class and an address block),
// never everyone: after `free_failures` failures the key waits 2 s, and each further failure
// doubles the wait (2^k s after the (free_failures + k - 1)-th), up to `max_wait`. A success clears the key;
// a key idle for `forget_after` starts again.
//
//   LoginBackoff backoff;
//   if (int wait = backoff.begin(key)) return rate_limited("Wait.", wait);  // counted as a failure
//   if (right) backoff.succeeded(key);
//
// Every try is counted as a failure when it begins (so parallel tries cannot slip through
// before the first answer) and forgiven when it succeeds. Thread-safe; bounded memory.
#pragma once

#include <chrono>
#include <mutex>
#include <string>
#include <unordered_map>

namespace headlab::server {

class LoginBackoff {
 public:
  using Clock = std::chrono::steady_clock;
  struct Policy {
    int free_failures = 5;
    Clock::duration max_wait = std::chrono::minutes(15);
    Clock::duration forget_after = std::chrono::hours(1);
  };
  LoginBackoff() : LoginBackoff(Policy{}) {}
  explicit LoginBackoff(Policy policy) : policy_(policy) {}

  // 0: the key may try now, and the try is counted as a failure. Otherwise the whole
  // seconds (at least 1) until it may try, and nothing is counted.
  int begin(const std::string& key, Clock::time_point now = Clock::now());
  // The try was right: the key's failures are forgiven.
  void succeeded(const std::string& key);

 private:
  struct Entry {
    int failures = 0;
    Clock::time_point last{}, until{};
  };
  Policy policy_;
  std::unordered_map<std::string, Entry> entries_;
  std::mutex mutex_;
};

}  // namespace headlab::server
