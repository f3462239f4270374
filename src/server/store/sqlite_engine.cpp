// server/store/sqlite_engine.cpp — see sqlite_engine.h.
#include "server/store/sqlite_engine.h"

#include <sqlite3.h>

#include <algorithm>

#include "server/store/sqlite_db.h"

namespace headlab::server::db {
namespace {

class SqliteConnection final : public Connection {
 public:
  explicit SqliteConnection(sqlite3* db) : db_(db) {}
  ~SqliteConnection() override { sqlite3_close(db_); }

  Result<QueryResult> run(std::string_view sql_in, const Params& params) override {
    std::string sql = sqlite_placeholders(sql_in);
    QueryResult out;
    const char* tail = sql.c_str();
    const char* end = sql.c_str() + sql.size();
    // Without parameters the text may hold several statements (a migration): run each in turn.
    while (tail < end) {
      SqliteStatement st;
      const char* next = nullptr;
      if (sqlite3_prepare_v2(db_, tail, static_cast<int>(end - tail), &st.stmt, &next) != SQLITE_OK) return error();
      tail = next;
      if (!st.stmt) continue;  // only white space or a comment was left
      for (std::size_t i = 0; i < params.size(); ++i) bind(st.stmt, static_cast<int>(i) + 1, params[i]);
      out.rows.clear();
      int rc;
      while ((rc = sqlite3_step(st.stmt)) == SQLITE_ROW) out.rows.push_back(row_of(st.stmt));
      if (rc != SQLITE_DONE) return error();
      out.changes = sqlite3_changes(db_);
      if (!params.empty()) break;
    }
    return out;
  }

  bool broken() const override { return false; }
  Status reconnect() override { return {}; }

 private:
  static void bind(sqlite3_stmt* st, int i, const Value& v) {
    if (const auto* s = std::get_if<std::string>(&v))
      sqlite3_bind_text(st, i, s->data(), static_cast<int>(s->size()), SQLITE_TRANSIENT);
    else if (const auto* n = std::get_if<std::int64_t>(&v))
      sqlite3_bind_int64(st, i, *n);
    else if (const auto* d = std::get_if<double>(&v))
      sqlite3_bind_double(st, i, *d);
    else
      sqlite3_bind_null(st, i);
  }

  static Row row_of(sqlite3_stmt* st) {
    Row row;
    int n = sqlite3_column_count(st);
    row.cells.reserve(n);
    for (int c = 0; c < n; ++c) {
      switch (sqlite3_column_type(st, c)) {
        case SQLITE_INTEGER: row.cells.emplace_back(static_cast<std::int64_t>(sqlite3_column_int64(st, c))); break;
        case SQLITE_FLOAT: row.cells.emplace_back(sqlite3_column_double(st, c)); break;
        case SQLITE_NULL: row.cells.emplace_back(std::monostate{}); break;
        default: {
          const auto* p = static_cast<const char*>(sqlite3_column_blob(st, c));
          row.cells.emplace_back(std::string(p ? p : "", sqlite3_column_bytes(st, c)));
        }
      }
    }
    return row;
  }

  tl::unexpected<Error> error() const {
    int code = sqlite3_errcode(db_);
    ErrorCode ours = code == SQLITE_FULL                           ? ErrorCode::storage_full
                     : (code == SQLITE_BUSY || code == SQLITE_LOCKED) ? ErrorCode::unavailable
                                                                      : ErrorCode::io_error;
    return make_error(ours, sqlite3_errmsg(db_));
  }

  sqlite3* db_;
};

}  // namespace

std::string sqlite_size_cap_sql(std::int64_t max_bytes) {
  return "PRAGMA max_page_count=" + std::to_string(std::max<std::int64_t>(1, max_bytes / 4096));
}

std::string sqlite_placeholders(std::string_view sql) {
  std::string out;
  out.reserve(sql.size());
  char quote = 0;
  for (std::size_t i = 0; i < sql.size(); ++i) {
    char c = sql[i];
    if (quote) {
      if (c == quote) quote = 0;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '$' && i + 1 < sql.size() && sql[i + 1] >= '0' && sql[i + 1] <= '9') {
      c = '?';
    }
    out += c;
  }
  return out;
}

Result<std::unique_ptr<Connection>> sqlite_connect(const std::string& path, const DatabaseOptions& options) {
  auto opened = sqlite_open_durable(path, options.what);
  if (!opened) return tl::unexpected(opened.error());
  auto conn = std::make_unique<SqliteConnection>(*opened);
  if (options.secure_delete) {
    if (auto r = conn->run("PRAGMA secure_delete=ON", {}); !r)
      return make_error(ErrorCode::io_error, "The " + options.what + " " + path + ": " + r.error().message + ".");
  }
  if (options.max_bytes > 0) {
    // The cap is per connection: every connection of the pool sets it.
    if (auto r = conn->run(sqlite_size_cap_sql(options.max_bytes), {}); !r)
      return make_error(ErrorCode::io_error, "The " + options.what + " " + path + ": " + r.error().message + ".");
  }
  return std::unique_ptr<Connection>(std::move(conn));
}

}  // namespace headlab::server::db
