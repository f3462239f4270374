// cli/text_or_ids.cpp — the model, its tokenizer and the input of a research command
// (text_or_ids.h).
#include "cli/text_or_ids.h"

#include <CLI/CLI.hpp>

#include <filesystem>
#include <sstream>

#include "cli/config_note.h"
#include "cli/dtype_option.h"
#include "formats/model_files.h"
#include "research/prompts.h"
#include "tokenizer/unicode.h"
#include "util/file.h"

namespace headlab::cli {

void add_bos_flags(CLI::App* cmd, std::optional<bool>& bos, const std::string& help) {
  // CLI11 adds +1 for each --bos and -1 for each --no-bos, and calls only when one was given
  cmd->add_flag_function(
      "--bos,!--no-bos",
      [&bos](std::int64_t n) {
        if (n == 0) throw CLI::ValidationError("--bos and --no-bos contradict each other: give one of them");
        bos = n > 0;
      },
      help);
}

Result<LoadedModel> load_model_for_cli(const std::string& path, const std::string& dtype, const std::string& compute,
                                       bool no_cache, bool need_tokenizer) {
  auto params = model::model_load(
      path, {.dtype = dtype_choice(dtype), .compute = compute_choice(compute), .cache = !no_cache});
  if (!params) return tl::unexpected(params.error());
  dtype_note(*params, dtype, compute);
  config_note(path);
  LoadedModel m;
  const auto p = std::filesystem::path(path).lexically_normal();
  m.name = p.filename().empty() ? p.parent_path().filename().string() : p.filename().string();
  m.params = std::move(*params);
  if (auto t = model::model_tokenizer_load(path)) {
    m.tokenizer = std::make_unique<model::BpeTokenizer>(std::move(*t));
  } else if (need_tokenizer || t.error().code != ErrorCode::not_found) {
    return tl::unexpected(t.error());
  }
  if (m.tokenizer)
    if (Status fits = model::config_check_tokenizer(m.params.config, m.tokenizer->vocab_size(), path); !fits)
      return tl::unexpected(fits.error());
  return m;
}

Result<std::vector<int>> parse_id_list(const std::string& text, const std::string& option) {
  // "1,,2" or a trailing comma: an id left out, not a separator twice
  for (std::size_t at = text.find(','); at != std::string::npos; at = text.find(',', at + 1)) {
    const std::size_t next = text.find_first_not_of(" \t", at + 1);
    const std::size_t prev = at == 0 ? std::string::npos : text.find_last_not_of(" \t", at - 1);
    if (next == std::string::npos || text[next] == ',' || prev == std::string::npos)
      return make_error(ErrorCode::invalid_argument, option + ": an id is missing after the comma at character " +
                                                         std::to_string(at + 1) + " (\"" + text.substr(0, 40) + "\")");
  }
  std::string spaced = text;
  for (char& ch : spaced)
    if (ch == ',') ch = ' ';
  std::vector<int> ids;
  std::istringstream in(spaced);
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
      return make_error(ErrorCode::invalid_argument, option + ": \"" + word + "\" is not a token id (a non-negative integer)");
    ids.push_back(static_cast<int>(v));
  }
  if (ids.empty()) return make_error(ErrorCode::invalid_argument, option + ": no token ids given");
  return ids;
}

Result<std::vector<analysis::RunInput>> read_inputs(const LoadedModel& m, const InputArgs& a) {
  const int given = int(!a.text.empty()) + int(!a.ids.empty()) + int(!a.prompts.empty());
  if (given != 1) return make_error(ErrorCode::invalid_argument, "give exactly one of --text, --ids and --prompts (an empty one counts as none: the input needs a token)");
  analysis::RunInputOptions io;
  io.bos = a.bos;
  io.truncate = a.truncate;
  io.truncate_hint = "pass --truncate";
  std::vector<analysis::RunInput> batch;
  if (!a.ids.empty()) {
    auto ids = parse_id_list(a.ids, "--ids");
    if (!ids) return tl::unexpected(ids.error());
    io.bos = a.bos.value_or(false);  // given ids are the input as they are
    auto in = analysis::run_input_from_ids(m.tokenizer.get(), m.params.config, std::move(*ids), io);
    if (!in) return tl::unexpected(in.error());
    batch.push_back(std::move(*in));
    return batch;
  }
  std::vector<std::string> texts;
  std::vector<int> lines;  // of the prompts file, for messages
  if (!a.text.empty()) {
    texts.push_back(a.text);
  } else {
    auto file = file_read(a.prompts, std::uint64_t(64) << 20);
    if (!file) return tl::unexpected(file.error());
    auto prompts = research::parse_prompts(*file);
    if (!prompts) {
      Error e = prompts.error();
      e.message = a.prompts + ": " + e.message;
      return tl::unexpected(e);
    }
    for (const research::PromptPair& p : *prompts) {
      texts.push_back(p.clean);
      lines.push_back(p.line);
    }
  }
  if (!m.tokenizer) return make_error(ErrorCode::invalid_argument, "this model has no tokenizer: give --ids");
  for (std::size_t i = 0; i < texts.size(); i++) {
    auto in = analysis::run_input_from_text(*m.tokenizer, m.params.config, texts[i], io);
    if (!in) {
      Error e = in.error();
      if (!lines.empty()) e.message = a.prompts + ", line " + std::to_string(lines[i]) + ": " + e.message;
      return tl::unexpected(e);
    }
    batch.push_back(std::move(*in));
  }
  return batch;
}

std::string token_label_for_table(const model::BpeTokenizer* tok, int id) {
  if (!tok) return "#" + std::to_string(id);
  std::string s;
  for (char c : tok->token_bytes(id)) {
    if (c == '\n') s += "\\n";
    else if (c == '\t') s += "\\t";
    else s.push_back(c);
  }
  return model::utf8_find_invalid(s) >= 0 ? "#" + std::to_string(id) : s;
}

}  // namespace headlab::cli
