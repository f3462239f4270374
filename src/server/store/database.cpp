// server/store/database.cpp — the pool and the transaction loop; the engines do the rest.
#include "server/store/database.h"

#include <filesystem>
#include <map>

#include "server/store/postgres_engine.h"
#include "server/store/sqlite_engine.h"

namespace headlab::server::db {

Result<Rows> Session::query(std::string_view sql, const Params& params) {
  auto r = conn_.run(sql, params);
  if (!r) return tl::unexpected(r.error());
  return std::move(r->rows);
}

Result<std::int64_t> Session::exec(std::string_view sql, const Params& params) {
  auto r = conn_.run(sql, params);
  if (!r) return tl::unexpected(r.error());
  return r->changes;
}

Result<QueryResult> Session::run(std::string_view sql, const Params& params) { return conn_.run(sql, params); }

namespace {

// The writers' mutex of an SQLite file, by its absolute path, shared while any Database on the
// file is open.
std::shared_ptr<std::mutex> sqlite_file_writer(const std::string& path) {
  static std::mutex registry_mutex;
  static std::map<std::string, std::weak_ptr<std::mutex>> registry;
  std::error_code ec;
  std::string key = std::filesystem::weakly_canonical(std::filesystem::absolute(path, ec), ec).string();
  if (key.empty()) key = path;
  std::lock_guard<std::mutex> lock(registry_mutex);
  for (auto it = registry.begin(); it != registry.end();)  // forget files no longer open
    it = it->second.expired() ? registry.erase(it) : std::next(it);
  std::weak_ptr<std::mutex>& slot = registry[key];
  auto writer = slot.lock();
  if (!writer) slot = writer = std::make_shared<std::mutex>();
  return writer;
}

}  // namespace

Database::Database(Target target, DatabaseOptions options) : target_(std::move(target)), options_(std::move(options)) {
  // SQLite has one writer at a time: writers queue on file_writer_ (no busy time-outs), and
  // the other connections read meanwhile (WAL: a reader never waits for a writer's fsync).
  int fallback = target_.engine == Engine::sqlite ? 4 : 8;
  max_connections_ = options_.max_connections > 0 ? options_.max_connections : fallback;
  if (target_.engine == Engine::sqlite) file_writer_ = sqlite_file_writer(target_.location);
}

Database::~Database() = default;

Result<std::unique_ptr<Database>> Database::open(const std::string& target, const DatabaseOptions& options) {
  auto t = parse_target(target);
  if (!t) return tl::unexpected(t.error());
  std::unique_ptr<Database> db(new Database(std::move(*t), options));
  auto first = db->connect();
  if (!first) return tl::unexpected(first.error());
  db->open_ = 1;
  db->idle_.push_back(std::move(*first));
  return db;
}

Result<std::unique_ptr<Connection>> Database::connect() {
  if (target_.engine == Engine::sqlite) return sqlite_connect(target_.location, options_);
  return postgres_connect(target_.location, options_);
}

Result<std::unique_ptr<Connection>> Database::acquire() {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    returned_.wait(lock, [&] { return !idle_.empty() || open_ < max_connections_; });
    if (!idle_.empty()) {
      auto conn = std::move(idle_.back());
      idle_.pop_back();
      return conn;
    }
    ++open_;  // reserve the place, then connect without holding the lock
  }
  auto conn = connect();
  if (!conn) {
    std::lock_guard<std::mutex> lock(mutex_);
    --open_;
    returned_.notify_one();
  }
  return conn;
}

void Database::release(std::unique_ptr<Connection> conn) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (conn) idle_.push_back(std::move(conn));
  else --open_;
  returned_.notify_one();
}

Status Database::check_room() {
  std::int64_t cap = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    cap = options_.max_bytes;
  }
  if (target_.engine != Engine::postgresql || cap <= 0) return {};
  std::lock_guard<std::mutex> lock(size_mutex_);
  const auto now = std::chrono::steady_clock::now();
  if (size_read_at_ == std::chrono::steady_clock::time_point{} || now - size_read_at_ > std::chrono::seconds(2)) {
    auto rows = query(
        "SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0)::bigint FROM pg_class c "
        "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = current_schema() AND c.relkind = 'r'");
    if (!rows) return tl::unexpected(rows.error());
    size_bytes_ = rows->empty() ? 0 : (*rows)[0].integer(0);
    size_read_at_ = now;
  }
  if (size_bytes_ <= cap) return {};
  return make_error(ErrorCode::storage_full, "its tables hold " + std::to_string(size_bytes_ >> 20) +
                                                 " MB, past its cap of " + std::to_string(cap >> 20) +
                                                 " MB (`headlab serve --db-max-mb` raises it)");
}

Status Database::transaction(Access access, const std::function<Status(Session&)>& body) {
  if (access == Access::grow)
    if (auto room = check_room(); !room) return room;
  if (access == Access::grow) access = Access::write;
  const bool sqlite = target_.engine == Engine::sqlite;
  const char* begin = access == Access::write ? (sqlite ? "BEGIN IMMEDIATE" : "BEGIN")
                                              : (sqlite ? "BEGIN" : "BEGIN READ ONLY");
  // SQLite: this process's writers to the file take turns here (see file_writer_); another
  // process (the CLI) still meets the file lock and the busy timeout.
  std::unique_lock<std::mutex> writer;
  if (sqlite && access == Access::write && file_writer_) writer = std::unique_lock<std::mutex>(*file_writer_);
  for (int attempt = 0;; ++attempt) {
    auto conn = acquire();
    if (!conn) return tl::unexpected(conn.error());
    Connection& c = **conn;
    if (c.broken()) {
      if (auto s = c.reconnect(); !s) {
        release(nullptr);  // closes it; the next caller connects anew
        return s;
      }
    }
    bool commit_sent = false;
    Status s = c.run(begin, {}).map([](auto&&) {});
    if (s) {
      Session session(c);
      s = body(session);
    }
    if (s) {
      commit_sent = true;
      s = c.run("COMMIT", {}).map([](auto&&) {});
    }
    if (!s && !c.broken()) (void)c.run("ROLLBACK", {});
    const bool broke = c.broken();
    release(std::move(*conn));
    if (s) return s;
    if (broke && !commit_sent && attempt == 0) continue;  // rolled back by the server: run it again
    if (broke && commit_sent)
      return make_error(ErrorCode::io_error, s.error().message +
                                                 " while committing: the change may or may not have been saved");
    return s;
  }
}

Status Database::cap_size(std::int64_t max_bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  options_.max_bytes = max_bytes;
  if (target_.engine != Engine::sqlite || max_bytes <= 0) return {};
  // New connections get the cap from options_ (sqlite_connect); these are the ones open now.
  // A connection lent out at this moment would miss it: stores call this before any use.
  for (auto& conn : idle_)
    if (auto r = conn->run(sqlite_size_cap_sql(max_bytes), {}); !r)
      return make_error(ErrorCode::io_error, "The " + options_.what + " " + target_.display + ": " + r.error().message + ".");
  return {};
}

Status Database::forget_deleted(const std::vector<std::string>& tables) {
  std::string sql;
  if (target_.engine == Engine::sqlite) {
    sql = "PRAGMA wal_checkpoint(TRUNCATE)";
  } else {
    if (tables.empty()) return {};
    // SKIP_LOCKED: a table another server is vacuuming now is left to it, not waited for.
    sql = "VACUUM (SKIP_LOCKED)";
    for (std::size_t i = 0; i < tables.size(); ++i) sql += (i ? ", " : " ") + tables[i];
  }
  auto r = run_alone(sql, {}, /*repeat_if_dropped=*/true);
  if (!r) return tl::unexpected(r.error());
  return {};
}

Result<QueryResult> Database::run_alone(std::string_view sql, const Params& params, bool repeat_if_dropped) {
  for (int attempt = 0;; ++attempt) {
    auto conn = acquire();
    if (!conn) return tl::unexpected(conn.error());
    Connection& c = **conn;
    if (c.broken()) {
      if (auto s = c.reconnect(); !s) {
        release(nullptr);
        return tl::unexpected(s.error());
      }
    }
    auto r = c.run(sql, params);
    const bool broke = !r && c.broken();
    release(std::move(*conn));
    if (broke && repeat_if_dropped && attempt == 0) continue;
    if (broke && !repeat_if_dropped)
      return make_error(r.error().code, r.error().message + ": the change may or may not have been saved");
    return r;
  }
}

Result<Rows> Database::query(std::string_view sql, const Params& params) {
  auto r = run_alone(sql, params, /*repeat_if_dropped=*/true);
  if (!r) return tl::unexpected(r.error());
  return std::move(r->rows);
}

Result<std::int64_t> Database::exec(std::string_view sql, const Params& params) {
  auto r = run_alone(sql, params, /*repeat_if_dropped=*/false);
  if (!r) return tl::unexpected(r.error());
  return r->changes;
}

}  // namespace headlab::server::db
