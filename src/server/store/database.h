// server/store/database.h — the one interface every store uses, whichever engine is under it:
// SQLite (a path) or PostgreSQL (a postgresql:// URL). See README.md beside this file.
//
//   auto db = Database::open("class.db", {.what = "progress database"});
//   auto rows = (*db)->query("SELECT challenge FROM progress WHERE learner = $1", {learner});
//   std::vector<std::string> fresh;
//   Status s = (*db)->transaction(Access::write, [&](Session& tx) -> Status {
//     fresh.clear();  // the body may run twice: see transaction()
//     auto n = tx.exec("INSERT INTO progress (learner, lesson, challenge) VALUES ($1, $2, $3) "
//                      "ON CONFLICT DO NOTHING", {learner, lesson, c});
//     if (!n) return tl::unexpected(n.error());
//     if (*n > 0) fresh.push_back(c);
//     return {};
//   });
//
// SQL is written once, with $1, $2 ... placeholders, in the dialect both engines share
// (ON CONFLICT, RETURNING, TEXT and INTEGER columns); where it must differ, a store asks
// engine(). Thread-safe: connections come from a pool, one caller at a time on each.
// Errors keep the engine's words as the message and carry storage_full (disk or cap full:
// HTTP 507), unavailable (busy, server down: 503) or io_error; stores add what they were doing.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "server/store/connection.h"
#include "server/store/target.h"
#include "server/store/value.h"
#include "util/result.h"

namespace headlab::server::db {

// A connection lent for one transaction.
class Session {
 public:
  explicit Session(Connection& conn) : conn_(conn) {}
  Result<Rows> query(std::string_view sql, const Params& params = {});
  // Rows inserted, updated or deleted.
  Result<std::int64_t> exec(std::string_view sql, const Params& params = {});
  // The whole result: rows (of a RETURNING clause, say) and the count changed.
  Result<QueryResult> run(std::string_view sql, const Params& params = {});

 private:
  Connection& conn_;
};

// grow: a write that adds rows (a check, a join, feedback): refused with storage_full once the
// database is at its cap. A write that only changes or deletes (a reset, a removal, deleting a
// class) is `write`, and always allowed, so a full database can be made smaller.
enum class Access { read, write, grow };

class Database {
 public:
  // Opens `target` (a path: SQLite, creating the file; a postgresql:// or postgres:// URL:
  // PostgreSQL) and makes its first connection, so a bad path or an unreachable server is
  // reported here. Migrations are not run: see migrations.h.
  static Result<std::unique_ptr<Database>> open(const std::string& target, const DatabaseOptions& options = {});
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  Engine engine() const { return target_.engine; }
  const std::string& location() const { return target_.location; }  // as given, a password included
  const std::string& name() const { return target_.display; }       // for messages: no password
  const DatabaseOptions& options() const { return options_; }

  // Runs body in one transaction: committed when body returns ok, rolled back otherwise. A
  // write transaction on SQLite takes the write lock at BEGIN (BEGIN IMMEDIATE), so two
  // writers wait for each other instead of failing. When the link to PostgreSQL drops before
  // COMMIT is sent, the server has rolled the transaction back: body runs once more on a
  // fresh connection, so it must start from scratch (clear what it collects). A link that
  // drops during COMMIT is an io_error saying the change may or may not have been saved.
  Status transaction(Access access, const std::function<Status(Session&)>& body);

  // Caps the database at max_bytes (> 0) from now on. SQLite: on every connection, writes past
  // it fail with storage_full. PostgreSQL: a `grow` transaction is refused with storage_full
  // while the tables of the connection's schema (current_schema(): headlab's, with their
  // indexes and TOAST) hold more; their size is read at most every 2 s, so several servers
  // may pass the cap by what they write in that time. Stores call it after migrate(), so the
  // schema always fits and the cap is the learners' data.
  Status cap_size(std::int64_t max_bytes);

  // After a committed DELETE from `tables`, makes the deleted rows' bytes leave what the
  // engine can: called outside any transaction; the delete stands whatever this returns.
  // SQLite: folds the write-ahead log into the file and truncates it (PRAGMA
  // wal_checkpoint(TRUNCATE)), since the log still holds the pages as they were; with
  // secure_delete the freed pages in the file are zeros already, so the bytes are gone.
  // PostgreSQL: VACUUM (SKIP_LOCKED) of the tables: the dead rows and their index entries are
  // removed and their space is free for new rows, without locking out readers or writers.
  // Their old bytes may still sit in the freed space until new rows overwrite it, and in
  // the server's WAL and backups: README.md, "Deleting", says what an operator can run.
  // `tables` are the store's own table names (identifiers, never user input).
  Status forget_deleted(const std::vector<std::string>& tables);

  // One statement on its own (autocommit), for reads and for what cannot run inside a
  // transaction (CREATE DATABASE). query runs once more when the link drops (a read repeats
  // safely); exec does not: a write that must survive a dropped link goes in transaction().
  Result<Rows> query(std::string_view sql, const Params& params = {});
  Result<std::int64_t> exec(std::string_view sql, const Params& params = {});  // rows changed

 private:
  Database(Target target, DatabaseOptions options);
  Result<std::unique_ptr<Connection>> connect();
  Result<std::unique_ptr<Connection>> acquire();
  Result<QueryResult> run_alone(std::string_view sql, const Params& params, bool repeat_if_dropped);
  void release(std::unique_ptr<Connection> conn);

  Target target_;
  DatabaseOptions options_;
  // SQLite: one per file in this process, shared by every Database on it (the progress, class
  // and feedback stores each have one). Write transactions take it before BEGIN IMMEDIATE, so
  // they queue here instead of meeting the file lock and its busy handler, which sleeps (1, 2,
  // 5 ... 100 ms) and retries: under a class's load those sleeps were most of a write's time.
  std::shared_ptr<std::mutex> file_writer_;
  // PostgreSQL under a cap: the tables' size as last read, and when.
  Status check_room();
  std::mutex size_mutex_;
  std::int64_t size_bytes_ = 0;
  std::chrono::steady_clock::time_point size_read_at_{};
  int max_connections_ = 1;
  std::mutex mutex_;
  std::condition_variable returned_;
  std::vector<std::unique_ptr<Connection>> idle_;
  int open_ = 0;  // connections made and not closed: idle_ and those lent out
};

}  // namespace headlab::server::db
