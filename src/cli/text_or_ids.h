// cli/text_or_ids.h — what `headlab cache` and `headlab intervene` read before they run: the
// model (a Hugging Face folder or a .gguf file) with its tokenizer, and the input from
// --text, --ids or --prompts FILE, by the BOS rule (analysis/run_text.h), never applied to
// given ids unless asked.
//
//   auto m = load_model_for_cli(o.model, o.dtype, o.compute, o.no_cache, /*need_tokenizer=*/!o.text.empty());
//   auto batch = read_inputs(*m, {.text = o.text, .ids = o.ids, .prompts = o.prompts, .bos = o.bos});
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "analysis/run_text.h"
#include "model/parameters.h"
#include "tokenizer/bpe_tokenizer.h"
#include "util/result.h"

namespace CLI {
class App;
}

namespace headlab::cli {

// --bos / --no-bos into `bos` (unset when neither is given); both at once is a usage error (it
// was read as --no-bos). `help` says what neither means for the command.
void add_bos_flags(CLI::App* cmd, std::optional<bool>& bos, const std::string& help);

struct LoadedModel {
  std::string name;  // the folder's or the file's name, for metadata
  model::Parameters params;
  std::unique_ptr<model::BpeTokenizer> tokenizer;  // null when the model has none and none was needed
};

// Errors: the loader's; the tokenizer's when `need_tokenizer` (a text to encode) or when it
// exists but does not load or does not fit the model.
Result<LoadedModel> load_model_for_cli(const std::string& path, const std::string& dtype, const std::string& compute,
                                       bool no_cache, bool need_tokenizer);

struct InputArgs {
  std::string text;
  std::string ids;      // "464 3797 3332" or "464,3797,3332"
  std::string prompts;  // a file of prompts: plain lines or JSON lines (research/prompts.h); their "clean" text
  std::optional<bool> bos;  // unset: the family's rule for texts, none for ids
  bool truncate = false;    // keep BOS and the last tokens of a longer input (n_ctx in all)
};

// Exactly one of text, ids and prompts. Errors: invalid_argument (none or several given, bad
// ids, a prompts file that does not parse), not_found (the file), too_long, the tokenizer's.
Result<std::vector<analysis::RunInput>> read_inputs(const LoadedModel& m, const InputArgs& args);

// "464,3797 3332" -> ids. Errors: invalid_argument naming the bad word.
Result<std::vector<int>> parse_id_list(const std::string& text, const std::string& option);

// A token for a table: its text with \n and \t escaped, or #id when it is not valid UTF-8.
std::string token_label_for_table(const model::BpeTokenizer* tokenizer, int id);

}  // namespace headlab::cli
