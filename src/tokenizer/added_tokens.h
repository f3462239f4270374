// tokenizer/added_tokens.h — a tokenizer.json's added tokens ("<|begin_of_text|>", "<s>", ...):
// found in the text before anything else, leftmost first and the longest at a place, as
// Hugging Face does; lstrip/rstrip take the white space beside a token into it,
// single_word wants no word character beside it. Tokens with normalized=false are looked
// for in the input, the others in the normalized text.
//
//   AddedTokenMatcher m({{.id = 1, .content = "<s>", .special = true}});
//   m.find("a<s>b", true);  // {id 1, [1, 4)}
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace headlab::model {

struct AddedToken {
  int id = 0;
  std::string content;
  bool special = false;
  bool lstrip = false, rstrip = false, normalized = false, single_word = false;
};

struct AddedTokenMatch {
  int id = 0;
  int begin = 0, end = 0;  // byte span in the text searched, with any stripped white space
};

class AddedTokenMatcher {
 public:
  AddedTokenMatcher() = default;
  explicit AddedTokenMatcher(std::vector<AddedToken> tokens);
  bool empty() const { return tokens_.empty(); }
  // The matches in text, in order, not overlapping; special tokens only when with_special.
  std::vector<AddedTokenMatch> find(std::string_view text, bool with_special) const;

 private:
  std::vector<AddedToken> tokens_;
  std::vector<std::vector<int>> by_first_byte_;  // (256) indices into tokens_, longest first
};

}  // namespace headlab::model
