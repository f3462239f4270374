// cli/measure_io.h — what `headlab lens`, `attribute` and `compose` share beyond
// cli/text_or_ids.h (the model and its tokenizer, token labels, id lists): the model and prompt
// options, the prompt as research/text_measures.h takes it, CSV fields, and the answer written
// to --out or the screen.
//
//   auto m = load_model_for_cli(o.model.path, o.model.dtype, o.model.compute, o.model.no_cache, need_tokenizer);
//   if (!m) return print_error(m.error().message);
//   return measure_write(text, o.out);
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "model/parameters.h"
#include "research/text_measures.h"
#include "cli/text_or_ids.h"
#include "tokenizer/bpe_tokenizer.h"
#include "util/result.h"

namespace CLI {
class App;
}

namespace headlab::cli {

// --model, --dtype, --compute, --no-cache.
struct ModelOptions {
  std::string path;
  std::string dtype = "auto", compute = "f32";
  bool no_cache = false;
};
void add_model_options(CLI::App* cmd, ModelOptions& o);

// --text, --ids, --bos / --no-bos and --truncate into `prompt` (ids parsed by measure_prompt).
struct PromptOptions {
  std::string text, ids;
  std::optional<bool> bos;
  bool truncate = false;
};
void add_prompt_options(CLI::App* cmd, PromptOptions& o);
// Errors: invalid_argument (neither or both of --text and --ids, an id that is not a number).
Result<research::TextPrompt> measure_prompt(const PromptOptions& o);

// One CSV field (RFC 4180): quoted when it holds a comma, a quote or a line break.
std::string csv_field(std::string_view text);
// Writes to `out` (a file) or stdout; a terminal takes at most 64 KB. Returns the exit code.
int measure_write(const std::string& text, const std::string& out);
// Exit 2 for what the user typed (invalid_argument, too_long), 1 otherwise.
int measure_error(const Error& e);

}  // namespace headlab::cli
