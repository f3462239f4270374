// server/store/postgres_engine.h — the engine for a school: a PostgreSQL server reached through
// libpq, so several `headlab serve` processes can share one database.
//
//   auto conn = postgres_connect("postgresql://headlab@127.0.0.1:5432/headlab", {});
//
// A server that is down or refuses is one line naming host, port and the fix. A connection
// whose server went away reports broken(); reconnect() connects again (Database does both).
#pragma once

#include <memory>
#include <string>

#include "server/store/connection.h"

namespace headlab::server::db {

// Errors: invalid_argument for a URL libpq cannot read; unavailable when the server cannot be
// reached or refuses (wrong user or password, no such database).
Result<std::unique_ptr<Connection>> postgres_connect(const std::string& url, const DatabaseOptions& options);

}  // namespace headlab::server::db
