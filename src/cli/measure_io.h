// cli/measure_io.h — what `headlab lens`, `attribute` and `compose` share: a model loaded with
// its tokenizer (notes on stderr, as `run`), the prompt options, printable token labels, CSV
// fields, and the answer written to --out or the screen.
//
//   auto m = measure_model_load(o.model, /*need_tokenizer=*/!o.text.empty());
//   if (!m) return print_error(m.error().message);
//   return measure_write(text, o.out);
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "model/parameters.h"
#include "research/text_measures.h"
#include "tokenizer/bpe_tokenizer.h"
#include "util/result.h"

namespace CLI {
class App;
}

namespace headlab::cli {

struct MeasureModel {
  model::Parameters params;
  std::unique_ptr<model::BpeTokenizer> tokenizer;  // null when the model has none and none is needed
};
// Errors: the loader's; the tokenizer's when need_tokenizer or when it exists but is broken.
Result<MeasureModel> measure_model_load(const std::string& path, bool need_tokenizer);

// --text, --ids, --bos / --no-bos and --truncate into `prompt` (ids parsed by measure_prompt).
struct PromptOptions {
  std::string text, ids;
  std::optional<bool> bos;
  bool truncate = false;
};
void add_prompt_options(CLI::App* cmd, PromptOptions& o);
// Errors: invalid_argument (neither or both of --text and --ids, an id that is not a number).
Result<research::TextPrompt> measure_prompt(const PromptOptions& o);

// A token as a table shows it: its bytes with \n and \t escaped, "#id" when not valid UTF-8.
std::string measure_token_label(const model::BpeTokenizer* tokenizer, int id);
// One CSV field (RFC 4180): quoted when it holds a comma, a quote or a line break.
std::string csv_field(std::string_view text);
// Writes to `out` (a file) or stdout; a terminal takes at most 64 KB. Returns the exit code.
int measure_write(const std::string& text, const std::string& out);
// Exit 2 for what the user typed (invalid_argument, too_long), 1 otherwise.
int measure_error(const Error& e);

}  // namespace headlab::cli
