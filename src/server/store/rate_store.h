// server/store/rate_store.h — rate limits counted in the database, so that several servers on
// one PostgreSQL database share them: ten logins a minute means ten in all, not ten per
// server. One row per counted event (its key and time in ms), kept for the window; a key's
// counting runs under a transaction-scoped advisory lock on PostgreSQL, so two servers never
// both take the last place. server.cpp plugs it into the class limits' RateLimiters
// (RateLimiter::share) when the database is PostgreSQL; on SQLite one server counts alone.
//
//   auto rates = RateStore::open("postgresql://headlab@db/headlab");
//   auto v = (*rates)->allow("class-join 192.0.2.7", 120, 60'000);  // counted if allowed
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "util/result.h"

namespace headlab::server {

namespace db {
class Database;
}

class RateStore {
 public:
  // Opens the database and runs the migrations (rate_events is migration 6).
  static Result<std::unique_ptr<RateStore>> open(const std::string& target);
  ~RateStore();

  struct Verdict {
    bool allowed = true;
    std::int64_t retry_after_ms = 0;  // when not allowed: until the oldest counted event leaves
  };
  // Allowed (and counted) when `key` has fewer than max_events in the last window_ms.
  // Errors: the database's (the caller then counts alone).
  Result<Verdict> allow(const std::string& key, int max_events, std::int64_t window_ms);

 private:
  explicit RateStore(std::unique_ptr<db::Database> db);
  std::unique_ptr<db::Database> db_;
  std::uint64_t calls_ = 0;
};

}  // namespace headlab::server
