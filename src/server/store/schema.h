// server/store/schema.h — headlab's own migrations, in order: the schema every store reads.
#pragma once

#include <vector>

#include "server/store/migrations.h"

namespace headlab::server::db {

// 1 "progress and feedback": the tables of the stores before migrations existed. On SQLite
// the statements are those stores' own (CREATE TABLE IF NOT EXISTS), so a file made before
// migrations opens unchanged and only gains schema_migrations.
const std::vector<Migration>& headlab_migrations();

}  // namespace headlab::server::db
