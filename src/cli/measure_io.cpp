// cli/measure_io.cpp — the research verbs' shared edges (see measure_io.h).
#include "cli/measure_io.h"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>

#include <unistd.h>

#include "cli/commands.h"
#include "cli/dtype_option.h"

namespace headlab::cli {

void add_model_options(CLI::App* cmd, ModelOptions& o) {
  cmd->add_option("--model", o.path, "A Hugging Face folder (GPT-2, GPT-NeoX, Llama, Mistral, Qwen 2/3, Gemma 2/3) or a .gguf file")
      ->required();
  add_dtype_option(cmd, o.dtype);
  add_compute_option(cmd, o.compute);
  add_cache_option(cmd, o.no_cache);
}

void add_prompt_options(CLI::App* cmd, PromptOptions& o) {
  cmd->add_option("--text", o.text, "The input text (the family's BOS rule puts BOS first: see --bos)");
  cmd->add_option("--ids", o.ids, "The input as token ids, separated by commas or spaces (used as given: no BOS unless --bos)");
  add_bos_flags(cmd, o.bos,
                "--bos puts the model's BOS token first, --no-bos leaves it out; neither: for --text the family's "
                "default (on for GPT-2, Llama, Mistral, Gemma; off for GPT-NeoX, Qwen 2/3), for --ids none");
  cmd->add_flag("--truncate", o.truncate, "Keep BOS and the last tokens of a longer input, n_ctx in all");
}

Result<research::TextPrompt> measure_prompt(const PromptOptions& o) {
  if (o.text.empty() == o.ids.empty()) return make_error(ErrorCode::invalid_argument, "give exactly one of --text and --ids (an empty one counts as none: the input needs a token)");
  research::TextPrompt p;
  p.text = o.text;
  p.bos = o.bos;
  p.input.truncate = o.truncate;
  p.input.truncate_hint = "pass --truncate";
  if (!o.ids.empty()) {
    auto ids = parse_id_list(o.ids, "--ids");
    if (!ids) return tl::unexpected(ids.error());
    p.ids = std::move(*ids);
  }
  return p;
}

std::string csv_field(std::string_view t) {
  if (t.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(t);
  std::string out = "\"";
  for (char c : t) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

int measure_write(const std::string& text, const std::string& out) {
  if (!out.empty()) {
    std::ofstream f(out, std::ios::binary);
    if (!f) return print_error(cannot_write(out));
    f << text;
    f.close();
    if (!f) return print_error(out + ": write failed");
    std::fprintf(stderr, "headlab: wrote %zu bytes to %s\n", text.size(), out.c_str());
    return 0;
  }
  if (text.size() > 64 * 1024 && ::isatty(STDOUT_FILENO))
    return print_error("the output is " + std::to_string(text.size() / 1024) +
                           " KB, too long for the screen: pass --out FILE (or redirect the output)",
                       2);
  std::cout << text;
  return std::cout.flush() ? 0 : print_error("writing the output failed");
}

int measure_error(const Error& e) {
  return print_error(e.message, e.code == ErrorCode::invalid_argument || e.code == ErrorCode::too_long ? 2 : 1);
}

}  // namespace headlab::cli
