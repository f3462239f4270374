// server/db/sqlite_engine.h — the embedded engine: one SQLite file, opened for durable writes
// (WAL journal, synchronous=FULL: a write that returned is on disk), with an optional cap on
// its size (PRAGMA max_page_count, set on every connection: writes past it fail with
// storage_full, which the server answers with 507).
#pragma once

#include <memory>
#include <string>

#include "server/db/connection.h"

namespace headlab::server::db {

// Opens (creating the file and its folder). Errors: io_error naming the file and --db.
Result<std::unique_ptr<Connection>> sqlite_connect(const std::string& path, const DatabaseOptions& options);

// "$1" -> "?1" outside quoted text, so stores write one placeholder style for both engines.
std::string sqlite_placeholders(std::string_view sql);

}  // namespace headlab::server::db
