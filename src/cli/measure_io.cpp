// cli/measure_io.cpp — the research verbs' shared edges (see measure_io.h).
#include "cli/measure_io.h"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include <unistd.h>

#include "cli/commands.h"
#include "cli/config_note.h"
#include "cli/dtype_option.h"
#include "formats/model_files.h"
#include "tokenizer/unicode.h"

namespace headlab::cli {

Result<MeasureModel> measure_model_load(const std::string& path, bool need_tokenizer) {
  auto params = model::model_load(path);
  if (!params) return tl::unexpected(params.error());
  dtype_note(*params, "auto");
  config_note(path);
  MeasureModel m{std::move(*params), nullptr};
  if (auto t = model::model_tokenizer_load(path)) {
    m.tokenizer = std::make_unique<model::BpeTokenizer>(std::move(*t));
    if (Status fits = model::config_check_tokenizer(m.params.config, m.tokenizer->vocab_size(), path); !fits)
      return tl::unexpected(fits.error());
  } else if (need_tokenizer || t.error().code != ErrorCode::not_found) {
    return tl::unexpected(t.error());
  }
  return m;
}

void add_prompt_options(CLI::App* cmd, PromptOptions& o) {
  cmd->add_option("--text", o.text, "The input text (the family's BOS rule puts BOS first: see --bos)");
  cmd->add_option("--ids", o.ids, "The input as token ids separated by spaces (used as given: no BOS unless --bos)");
  cmd->add_flag_function(
      "--bos,!--no-bos", [&o](std::int64_t n) { o.bos = n > 0; },
      "--bos puts the model's BOS token first, --no-bos leaves it out; neither: for --text the family's "
      "default (on for GPT-2, Llama, Mistral, Gemma; off for GPT-NeoX, Qwen 2/3), for --ids none");
  cmd->add_flag("--truncate", o.truncate, "Keep BOS and the last tokens of a longer input, n_ctx in all");
}

Result<research::TextPrompt> measure_prompt(const PromptOptions& o) {
  if (o.text.empty() == o.ids.empty()) return make_error(ErrorCode::invalid_argument, "give exactly one of --text and --ids");
  research::TextPrompt p;
  p.text = o.text;
  p.bos = o.bos;
  p.input.truncate = o.truncate;
  p.input.truncate_hint = "pass --truncate";
  std::istringstream in(o.ids);
  std::string word;
  while (in >> word) {
    std::size_t used = 0;
    long v = -1;
    try {
      v = std::stol(word, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != word.size() || v < 0 || v > 1 << 30)
      return make_error(ErrorCode::invalid_argument, "--ids: \"" + word + "\" is not a token id (a non-negative integer)");
    p.ids.push_back(static_cast<int>(v));
  }
  if (!o.ids.empty() && p.ids.empty()) return make_error(ErrorCode::invalid_argument, "--ids: no token ids given");
  return p;
}

std::string measure_token_label(const model::BpeTokenizer* tok, int id) {
  if (!tok) return "#" + std::to_string(id);
  std::string s;
  for (char c : tok->token_bytes(id)) {
    if (c == '\n') s += "\\n";
    else if (c == '\t') s += "\\t";
    else s.push_back(c);
  }
  return model::utf8_find_invalid(s) >= 0 ? "#" + std::to_string(id) : s;
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
    if (!f) return print_error(out + ": cannot open for writing");
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
