// server/store/rate_store.cpp — see rate_store.h.
#include "server/store/rate_store.h"

#include <algorithm>
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
  // A counter lost in a crash lets a client a few more tries: its commits need not wait for
  // the disk (a progress write would otherwise wait for three flushes instead of one).
  auto db = db::Database::open(target, {.what = "rate limit database", .relaxed_commit = true});
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

Result<RateStore::Verdict> RateStore::count(const std::string& key, int max_events, std::int64_t window_ms) {
  const std::int64_t now = now_ms();
  const std::int64_t window_start = now - now % window_ms;
  if ((calls_++ % 4096) == 0)  // now and then, the windows gone by
    if (auto r = db_->exec("DELETE FROM rate_counts WHERE window_start <= $1", {now - kDayMs}); !r)
      return tl::unexpected(r.error());
  // Counted only while under the limit: the conflict's UPDATE has a WHERE, and a row it skips
  // returns nothing. Row locks make two servers' upserts on one key take turns.
  auto rows = db_->query(
      "INSERT INTO rate_counts (key, window_start, count) VALUES ($1, $2, 1) "
      "ON CONFLICT (key, window_start) DO UPDATE SET count = rate_counts.count + 1 WHERE rate_counts.count < $3 "
      "RETURNING count",
      {key, window_start, std::int64_t{max_events}});
  if (!rows) return tl::unexpected(rows.error());
  Verdict v;
  if (rows->empty() || max_events <= 0) {
    v.allowed = false;
    v.retry_after_ms = std::max<std::int64_t>(1, window_start + window_ms - now);
  }
  return v;
}

Result<int> RateStore::update(const std::string& key, const std::function<int(KeyState&, std::int64_t)>& step) {
  const std::int64_t now = now_ms();
  const bool sweep = (calls_++ % 1000) == 0;
  const bool postgres = db_->engine() == db::Engine::postgresql;
  int answer = 0;
  Status s = db_->transaction(db::Access::write, [&](db::Session& tx) -> Status {
    if (postgres)  // one step at a time per key, across servers, until COMMIT
      if (auto r = tx.query("SELECT pg_advisory_xact_lock(hashtext($1))", {key}); !r) return tl::unexpected(r.error());
    if (sweep)
      if (auto r = tx.exec("DELETE FROM rate_waits WHERE last_at <= $1 AND until_at <= $2", {now - kDayMs, now}); !r)
        return tl::unexpected(r.error());
    auto rows = tx.query("SELECT failures, last_at, until_at FROM rate_waits WHERE key = $1", {key});
    if (!rows) return tl::unexpected(rows.error());
    KeyState state;
    if (!rows->empty()) state = {(*rows)[0].integer(0), (*rows)[0].integer(1), (*rows)[0].integer(2)};
    answer = step(state, now);
    auto w = tx.exec(
        "INSERT INTO rate_waits (key, failures, last_at, until_at) VALUES ($1, $2, $3, $4) "
        "ON CONFLICT (key) DO UPDATE SET failures = $2, last_at = $3, until_at = $4",
        {key, state.failures, state.last_at, state.until_at});
    if (!w) return tl::unexpected(w.error());
    return {};
  });
  if (!s) return tl::unexpected(s.error());
  return answer;
}

Status RateStore::forget(const std::string& key) {
  auto r = db_->exec("DELETE FROM rate_waits WHERE key = $1", {key});
  if (!r) return tl::unexpected(r.error());
  return {};
}

}  // namespace headlab::server
