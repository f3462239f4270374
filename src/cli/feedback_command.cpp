// cli/feedback_command.cpp — `headlab feedback list`: what learners reported with
// "Spotted a mistake? Tell us.", newest first, from the server's SQLite file.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/db_option.h"
#include "server/store/target.h"
#include "server/store/feedback_store.h"
#include "server/store/progress_store.h"
#include "util/untrusted_text.h"

namespace headlab::cli {
namespace {

struct FeedbackOptions {
  std::string db;
  std::string format = "table";
  int limit = 100;
};

int run_feedback_list(const FeedbackOptions& o) {
  auto target = db_option(o.db, DbMustExist::yes);
  if (!target) return print_error(target.error().message, db_option_exit_code(target.error()));
  auto store = server::FeedbackStore::open(target->location);
  if (!store) return print_error(store.error().message);
  auto notes = (*store)->list(o.limit);
  if (!notes) return print_error(notes.error().message);
  if (o.format == "json") {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& f : *notes)
      out.push_back({{"id", f.id}, {"lesson", f.lesson}, {"message", f.message}, {"contact", f.contact},
                     {"created_at", f.created_at}});
    std::cout << out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
    return 0;
  }
  if (notes->empty()) {
    std::cout << "No feedback yet in " << target->display << ".\n";
    return 0;
  }
  for (const auto& f : *notes) {
    std::cout << "#" << f.id << "  " << escape_for_terminal(f.created_at) << "  " << escape_for_terminal(f.lesson);
    if (!f.contact.empty()) std::cout << "  (" << escape_for_terminal(f.contact) << ")";
    std::cout << "\n  " << escape_for_terminal(f.message) << "\n\n";
  }
  return 0;
}

}  // namespace

void add_feedback_command(CLI::App& app, int& exit_code) {
  auto opts = std::make_shared<FeedbackOptions>();
  CLI::App* cmd = app.add_subcommand("feedback", "Read what learners reported with \"Spotted a mistake? Tell us.\"");
  cmd->require_subcommand(1);
  CLI::App* list = cmd->add_subcommand("list", "List feedback, newest first");
  list->footer("Examples:\n  headlab feedback list\n  headlab feedback list --db ./class.db --format json");
  list->add_option("--db", opts->db, "The SQLite file or postgresql:// URL `headlab serve --db` used (default: " +
                                        server::default_database_path() + ")");
  list->add_option("--format", opts->format, "table or json")->check(CLI::IsMember({"table", "json"}))->capture_default_str();
  list->add_option("--limit", opts->limit, "At most this many notes")->check(CLI::Range(1, 100000))->capture_default_str();
  list->callback([opts, &exit_code] { exit_code = run_feedback_list(*opts); });
}

}  // namespace headlab::cli
