// server/store/migrations.cpp — see migrations.h.
#include "server/store/migrations.h"

namespace headlab::server::db {
namespace {

constexpr const char* kCreateTable =
    "CREATE TABLE IF NOT EXISTS schema_migrations ("
    "  version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)";

// Any fixed number: the key of the advisory lock that makes servers migrate one at a time.
constexpr const char* kLock = "SELECT pg_advisory_xact_lock(1684104556)";

// Inside a write transaction: serialise with other migrators, make sure the table exists.
Status prepare(Database& db, Session& tx) {
  if (db.engine() == Engine::postgresql)
    if (auto r = tx.query(kLock); !r) return tl::unexpected(r.error());
  if (auto r = tx.exec(kCreateTable); !r) return tl::unexpected(r.error());
  return {};
}

}  // namespace

Result<int> schema_version(Database& db) {
  int version = 0;
  Status s = db.transaction(Access::write, [&](Session& tx) -> Status {
    if (auto p = prepare(db, tx); !p) return p;
    auto rows = tx.query("SELECT COALESCE(MAX(version), 0) FROM schema_migrations");
    if (!rows) return tl::unexpected(rows.error());
    version = static_cast<int>(rows->at(0).integer(0));
    return {};
  });
  if (!s) return tl::unexpected(s.error());
  return version;
}

Status migrate(Database& db, const std::vector<Migration>& migrations) {
  const int known = migrations.empty() ? 0 : migrations.back().version;
  auto fail = [&](const std::string& doing, const Error& e) {
    return make_error(e.code, "The " + db.options().what + " " + db.name() + ": " + doing + ": " + e.message + ".");
  };
  for (std::size_t i = 0; i <= migrations.size(); ++i) {
    const Migration* m = i < migrations.size() ? &migrations[i] : nullptr;
    if (!m && !migrations.empty()) break;  // the loop above already checked the version
    bool refused = false;
    std::string newest;
    Status s = db.transaction(Access::write, [&](Session& tx) -> Status {
      refused = false;
      if (auto p = prepare(db, tx); !p) return p;
      auto rows = tx.query("SELECT version, name FROM schema_migrations ORDER BY version DESC LIMIT 1");
      if (!rows) return tl::unexpected(rows.error());
      int have = rows->empty() ? 0 : static_cast<int>(rows->front().integer(0));
      if (have > known) {
        refused = true;
        newest = std::to_string(have) + " (\"" + rows->front().text(1) + "\")";
        return {};
      }
      if (!m || have >= m->version) return {};  // nothing to do, or another server did it
      const std::string& sql = db.engine() == Engine::sqlite ? m->sqlite : m->postgresql;
      if (auto r = tx.exec(sql); !r) return tl::unexpected(r.error());
      // The timestamp comes from the engine so both write the same ISO 8601 form.
      const char* insert = db.engine() == Engine::sqlite
                               ? "INSERT INTO schema_migrations (version, name, applied_at) VALUES "
                                 "($1, $2, strftime('%Y-%m-%dT%H:%M:%SZ','now'))"
                               : "INSERT INTO schema_migrations (version, name, applied_at) VALUES "
                                 "($1, $2, to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'))";
      if (auto r = tx.exec(insert, {std::int64_t{m->version}, m->name}); !r) return tl::unexpected(r.error());
      return {};
    });
    if (refused)
      return make_error(ErrorCode::unsupported,
                        "The " + db.options().what + " " + db.name() + " was made by a newer headlab: its schema is at " +
                            "migration " + newest + ", and this headlab knows migrations up to " +
                            std::to_string(known) + ". Run a newer headlab, or choose another --db.");
    if (!s) {
      if (!m) return fail("reading its schema version", s.error());
      return fail("applying migration " + std::to_string(m->version) + " (\"" + m->name + "\")", s.error());
    }
  }
  return {};
}

}  // namespace headlab::server::db
