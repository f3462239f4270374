// research/prompts.h — the inputs of the research tools beyond one text: a batch of prompts
// from a file, one per line, or JSON lines with "clean", "corrupted", "answer" and "wrong"
// (ARENA's IOI layout). One text or ids become the model's input through
// analysis::run_input_from_text / run_input_from_ids and the BOS rule there (TransformerLens's
// default_prepend_bos: on, except GPT-NeoX and Qwen 2/3; never applied to given ids).
//
//   auto batch = parse_prompts(file_text);          // lines or JSON lines
//   for (const PromptPair& p : *batch) p.clean ...
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace headlab::research {

struct PromptPair {
  std::string clean;
  std::string corrupted;  // "" when the line gives none
  std::string answer;     // the token the clean run should predict next ("" when none)
  std::string wrong;      // the token the corrupted run should predict next ("" when none)
  int line = 0;           // 1-based, for messages
};

// Lines of plain text (each a clean prompt; blank lines skipped; a trailing "\r" dropped) or
// JSON lines (a line starting with "{"), which may mix. Errors (invalid_argument, naming the
// line): a JSON line that does not parse or is not an object, an unknown key, a key whose
// value is not a string, a file with no prompt, more than max_prompts prompts.
Result<std::vector<PromptPair>> parse_prompts(std::string_view text, std::size_t max_prompts = 10000);

}  // namespace headlab::research
