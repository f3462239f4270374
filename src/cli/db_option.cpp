// cli/db_option.cpp — see db_option.h.
#include "cli/db_option.h"

#include <filesystem>

#include "server/store/progress_store.h"

namespace headlab::cli {

Result<server::db::Target> db_option(const std::string& given, DbMustExist must_exist) {
  auto target = server::db::parse_target(given.empty() ? server::default_database_path() : given);
  if (!target) return target;
  if (must_exist == DbMustExist::yes && target->engine == server::db::Engine::sqlite &&
      !std::filesystem::exists(target->location))
    return make_error(ErrorCode::not_found,
                      "No database at " + target->display + ". Pass the --db that `headlab serve` used.");
  return target;
}

int db_option_exit_code(const Error& error) { return error.code == ErrorCode::invalid_argument ? 2 : 1; }

}  // namespace headlab::cli
