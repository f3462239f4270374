// cli/main.cpp — the `headlab` binary: one subcommand per file, registered here in the
// order `headlab --help` lists them.
#include <CLI/CLI.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <new>

#include "cli/commands.h"
#include "cli/output_guard.h"
#include "model/blas.h"
#include "model/ops/matmul_packed.h"

namespace headlab::cli {

int print_error(const std::string& message, int code) {
  std::fprintf(stderr, "headlab: error: %s\n", message.c_str());
  return code;
}

std::string cannot_write(const std::string& path) {
  const int e = errno;
  return path + ": cannot open for writing" + (e ? std::string(": ") + std::strerror(e) : "");
}

}  // namespace headlab::cli

int main(int argc, char** argv) {
  using namespace headlab::cli;
  // OpenBLAS's kernels by the CPU's features: may re-execute headlab once with
  // OPENBLAS_CORETYPE set (model/blas.h), so it comes before anything else.
  headlab::model::blas_use_cpu_kernels(argv);
  CLI::App app{
      "headlab: see, test and predict where the attention heads of a transformer look.\n"
      "Start with `headlab heads` (the five rule-built heads of the first lesson) or\n"
      "`headlab serve` (the lessons in the browser and the JSON API)."};
  app.name("headlab");
  app.require_subcommand(1);
  // the version and the matrix-product kernels this run uses
  app.set_version_flag("--version", "headlab 0.1.0\n" + headlab::model::blas_kernels_description() + "\n" +
                                        headlab::model::matmul_packed_kernels_description());

  int exit_code = 0;
  add_heads_command(app, exit_code);
  add_serve_command(app, exit_code);
  add_feedback_command(app, exit_code);
  add_class_command(app, exit_code);
  add_tokenize_command(app, exit_code);
  add_run_command(app, exit_code);
  add_lens_command(app, exit_code);
  add_attribute_command(app, exit_code);
  add_compose_command(app, exit_code);
  add_train_tokenizer_command(app, exit_code);
  add_train_command(app, exit_code);
  add_scan_command(app, exit_code);
  add_patch_command(app, exit_code);  // the research toolbox: activation patching
  add_info_command(app, exit_code);
  add_export_command(app, exit_code);
  // the research toolbox: the activation cache, interventions and steering
  add_cache_command(app, exit_code);
  add_intervene_command(app, exit_code);

  // `headlab --help` lists one line per subcommand; the rest of a description (its
  // examples) is shown by `headlab SUBCOMMAND --help`.
  for (CLI::App* sub : app.get_subcommands({})) {
    std::string description = sub->get_description();
    auto cut = description.find('\n');
    if (cut == std::string::npos) continue;
    std::string first = description.substr(0, cut), rest = description.substr(cut + 1);
    // The first sentence may run over several lines: keep whole sentences on the list.
    while (!first.empty() && first.back() != '.' && first.back() != ':' && !rest.empty()) {
      auto next = rest.find('\n');
      std::string line = rest.substr(0, next);
      if (line.empty()) break;
      first += " " + line;
      rest = next == std::string::npos ? "" : rest.substr(next + 1);
    }
    auto dot = first.find(". ");
    while (dot != std::string::npos && dot >= 2 && first.compare(dot - 2, 2, "al") == 0) dot = first.find(". ", dot + 1);
    if (dot != std::string::npos) {
      rest = first.substr(dot + 2) + "\n" + rest;
      first = first.substr(0, dot + 1);
    }
    sub->description(first);
    std::string footer = sub->get_footer();
    sub->footer(rest + (footer.empty() ? "" : "\n" + footer));
  }

  // Before any subcommand runs: no output may be one of its inputs (cli/output_guard.h).
  app.parse_complete_callback([&app] { guard_outputs(app); });

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
    if (what.find("A subcommand is required") != std::string::npos || what.find("subcommand") != std::string::npos) {
      // the deepest subcommand parsed ("headlab class"), and the word after it that named none
      CLI::App* parent = &app;
      std::string command = "headlab";
      int at = 1;
      while (!parent->get_subcommands().empty()) {
        parent = parent->get_subcommands().front();
        command += " " + parent->get_name();
        for (int i = at; i < argc; i++)
          if (argv[i] == parent->get_name()) { at = i + 1; break; }
      }
      const std::string word = at < argc ? argv[at] : "";
      what = (!word.empty() && word[0] != '-' ? "'" + word.substr(0, 60) + "' is not a subcommand of `" + command + "`"
                                              : "`" + command + "` needs a subcommand") +
             ". Run `" + command + " --help` to see them.";
    } else
      what += ". Run the subcommand with --help for its options.";
    return print_error(what, 2);
  } catch (const std::bad_alloc&) {
    // The last resort: the loaders say how much memory a model needs (checkpoint.h);
    // anything else that runs out still ends on the error path, not in an abort.
    return print_error("out of memory (the input or the model is larger than this machine can hold)", 1);
  } catch (const std::exception& e) {
    // A throw nobody turned into an Error is a bug, but the user still gets a message.
    return print_error(std::string("unexpected failure: ") + e.what() + " (please report it)", 1);
  } catch (...) {
    return print_error("unexpected failure (please report it)", 1);
  }
  // Output the subcommand wrote and the system did not take (a full disk, `> /dev/full`, a
  // closed pipe) is lost: say so, whichever command wrote it.
  // (A command that failed has said why already.)
  errno = 0;
  std::cout.flush();
  if (exit_code == 0 && (std::fflush(stdout) != 0 || std::ferror(stdout) || !std::cout))
    return print_error(std::string("writing the output failed") + (errno ? std::string(": ") + std::strerror(errno) : ""), 1);
  return exit_code;
}
