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

namespace headlab::cli {
namespace {

// What learners typed, made safe for a terminal: control characters (ESC, BEL, CR, the C1
// range ...) become visible escapes like \x1b, so a note cannot clear the screen, move the
// cursor or forge a line that looks like another entry; so do the bidirectional controls
// (U+061C, U+200E/F, U+202A-202E, U+2066-2069), which reorder the text after them on the
// screen. Printable UTF-8 stays as it is.
std::string escape_for_terminal(const std::string& text) {
  std::string out;
  char buf[12];
  auto byte = [&](std::size_t at) { return at < text.size() ? static_cast<unsigned char>(text[at]) : 0u; };
  for (std::size_t i = 0; i < text.size(); ++i) {
    auto b = static_cast<unsigned char>(text[i]);
    // the bidi controls' UTF-8: D8 9C; E2 80 8E-8F; E2 80 AA-AE; E2 81 A6-A9
    unsigned bidi = 0, length = 0;
    if (b == 0xD8 && byte(i + 1) == 0x9C) bidi = 0x061C, length = 2;
    else if (b == 0xE2 && byte(i + 1) == 0x80 && (byte(i + 2) == 0x8E || byte(i + 2) == 0x8F ||
                                                  (byte(i + 2) >= 0xAA && byte(i + 2) <= 0xAE)))
      bidi = 0x2000 + (byte(i + 2) - 0x80), length = 3;
    else if (b == 0xE2 && byte(i + 1) == 0x81 && byte(i + 2) >= 0xA6 && byte(i + 2) <= 0xA9)
      bidi = 0x2040 + (byte(i + 2) - 0x80), length = 3;
    if (bidi) {
      std::snprintf(buf, sizeof buf, "\\u%04x", bidi);
      out += buf;
      i += length - 1;
    } else if (b == '\\') {
      out += "\\\\";
    } else if (b < 0x20 || b == 0x7F) {
      std::snprintf(buf, sizeof buf, "\\x%02x", b);
      out += b == '\n' ? "\\n" : b == '\t' ? "\\t" : b == '\r' ? "\\r" : buf;
    } else if (b == 0xC2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
               static_cast<unsigned char>(text[i + 1]) <= 0x9F) {
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned char>(text[i + 1]));  // C1 controls (CSI ...)
      out += buf;
      ++i;
    } else {
      out += static_cast<char>(b);
    }
  }
  return out;
}

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
