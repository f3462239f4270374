// server/store/sqlite_db.cpp — see sqlite_db.h.
#include "server/store/sqlite_db.h"

#include <chrono>
#include <filesystem>
#include <thread>

#include "server/store/target.h"

namespace headlab::server {

Result<sqlite3*> sqlite_open_durable(const std::string& path, const std::string& what) {
  const std::string hint = " Choose another place with --db PATH.";
  // A PostgreSQL URL is never a file name: taken as one, the folder "postgresql:" would be
  // made here. db::parse_target sends URLs to PostgreSQL; this guards every other caller.
  if (db::looks_like_postgresql(path))
    return make_error(ErrorCode::invalid_argument, "The " + what + " " + db::redact_url(path) +
                                                       " is a PostgreSQL URL, not an SQLite file; it is not opened as one.");
  std::filesystem::path p(path);
  std::error_code ec;
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path(), ec);
  if (ec)
    return make_error(ErrorCode::io_error,
                      "Cannot create the folder for the " + what + " " + path + ": " + ec.message() + "." + hint);
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                      nullptr) != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    return make_error(ErrorCode::io_error, "Cannot open the " + what + " " + path + ": " + msg + "." + hint);
  }
  sqlite3_busy_timeout(db, 5000);
  // Turning a new file to WAL takes an exclusive lock, and SQLite answers SQLITE_BUSY at once,
  // without its busy handler, while another process does the same (servers starting together):
  // that one is retried for as long as the busy timeout.
  char* err = nullptr;
  int rc = SQLITE_OK;
  for (int waited_ms = 0;; waited_ms += 10) {
    rc = sqlite3_exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;", nullptr, nullptr, &err);
    if ((rc != SQLITE_BUSY && rc != SQLITE_LOCKED) || waited_ms >= 5000) break;
    sqlite3_free(err);
    err = nullptr;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (rc != SQLITE_OK) {
    std::string msg = err ? err : "unknown error";
    sqlite3_free(err);
    sqlite3_close(db);
    return make_error(ErrorCode::io_error,
                      "The " + what + " " + path + ": " + msg + ". Is it a headlab database?" + hint);
  }
  return db;
}

}  // namespace headlab::server
