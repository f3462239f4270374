// cli/class_command.cpp — `headlab class create|show|list|delete`: a teacher's classes in
// the database `headlab serve --db` uses (an SQLite file or a PostgreSQL URL). Whoever can
// read that database sees every class, so these commands ask for no secret; the web page does.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include "cli/commands.h"
#include "cli/db_option.h"
#include "core/sentence.h"
#include "server/api/class_codec.h"
#include "server/store/class_store.h"
#include "server/store/target.h"
#include "server/api/handlers/class_handlers.h"
#include "server/store/progress_store.h"
#include "util/file.h"
#include "util/untrusted_text.h"

namespace headlab::cli {
namespace {

struct ClassOptions {
  std::string db;
  std::string name, code;
  std::string passphrase_file;
  std::string url = "http://127.0.0.1:8080";
  std::string format = "text";
  bool yes = false;
};

// Opens the class store of --db; show, list and delete never create an SQLite file by accident.
Result<std::unique_ptr<server::ClassStore>> open_store(const ClassOptions& o, cli::DbMustExist must_exist) {
  auto target = db_option(o.db, must_exist);
  if (!target) return tl::unexpected(target.error());
  return server::ClassStore::open(target->location);
}

int print_store_error(const Error& e) { return print_error(e.message, db_option_exit_code(e)); }

// Every text of a class reaches the terminal through this: a learner's nickname or answer
// (or a row written before the store refused such text) cannot send escape sequences or
// reorder the line (util/untrusted_text.h).
std::string printable(const std::string& s) { return escape_controls(s); }

// Columns on a terminal, not bytes or code points: a wide nickname (学生) takes two per character.
// Qualified: heads_command.cpp (one unity batch with this file) has a display_width of its own.
std::size_t width(const std::string& s) { return headlab::display_width(s); }

std::string pad(const std::string& s, std::size_t w) { return s + std::string(w > width(s) ? w - width(s) : 0, ' '); }

// The grid of learners x challenges: "✓2" done in two tries, "✗3" three tries and not
// done yet, "·" not tried. A mark for each state, so it reads without colour.
void print_grid(const server::ClassView& v) {
  std::cout << printable(v.info.name) << " (" << printable(v.info.code) << "), " << v.learner_count
            << (v.learner_count == 1 ? " learner\n\n" : " learners\n\n");
  std::size_t name_w = 8;
  for (const auto& l : v.learners) name_w = std::max(name_w, width(printable(l.nickname)));
  // column numbers per lesson, then the key below
  std::string header = pad("", name_w + 2), numbers = pad("nickname", name_w + 2);
  std::vector<std::pair<std::string, std::size_t>> lessons;  // (lesson, challenge count)
  if (!v.learners.empty())
    for (const auto& l : v.learners[0].lessons) lessons.push_back({l.lesson, l.challenges.size()});
  else
    for (const auto& c : v.challenges)
      if (lessons.empty() || lessons.back().first != c.lesson) lessons.push_back({c.lesson, 1});
      else ++lessons.back().second;
  for (const auto& [lesson, n] : lessons) {
    std::string cols;
    for (std::size_t i = 0; i < n; ++i) cols += pad(std::to_string(i + 1), 5);
    header += pad(lesson, std::max(width(cols), width(lesson)) + 2);
    numbers += pad(cols, std::max(width(cols), width(lesson)) + 2);
  }
  numbers += "total";
  std::cout << header << "\n" << numbers << "\n";
  for (const auto& l : v.learners) {
    std::string row = pad(printable(l.nickname), name_w + 2);
    for (std::size_t li = 0; li < l.lessons.size(); ++li) {
      std::string cols;
      for (const auto& c : l.lessons[li].challenges) {
        std::string cell = c.done ? "\u2713" + std::to_string(c.tries) : c.tries > 0 ? "\u2717" + std::to_string(c.tries) : "\u00b7";
        if (!c.revealed_at.empty()) cell += "!";  // the answer was shown to this learner
        if (c.before_joining) cell += "+";        // done before the learner joined the class
        cols += pad(cell, 5);
      }
      std::size_t w = std::max(width(cols), width(lessons[li].first));
      row += pad(cols, w + 2);
    }
    std::cout << row << l.total << "/" << v.challenges.size() << "\n";
  }
  if (v.learners.empty()) std::cout << "(nobody has joined yet: share the code " << printable(v.info.code) << ")\n";
  if (!v.banned.empty()) {
    std::cout << "removed (kept out until you let them back in on your page):";
    for (std::size_t i = 0; i < v.banned.size(); ++i) std::cout << (i ? ", " : " ") << printable(v.banned[i].nickname);
    std::cout << "\n";
  }
  std::cout << "\n\u2713n done in n tries   \u2717n n tries, not done yet   \u00b7 not tried   "
               "! the answer was shown   + done before joining\n\n";
  std::string lesson;
  int i = 0;
  for (const auto& c : v.challenges) {
    if (c.lesson != lesson) {
      lesson = c.lesson;
      i = 0;
      std::cout << lesson << "\n";
    }
    std::cout << "  " << ++i << ". " << printable(c.title) << ": " << c.done_count << " of " << v.learner_count << " done";
    if (!c.wrong_answers.empty()) {
      std::cout << "; common wrong answers: ";
      for (std::size_t w = 0; w < c.wrong_answers.size(); ++w)
        std::cout << (w ? ", " : "") << printable(c.wrong_answers[w].answer) << " (" << c.wrong_answers[w].count << ")";
    }
    std::cout << "\n";
  }
}

int run_create(const ClassOptions& o) {
  // the join link printed for learners: any other text made a link no browser opens
  if (o.url.rfind("http://", 0) != 0 && o.url.rfind("https://", 0) != 0)
    return print_error("--url " + o.url.substr(0, 80) + " is not a web address: give where learners reach `headlab "
                       "serve`, like http://10.0.0.5:8080", 2);
  std::string passphrase;
  if (!o.passphrase_file.empty()) {
    std::stringstream text;
    if (o.passphrase_file == "-") {
      text << std::cin.rdbuf();
    } else {
      // util/file's reader: a FIFO (it waited for a writer forever) or a folder ("is empty") is named
      auto read = file_read(o.passphrase_file, 1 << 16);
      if (!read) return print_error("Cannot read the passphrase file: " + read.error().message + ".");
      text << *read;
    }
    passphrase = text.str();
    while (!passphrase.empty() && (passphrase.back() == '\n' || passphrase.back() == '\r')) passphrase.pop_back();
    if (passphrase.empty()) return print_error("The passphrase file " + o.passphrase_file + " is empty.");
    // typed at the login form: bytes that are not UTF-8, or a NUL, could never be typed again
    if (!core::is_valid_utf8(passphrase) || passphrase.find('\0') != std::string::npos)
      return print_error("The passphrase file " + o.passphrase_file +
                             " holds bytes that are not UTF-8 text (or a NUL): the login form could never send them.", 2);
  }
  auto store = open_store(o, DbMustExist::no);
  if (!store) return print_store_error(store.error());
  auto made = (*store)->create_class(o.name, passphrase);
  if (!made) return print_error(made.error().message, made.error().code == ErrorCode::invalid_argument ? 2 : 1);
  std::string base = o.url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  const std::string& code = made->info.code;
  std::cout << "Class \"" << printable(made->info.name) << "\" created in " << (*store)->display_name() << ".\n\n"
            << "  Join link:  " << base << server::class_join_path(code) << "\n"
            << "  Join code:  " << code << "\n"
            << "  Your page:  " << base << "/#/teacher/" << code << "\n";
  if (!made->secret.empty())
    std::cout << "  Secret:     " << made->secret << "\n\n"
              << "The secret is shown only now: write it down. You log in on your page with the code and it.\n";
  else
    std::cout << "\nYou log in on your page with the code and your passphrase.\n";
  std::cout << "Learners open the join link (or type the code under \"Join a class\") and choose a nickname.\n";
  return 0;
}

int run_show(const ClassOptions& o) {
  auto store = open_store(o, DbMustExist::yes);
  if (!store) return print_store_error(store.error());
  auto view = server::build_class_view(**store, o.code);
  if (!view) return print_error(view.error().message);
  // JSON escapes C0 controls but writes C1 and bidi controls as they are: replace them too.
  if (o.format == "json") std::cout << printable(server::encode_class_view(*view)) << "\n";
  else if (o.format == "csv") std::cout << server::encode_class_csv(*view);
  else print_grid(*view);
  return 0;
}

int run_list(const ClassOptions& o) {
  auto store = open_store(o, DbMustExist::yes);
  if (!store) return print_store_error(store.error());
  auto classes = (*store)->classes();
  if (!classes) return print_error(classes.error().message);
  if (classes->empty()) std::cout << "No classes in " << (*store)->display_name() << ".\n";
  for (const auto& c : *classes) {
    auto members = (*store)->members(c.code);
    const std::size_t n = members ? members->size() : 0;
    std::cout << printable(c.code) << "  " << printable(c.name) << "  (" << n << (n == 1 ? " learner" : " learners") << ", created "
              << printable(c.created_at) << ")\n";
  }
  return 0;
}

int run_delete(const ClassOptions& o) {
  auto store = open_store(o, DbMustExist::yes);
  if (!store) return print_store_error(store.error());
  auto info = (*store)->find_class(o.code);
  if (!info) return print_error(info.error().message);
  auto members = (*store)->members(o.code);
  if (!members) return print_error(members.error().message);
  if (!o.yes)
    return print_error("This deletes the class \"" + printable(info->name) + "\" (" + o.code + ") with its " +
                           std::to_string(members->size()) +
                           " learners and all their checks, for good. Run it again with --yes to do it.",
                       2);
  if (auto s = (*store)->delete_class(o.code); !s) return print_error(s.error().message);
  std::cout << "Deleted the class \"" << printable(info->name) << "\" (" << o.code << ") and the data of its "
            << members->size() << " learners.\n";
  return 0;
}

}  // namespace

void add_class_command(CLI::App& app, int& exit_code) {
  auto opts = std::make_shared<ClassOptions>();
  CLI::App* cmd = app.add_subcommand("class", "Run a class: create one, see who finished what, delete it.\n"
                                              "Works on the database of `headlab serve --db`.");
  cmd->require_subcommand(1);
  auto add_db = [&](CLI::App* sub) {
    sub->add_option("--db", opts->db, "The database `headlab serve --db` uses: an SQLite file (default: " +
                                          server::default_database_path() + ") or a postgresql:// URL");
  };
  auto upper = [](std::string s) {
    for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return s;
  };

  CLI::App* create = cmd->add_subcommand("create", "Create a class; prints its join link, its code and the secret once");
  create->footer("Examples:\n  headlab class create \"Period 3\"\n"
                 "  headlab class create \"Period 3\" --passphrase-file ~/period3.txt --url http://10.0.0.5:8080");
  create->add_option("name", opts->name, "The class's name, as learners see it")->required();
  create->add_option("--passphrase-file", opts->passphrase_file,
                     "Read your own passphrase (10 to 200 bytes) from this file (- for standard input) instead of "
                     "getting a generated secret");
  create->add_option("--url", opts->url, "Where learners reach `headlab serve`, for the join link")->capture_default_str();
  add_db(create);
  create->callback([opts, &exit_code] { exit_code = run_create(*opts); });

  CLI::App* show = cmd->add_subcommand("show", "The teacher's view: learners x challenges, tries and wrong answers");
  show->footer("Examples:\n  headlab class show K7QPM3\n  headlab class show K7QPM3 --format csv > period3.csv");
  show->add_option("code", opts->code, "The class's code")->required()->transform(upper);
  show->add_option("--format", opts->format, "text, csv or json")->check(CLI::IsMember({"text", "csv", "json"}))->capture_default_str();
  add_db(show);
  show->callback([opts, &exit_code] { exit_code = run_show(*opts); });

  CLI::App* list = cmd->add_subcommand("list", "The classes in the database");
  add_db(list);
  list->callback([opts, &exit_code] { exit_code = run_list(*opts); });

  CLI::App* del = cmd->add_subcommand("delete", "Delete a class with all its learners' data (asks for --yes)");
  del->add_option("code", opts->code, "The class's code")->required()->transform(upper);
  del->add_flag("--yes", opts->yes, "Yes, delete it for good");
  add_db(del);
  del->callback([opts, &exit_code] { exit_code = run_delete(*opts); });
}

}  // namespace headlab::cli
