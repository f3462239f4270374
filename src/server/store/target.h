// server/store/target.h — what `--db` names: an SQLite file (a path) or a PostgreSQL database
// (a postgresql:// or postgres:// URL).
//
//   auto t = parse_target("postgresql://headlab:secret@db.school:5432/headlab");
//   t->engine == Engine::postgresql;  t->display == "postgresql://headlab:***@db.school:5432/headlab"
#pragma once

#include <string>
#include <string_view>

#include "server/store/connection.h"
#include "util/result.h"

namespace headlab::server::db {

struct Target {
  Engine engine = Engine::sqlite;
  std::string location;  // the path, or the URL as given (a password included)
  std::string display;   // for messages and logs: the path, or the URL with its password hidden
};

// True for "postgresql://..." and "postgres://..." (lower case, as libpq reads them).
bool is_postgresql_url(std::string_view text);

// True for text that begins "postgresql:" or "postgres:" in any letter case: meant as a
// PostgreSQL URL, whether or not it is a well-formed one. Never an SQLite path.
bool looks_like_postgresql(std::string_view text);

// A URL with its password (user:PASSWORD@ or ?password=...) replaced by ***.
std::string redact_url(std::string_view url);

// Errors: invalid_argument for an empty target, a text that looks_like_postgresql() but is
// not a postgresql:// or postgres:// URL ("postgresql:/db", "PostgreSQL://..."), and any
// other URL ("mysql://...").
Result<Target> parse_target(const std::string& text);

}  // namespace headlab::server::db
