// cli/main.cpp — the `headlab` binary: one subcommand per file, registered here in the
// order `headlab --help` lists them.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <iostream>

#include "cli/commands.h"

namespace headlab::cli {

int print_error(const std::string& message, int code) {
  std::fprintf(stderr, "headlab: error: %s\n", message.c_str());
  return code;
}

}  // namespace headlab::cli

int main(int argc, char** argv) {
  using namespace headlab::cli;
  CLI::App app{
      "headlab: see, test and predict where the attention heads of a transformer look.\n"
      "Start with `headlab heads` (the five rule-built heads of the first lesson) or\n"
      "`headlab serve` (the lessons in the browser and the JSON API)."};
  app.name("headlab");
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("headlab 0.1.0"));

  int exit_code = 0;
  add_heads_command(app, exit_code);
  add_serve_command(app, exit_code);
  add_tokenize_command(app, exit_code);
  add_run_command(app, exit_code);
  add_train_tokenizer_command(app, exit_code);
  add_train_command(app, exit_code);
  add_scan_command(app, exit_code);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string what = e.what();
    if (what.find("A subcommand is required") != std::string::npos || what.find("subcommand") != std::string::npos)
      what += ". Run `headlab --help` to see the subcommands.";
    else
      what += ". Run the subcommand with --help for its options.";
    return print_error(what, 2);
  }
  return exit_code;
}
