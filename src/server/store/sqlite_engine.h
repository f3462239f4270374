// server/store/sqlite_engine.h — the embedded engine: one SQLite file, opened for durable writes
// (WAL journal, synchronous=FULL: a write that returned is on disk), with an optional cap on
// its size (PRAGMA max_page_count, set on every connection: writes past it fail with
// storage_full, which the server answers with 507).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "server/store/connection.h"

namespace headlab::server::db {

// Opens (creating the file and its folder). Errors: io_error naming the file and --db.
Result<std::unique_ptr<Connection>> sqlite_connect(const std::string& path, const DatabaseOptions& options);

// The PRAGMA that caps a connection's file at max_bytes (4 KiB pages).
std::string sqlite_size_cap_sql(std::int64_t max_bytes);

// "$1" -> "?1" outside quoted text, so stores write one placeholder style for both engines.
std::string sqlite_placeholders(std::string_view sql);

}  // namespace headlab::server::db
