// server/progress_store.cpp — SQLite: WAL journal, one transaction per write.
#include "server/progress_store.h"

#include "server/sqlite_db.h"

#include <sqlite3.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

namespace headlab::server {
std::string default_database_path() {
  const char* xdg = std::getenv("XDG_DATA_HOME");
  std::filesystem::path base;
  if (xdg && *xdg) base = xdg;
  else if (const char* home = std::getenv("HOME"); home && *home) base = std::filesystem::path(home) / ".local/share";
  else base = ".";
  return (base / "headlab" / "headlab.db").string();
}

Error ProgressStore::sqlite_error(const std::string& doing) const {
  if (sqlite3_errcode(db_) == SQLITE_FULL)
    return Error{ErrorCode::storage_full,
                 "The progress database " + path_ + " is full" +
                     (max_bytes_ > 0 ? " (it may grow to " + std::to_string(max_bytes_ >> 20) + " MB; `headlab serve --db-max-mb` raises that)"
                                     : " (the disk has no room left)") +
                     ", so new progress cannot be saved. Progress already saved is kept and can be read."};
  return Error{ErrorCode::io_error, "Could not " + doing + " in the progress database " + path_ + ": " +
                                        sqlite3_errmsg(db_) + "."};
}

Status ProgressStore::exec(const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "unknown error";
    sqlite3_free(err);
    return make_error(ErrorCode::io_error, "Progress database " + path_ + ": " + msg + ".");
  }
  return {};
}

Result<std::unique_ptr<ProgressStore>> ProgressStore::open(const std::string& path, std::int64_t max_bytes) {
  auto db = sqlite_open_durable(path, "progress database");
  if (!db) return tl::unexpected(db.error());
  std::unique_ptr<ProgressStore> store(new ProgressStore(*db, path));
  for (const char* sql : {
           "CREATE TABLE IF NOT EXISTS progress ("
           "  learner TEXT NOT NULL, lesson TEXT NOT NULL, challenge TEXT NOT NULL,"
           "  completed_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),"
           "  PRIMARY KEY (learner, lesson, challenge));",
       }) {
    if (auto s = store->exec(sql); !s)
      return make_error(ErrorCode::io_error, s.error().message + " Is it a headlab database? Choose another with --db PATH.");
  }
  store->max_bytes_ = max_bytes;
  if (max_bytes > 0) {
    std::string sql = "PRAGMA max_page_count=" + std::to_string(std::max<std::int64_t>(1, max_bytes / 4096)) + ";";
    if (auto s = store->exec(sql.c_str()); !s) return tl::unexpected(s.error());
  }
  return store;
}

ProgressStore::~ProgressStore() { sqlite3_close(db_); }

Result<std::vector<std::string>> ProgressStore::completed(const std::string& learner, const std::string& lesson) {
  std::lock_guard<std::mutex> lock(mutex_);
  SqliteStatement st;
  if (sqlite3_prepare_v2(db_,
                         "SELECT challenge FROM progress WHERE learner = ?1 AND lesson = ?2 "
                         "ORDER BY completed_at, rowid",
                         -1, &st.stmt, nullptr) != SQLITE_OK)
    return tl::unexpected(sqlite_error("read progress"));
  sqlite3_bind_text(st.stmt, 1, learner.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st.stmt, 2, lesson.c_str(), -1, SQLITE_TRANSIENT);
  std::vector<std::string> out;
  int rc;
  while ((rc = sqlite3_step(st.stmt)) == SQLITE_ROW)
    out.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(st.stmt, 0)));
  if (rc != SQLITE_DONE) return tl::unexpected(sqlite_error("read progress"));
  return out;
}

Result<std::vector<std::string>> ProgressStore::record(const std::string& learner, const std::string& lesson,
                                                       const std::vector<std::string>& challenges) {
  std::vector<std::string> fresh;
  if (challenges.empty()) return fresh;
  std::lock_guard<std::mutex> lock(mutex_);
  if (sqlite3_exec(db_, "BEGIN IMMEDIATE;", nullptr, nullptr, nullptr) != SQLITE_OK)
    return tl::unexpected(sqlite_error("start saving progress"));
  SqliteStatement st;
  if (sqlite3_prepare_v2(db_, "INSERT OR IGNORE INTO progress (learner, lesson, challenge) VALUES (?1, ?2, ?3)", -1,
                         &st.stmt, nullptr) != SQLITE_OK) {
    Error e = sqlite_error("save progress");
    sqlite3_exec(db_, "ROLLBACK;", nullptr, nullptr, nullptr);
    return tl::unexpected(e);
  }
  for (const std::string& c : challenges) {
    sqlite3_reset(st.stmt);
    sqlite3_bind_text(st.stmt, 1, learner.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st.stmt, 2, lesson.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st.stmt, 3, c.c_str(), -1, SQLITE_TRANSIENT);
    if (sqlite3_step(st.stmt) != SQLITE_DONE) {
      Error e = sqlite_error("save progress");
      sqlite3_exec(db_, "ROLLBACK;", nullptr, nullptr, nullptr);
      return tl::unexpected(e);
    }
    if (sqlite3_changes(db_) > 0) fresh.push_back(c);
  }
  if (sqlite3_exec(db_, "COMMIT;", nullptr, nullptr, nullptr) != SQLITE_OK) {
    Error e = sqlite_error("save progress");
    sqlite3_exec(db_, "ROLLBACK;", nullptr, nullptr, nullptr);
    return tl::unexpected(e);
  }
  return fresh;
}

Status ProgressStore::reset(const std::string& learner, const std::string& lesson) {
  std::lock_guard<std::mutex> lock(mutex_);
  SqliteStatement st;
  if (sqlite3_prepare_v2(db_, "DELETE FROM progress WHERE learner = ?1 AND lesson = ?2", -1, &st.stmt, nullptr) !=
      SQLITE_OK)
    return tl::unexpected(sqlite_error("reset progress"));
  sqlite3_bind_text(st.stmt, 1, learner.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st.stmt, 2, lesson.c_str(), -1, SQLITE_TRANSIENT);
  if (sqlite3_step(st.stmt) != SQLITE_DONE) return tl::unexpected(sqlite_error("reset progress"));
  return {};
}

}  // namespace headlab::server
