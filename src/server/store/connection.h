// server/store/connection.h — what an engine implements: one connection that runs one statement
// at a time. Stores never see this; they use Database (database.h), which lends connections
// from a pool and wraps them in transactions.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "server/store/value.h"
#include "util/result.h"

namespace headlab::server::db {

enum class Engine { sqlite, postgresql };

// "SQLite", "PostgreSQL": for messages.
std::string_view engine_name(Engine engine);

struct DatabaseOptions {
  std::string what = "database";  // names it in messages: "progress database"
  std::int64_t max_bytes = 0;     // SQLite: the file's cap, writes past it fail with storage_full;
                                  // PostgreSQL: the tables' cap, checked before a `grow`
                                  // transaction (Database::cap_size)
  int max_connections = 0;        // 0: the engine's default (SQLite 4, PostgreSQL 8)
  bool secure_delete = false;     // SQLite: deleted rows' bytes are overwritten with zeros
                                  // (PRAGMA secure_delete, on every connection); PostgreSQL:
                                  // not used (a committed DELETE makes rows unreadable)
  bool relaxed_commit = false;    // PostgreSQL: a commit does not wait for its WAL to reach the
                                  // disk (synchronous_commit = off on every connection): for
                                  // rows a crash may lose harmlessly (rate counters); SQLite:
                                  // not used
};

// Not thread-safe: Database lends a connection to one caller at a time.
class Connection {
 public:
  virtual ~Connection() = default;

  // Runs `sql` with $1, $2, ... bound to params (text, integers, doubles or NULL). Without
  // params, `sql` may hold several statements separated by ';' (a migration); the rows are
  // the last one's. Errors: storage_full (disk or cap full), unavailable (busy, or the link
  // to the server dropped: see broken()), io_error (anything else), each with the engine's
  // own words as the message.
  virtual Result<QueryResult> run(std::string_view sql, const Params& params) = 0;

  // True when the link to the server is gone (PostgreSQL restarted, the backend was killed);
  // an SQLite file never is.
  virtual bool broken() const = 0;

  // Connects again after broken(). Errors: unavailable, one line naming the server and the fix.
  virtual Status reconnect() = 0;
};

}  // namespace headlab::server::db
