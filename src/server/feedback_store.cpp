// server/feedback_store.cpp — one table, one transaction per note.
#include "server/feedback_store.h"

#include "server/sqlite_db.h"

#include <algorithm>

namespace headlab::server {

Result<std::unique_ptr<FeedbackStore>> FeedbackStore::open(const std::string& path, std::int64_t max_bytes) {
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
  if (max_bytes > 0) {
    std::string sql = "PRAGMA max_page_count=" + std::to_string(std::max<std::int64_t>(1, max_bytes / 4096)) + ";";
    sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr);
  }
  return std::unique_ptr<FeedbackStore>(new FeedbackStore(db, path));
}

FeedbackStore::~FeedbackStore() { sqlite3_close(db_); }

bool is_only_white_space(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    auto b = static_cast<unsigned char>(text[i]);
    std::uint32_t cp = b;
    int extra = b < 0x80 ? 0 : (b >> 5) == 6 ? 1 : (b >> 4) == 14 ? 2 : (b >> 3) == 30 ? 3 : -1;
    if (extra < 0 || i + extra >= text.size() + 1 - (extra > 0)) return false;  // not UTF-8: not space
    if (extra > 0) {
      cp = b & (0x3F >> extra);
      for (int k = 1; k <= extra; ++k) cp = (cp << 6) | (static_cast<unsigned char>(text[i + k]) & 0x3F);
    }
    i += extra + 1;
    const bool space = (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
                       (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
                       cp == 0x205F || cp == 0x3000;
    if (!space) return false;
  }
  return true;
}

Result<std::int64_t> FeedbackStore::add(const Feedback& f) {
  // SQLite would keep only the text before a NUL: refuse it rather than store less than was sent.
  for (const std::string* field : {&f.lesson, &f.message, &f.contact})
    if (field->find('\0') != std::string::npos)
      return make_error(ErrorCode::invalid_argument, "The note contains a NUL character (\\u0000); remove it.");
  if (is_only_white_space(f.message))
    return make_error(ErrorCode::invalid_argument, "The message is empty. Say what is wrong.");
  std::lock_guard<std::mutex> lock(mutex_);
  SqliteStatement st;
  if (sqlite3_prepare_v2(db_, "INSERT INTO feedback (lesson, message, contact) VALUES (?1, ?2, ?3)", -1, &st.stmt,
                         nullptr) != SQLITE_OK)
    return make_error(ErrorCode::io_error, "Could not save feedback in " + path_ + ": " + sqlite3_errmsg(db_) + ".");
  auto bind = [&](int i, const std::string& v) {
    sqlite3_bind_text(st.stmt, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  };
  bind(1, f.lesson);
  bind(2, f.message);
  bind(3, f.contact);
  if (sqlite3_step(st.stmt) != SQLITE_DONE) {
    if (sqlite3_errcode(db_) == SQLITE_FULL)
      return make_error(ErrorCode::storage_full, "The database " + path_ + " is full, so feedback cannot be saved now.");
    return make_error(ErrorCode::io_error, "Could not save feedback in " + path_ + ": " + sqlite3_errmsg(db_) + ".");
  }
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
