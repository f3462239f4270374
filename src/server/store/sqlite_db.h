// server/store/sqlite_db.h — what the progress and feedback stores share of SQLite: opening a file
// for durable writes, and statements finalized when they go out of scope.
//
//   auto db = sqlite_open_durable(path, "progress database");   // WAL, synchronous=FULL
//   SqliteStatement st;  sqlite3_prepare_v2(*db, "SELECT ...", -1, &st.stmt, nullptr);
#pragma once

#include <sqlite3.h>

#include <string>

#include "util/result.h"

namespace headlab::server {

// Finalizes a prepared statement when it goes out of scope.
struct SqliteStatement {
  sqlite3_stmt* stmt = nullptr;
  SqliteStatement() = default;
  SqliteStatement(const SqliteStatement&) = delete;
  SqliteStatement& operator=(const SqliteStatement&) = delete;
  ~SqliteStatement() { sqlite3_finalize(stmt); }
};

// Opens path (creating it and its folder), safe to share between threads, with a busy
// timeout, the WAL journal and synchronous=FULL: a write that returned is on disk. `what`
// names the file in error messages ("progress database"). The caller closes the handle.
// Errors: invalid_argument for a PostgreSQL URL (db::looks_like_postgresql), before anything
// is made on disk; io_error for a folder or file that cannot be made or opened.
Result<sqlite3*> sqlite_open_durable(const std::string& path, const std::string& what);

}  // namespace headlab::server
