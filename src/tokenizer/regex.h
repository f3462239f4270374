// tokenizer/regex.h — the regexes of a tokenizer.json, through Oniguruma, the engine Hugging
// Face's tokenizers compiles them with (its default syntax, UTF-8), so `\s` is Unicode
// White_Space and `(?i:...)`, `\p{L}`, look-aheads behave exactly as there.
//
//   Result<Regex> re = Regex::compile("\\p{N}{1,3}");
//   std::vector<std::pair<int, int>> m = re->find_all("a 12345");  // {2,5}, {5,7}
//
// Thread-safe: a compiled regex is shared read-only; each search has its own region.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/result.h"

namespace headlab::model {

class Regex {
 public:
  // Errors: invalid_argument with Oniguruma's message for a pattern it cannot compile.
  static Result<Regex> compile(const std::string& pattern);
  // The byte spans [begin, end) of the successive non-overlapping matches in text (an
  // empty match moves the search on by one character, as Rust's find_iter does).
  std::vector<std::pair<int, int>> find_all(std::string_view text) const;

 private:
  std::shared_ptr<void> regex_;  // OnigRegex, freed with onig_free
};

}  // namespace headlab::model
