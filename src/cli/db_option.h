// cli/db_option.h — the --db of `serve`, `feedback` and `class`, read the same way by each:
// a path is an SQLite file, a postgresql:// (or postgres://) URL is PostgreSQL, and text that
// only looks like a PostgreSQL URL ("postgresql:/db", "PostgreSQL://...") is refused by name
// before anything is opened, so it never becomes a folder named "postgresql:".
//
//   auto target = db_option(o.db, DbMustExist::yes);
//   if (!target) return print_error(target.error().message, db_option_exit_code(target.error()));
//   auto store = server::ClassStore::open(target->location);
#pragma once

#include <string>

#include "server/store/target.h"
#include "util/result.h"

namespace headlab::cli {

enum class DbMustExist { no, yes };

// `given` empty: the default SQLite file (server::default_database_path()). Errors:
// invalid_argument (not a path nor a URL headlab reads); not_found when must_exist is yes and
// the SQLite file is not there (commands that read should not make an empty database).
Result<server::db::Target> db_option(const std::string& given, DbMustExist must_exist);

// 2 (a usage error) for invalid_argument, else 1.
int db_option_exit_code(const Error& error);

}  // namespace headlab::cli
