// server/store/rate_store.cpp — see rate_store.h.
#include "server/store/rate_store.h"

#include <atomic>
#include <chrono>

#include "server/store/database.h"
#include "server/store/migrations.h"
#include "server/store/schema.h"

namespace headlab::server {

namespace {
std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}
constexpr std::int64_t kDayMs = 24ll * 3600 * 1000;  // longer than any window: older rows are swept
}  // namespace

RateStore::RateStore(std::unique_ptr<db::Database> db) : db_(std::move(db)) {}
RateStore::~RateStore() = default;

Result<std::unique_ptr<RateStore>> RateStore::open(const std::string& target) {
  auto db = db::Database::open(target, {.what = "rate limit database"});
  if (!db) return tl::unexpected(db.error());
  if (auto s = db::migrate(**db, db::headlab_migrations()); !s) return tl::unexpected(s.error());
  return std::unique_ptr<RateStore>(new RateStore(std::move(*db)));
}

Result<RateStore::Verdict> RateStore::allow(const std::string& key, int max_events, std::int64_t window_ms) {
  const std::int64_t now = now_ms();
  const bool sweep = (calls_++ % 1000) == 0;  // now and then, the keys no one asks about again
  const bool postgres = db_->engine() == db::Engine::postgresql;
  Verdict v;
  Status s = db_->transaction(db::Access::write, [&](db::Session& tx) -> Status {
    v = Verdict{};
    if (postgres)  // one counter at a time per key, across servers, until COMMIT
      if (auto r = tx.query("SELECT pg_advisory_xact_lock(hashtext($1))", {key}); !r) return tl::unexpected(r.error());
    if (auto r = tx.exec("DELETE FROM rate_events WHERE key = $1 AND at <= $2", {key, now - window_ms}); !r)
      return tl::unexpected(r.error());
    if (sweep)
      if (auto r = tx.exec("DELETE FROM rate_events WHERE at <= $1", {now - kDayMs}); !r) return tl::unexpected(r.error());
    auto rows = tx.query("SELECT COUNT(*), COALESCE(MIN(at), 0) FROM rate_events WHERE key = $1", {key});
    if (!rows) return tl::unexpected(rows.error());
    const std::int64_t count = rows->empty() ? 0 : (*rows)[0].integer(0);
    if (count >= max_events) {
      v.allowed = false;
      v.retry_after_ms = std::max<std::int64_t>(1, (*rows)[0].integer(1) + window_ms - now);
      return {};
    }
    if (auto r = tx.exec("INSERT INTO rate_events (key, at) VALUES ($1, $2)", {key, now}); !r)
      return tl::unexpected(r.error());
    return {};
  });
  if (!s) return tl::unexpected(s.error());
  return v;
}

}  // namespace headlab::server
