// cli/commands.h — one function per subcommand, each defined in its own file.
// Each adds its subcommand to the app; its callback stores the exit code in `exit_code`
// (0 ok, 1 failure, 2 usage error) and prints errors as "headlab: error: <message>".
#pragma once

#include <string>

namespace CLI {
class App;
}

namespace headlab::cli {

void add_heads_command(CLI::App& app, int& exit_code);  // heads_command.cpp
void add_serve_command(CLI::App& app, int& exit_code);  // serve_command.cpp
void add_feedback_command(CLI::App& app, int& exit_code);  // feedback_command.cpp
void add_tokenize_command(CLI::App& app, int& exit_code);  // tokenize_command.cpp
void add_run_command(CLI::App& app, int& exit_code);       // run_command.cpp
void add_lens_command(CLI::App& app, int& exit_code);       // lens_command.cpp
void add_attribute_command(CLI::App& app, int& exit_code);  // attribute_command.cpp
void add_compose_command(CLI::App& app, int& exit_code);    // compose_command.cpp
void add_train_tokenizer_command(CLI::App& app, int& exit_code);  // train_tokenizer_command.cpp
void add_train_command(CLI::App& app, int& exit_code);     // train_command.cpp
void add_scan_command(CLI::App& app, int& exit_code);      // scan_command.cpp
void add_patch_command(CLI::App& app, int& exit_code);     // patch_command.cpp: activation patching
void add_class_command(CLI::App& app, int& exit_code);     // class_command.cpp
void add_info_command(CLI::App& app, int& exit_code);      // info_command.cpp
void add_export_command(CLI::App& app, int& exit_code);    // export_command.cpp
// the research toolbox: the activation cache, interventions and steering
void add_cache_command(CLI::App& app, int& exit_code);      // cache_command.cpp
void add_intervene_command(CLI::App& app, int& exit_code);  // intervene_command.cpp

// Prints "headlab: error: <message>" to stderr and returns `code`.
int print_error(const std::string& message, int code = 1);
// "<path>: cannot open for writing: <the system's reason>" (errno, read at once after the failed open).
std::string cannot_write(const std::string& path);

}  // namespace headlab::cli
