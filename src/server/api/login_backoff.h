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
// before the first answer) and forgiven when it succeeds. Thread-safe; bounded memory. Several
// servers on one PostgreSQL database share the keys' state through share() (server.cpp puts
// it in the database's rate_waits, store/rate_store.h): two servers wait as one.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
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
  // A key's state, times in ms on one clock (this process's steady clock, or the wall clock
  // when shared).
  struct State {
    std::int64_t failures = 0, last_ms = 0, until_ms = 0;
  };
  LoginBackoff() : LoginBackoff(Policy{}) {}
  explicit LoginBackoff(Policy policy) : policy_(policy) {}

  // 0: the key may try now, and the try is counted as a failure. Otherwise the whole
  // seconds (at least 1) until it may try, and nothing is counted.
  int begin(const std::string& key, Clock::time_point now = Clock::now());
  // The try was right: the key's failures are forgiven.
  void succeeded(const std::string& key);

  // The one rule begin() applies to a key's state at now_ms: the wait in whole seconds, or 0
  // (and the try counted).
  static int step(const Policy& policy, State& state, std::int64_t now_ms);

  // Keys kept elsewhere (the database several servers share): `begin` applies `step` to the
  // key's stored state (with the store's own clock) and answers what it returned, `succeeded`
  // forgets the key; either answers nothing (false) when the store cannot, and this process's
  // own state decides then.
  struct Shared {
    std::function<std::optional<int>(const std::string& key,
                                     const std::function<int(State&, std::int64_t now_ms)>& step)>
        begin;
    std::function<bool(const std::string& key)> succeeded;
  };
  void share(Shared shared);

 private:
  Policy policy_;
  std::unordered_map<std::string, State> entries_;
  std::mutex mutex_;
  Shared shared_;
};

}  // namespace headlab::server
