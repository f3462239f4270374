// server/store/migrations.h — versioned schema changes, applied at start, the same list for both
// engines. The table schema_migrations holds one row per migration applied (version, name,
// when); each migration runs once, inside one transaction with its row, so a crash leaves
// it wholly applied or not at all. A database holding a version this binary does not know
// was written by a newer headlab and is refused by name rather than misread.
//
//   if (auto s = migrate(*db, headlab_migrations()); !s) return tl::unexpected(s.error());
//
// Add a migration by appending to the list in schema.cpp with the next version; never edit
// or reorder one that has shipped.
#pragma once

#include <string>
#include <vector>

#include "server/store/database.h"

namespace headlab::server::db {

struct Migration {
  int version = 0;         // 1, 2, 3 ... in order
  std::string name;        // a few words: "progress and feedback"
  std::string sqlite;      // the statements for each engine (often the same text)
  std::string postgresql;
};

// Applies, in order, each migration the database has not had yet. Concurrent callers (two
// servers starting on one PostgreSQL) take turns: on PostgreSQL under an advisory lock, on
// SQLite under the write lock. Errors: unsupported when the database is newer than
// `migrations` (naming the database and its newest version); the engine's error, with the
// migration's version and name, when one fails (nothing of it is kept).
Status migrate(Database& db, const std::vector<Migration>& migrations);

// The highest version applied; 0 for a database without schema_migrations.
Result<int> schema_version(Database& db);

}  // namespace headlab::server::db
