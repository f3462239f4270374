// server/store/rate_store.h — rate limits counted in the database, so that several servers on
// one PostgreSQL database share them: ten logins a minute means ten in all, not ten per
// server. allow(): one row per counted event (its key and time in ms), kept for the window; a
// key's counting runs under a transaction-scoped advisory lock on PostgreSQL, so two servers
// never both take the last place. count(): a counter per key and fixed window, for the hot
// progress writes. update(): a key's state for the login's growing wait. server.cpp plugs it
// into the RateLimiters (RateLimiter::share) and the LoginBackoff (LoginBackoff::share) when
// the database is PostgreSQL; on SQLite one server counts alone.
//
//   auto rates = RateStore::open("postgresql://headlab@db/headlab");
//   auto v = (*rates)->allow("class-join 192.0.2.7", 120, 60'000);  // counted if allowed
//   auto w = (*rates)->count("progress-write 192.0.2.7", 3000, 60'000);  // the same, one upsert
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "util/result.h"

namespace headlab::server {

namespace db {
class Database;
}

class RateStore {
 public:
  // Opens the database and runs the migrations (rate_events: migration 6; rate_counts, rate_waits: 9).
  static Result<std::unique_ptr<RateStore>> open(const std::string& target);
  ~RateStore();

  struct Verdict {
    bool allowed = true;
    std::int64_t retry_after_ms = 0;  // when not allowed: until the oldest counted event leaves
  };
  // Allowed (and counted) when `key` has fewer than max_events in the last window_ms.
  // Errors: the database's (the caller then counts alone).
  Result<Verdict> allow(const std::string& key, int max_events, std::int64_t window_ms);

  // The same for limits on a hot path (progress writes, answer checks): one counter row per key
  // and fixed window (window_ms-long windows from 1970), raised by one upsert that refuses past
  // max_events: one round trip, no lock beyond the row's. Unlike allow() a client may act up
  // to max_events times at the end of one window and again at the start of the next.
  Result<Verdict> count(const std::string& key, int max_events, std::int64_t window_ms);

  // A key's stored state for a rule that is more than a count (the growing wait after wrong
  // logins, login_backoff.h): `step` reads and changes it, and its answer is returned; the
  // new state is stored. Times are ms since 1970. Keys no one asked about for a day go.
  struct KeyState {
    std::int64_t failures = 0, last_at = 0, until_at = 0;  // 0, 0, 0: a key never seen
  };
  Result<int> update(const std::string& key, const std::function<int(KeyState&, std::int64_t now_ms)>& step);
  // Forgets a key's state (a right login).
  Status forget(const std::string& key);

 private:
  explicit RateStore(std::unique_ptr<db::Database> db);
  std::unique_ptr<db::Database> db_;
  std::atomic<std::uint64_t> calls_{0};  // for the sweeps; callers on many threads
};

}  // namespace headlab::server
