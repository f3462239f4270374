// server/feedback_store.cpp — one table, one transaction per note.
#include "server/feedback_store.h"

#include "server/sqlite_db.h"

namespace headlab::server {

Result<std::unique_ptr<FeedbackStore>> FeedbackStore::open(const std::string& path) {
  auto opened = sqlite_open_durable(path, "feedback database");
  if (!opened) return tl::unexpected(opened.error());
  sqlite3* db = *opened;
  char* err = nullptr;
  const char* schema =
      "CREATE TABLE IF NOT EXISTS feedback ("
      "  id INTEGER PRIMARY KEY AUTOINCREMENT, lesson TEXT NOT NULL, message TEXT NOT NULL,"
      "  contact TEXT NOT NULL DEFAULT '',"
      "  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ','now')));";
  if (sqlite3_exec(db, schema, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "unknown error";
    sqlite3_free(err);
    sqlite3_close(db);
    return make_error(ErrorCode::io_error, "The database " + path + " cannot hold feedback: " + msg + ".");
  }
  return std::unique_ptr<FeedbackStore>(new FeedbackStore(db, path));
}

FeedbackStore::~FeedbackStore() { sqlite3_close(db_); }

Result<std::int64_t> FeedbackStore::add(const Feedback& f) {
  std::lock_guard<std::mutex> lock(mutex_);
  SqliteStatement st;
  if (sqlite3_prepare_v2(db_, "INSERT INTO feedback (lesson, message, contact) VALUES (?1, ?2, ?3)", -1, &st.stmt,
                         nullptr) != SQLITE_OK)
    return make_error(ErrorCode::io_error, "Could not save feedback in " + path_ + ": " + sqlite3_errmsg(db_) + ".");
  sqlite3_bind_text(st.stmt, 1, f.lesson.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st.stmt, 2, f.message.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st.stmt, 3, f.contact.c_str(), -1, SQLITE_TRANSIENT);
  if (sqlite3_step(st.stmt) != SQLITE_DONE)
    return make_error(ErrorCode::io_error, "Could not save feedback in " + path_ + ": " + sqlite3_errmsg(db_) + ".");
  return static_cast<std::int64_t>(sqlite3_last_insert_rowid(db_));
}

Result<std::vector<Feedback>> FeedbackStore::list(int limit) {
  std::lock_guard<std::mutex> lock(mutex_);
  SqliteStatement st;
  if (sqlite3_prepare_v2(db_, "SELECT id, lesson, message, contact, created_at FROM feedback ORDER BY id DESC LIMIT ?1",
                         -1, &st.stmt, nullptr) != SQLITE_OK)
    return make_error(ErrorCode::io_error, "Could not read feedback from " + path_ + ": " + sqlite3_errmsg(db_) + ".");
  sqlite3_bind_int(st.stmt, 1, limit);
  std::vector<Feedback> out;
  int rc;
  auto text = [&](int col) { return std::string(reinterpret_cast<const char*>(sqlite3_column_text(st.stmt, col))); };
  while ((rc = sqlite3_step(st.stmt)) == SQLITE_ROW) {
    Feedback f;
    f.id = sqlite3_column_int64(st.stmt, 0);
    f.lesson = text(1);
    f.message = text(2);
    f.contact = text(3);
    f.created_at = text(4);
    out.push_back(std::move(f));
  }
  if (rc != SQLITE_DONE)
    return make_error(ErrorCode::io_error, "Could not read feedback from " + path_ + ": " + sqlite3_errmsg(db_) + ".");
  return out;
}

}  // namespace headlab::server
