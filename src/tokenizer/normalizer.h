// tokenizer/normalizer.h — a tokenizer.json's normalizer: the text rewritten before it is split
// (Unicode forms through utf8proc, lowercase, strip, prepend, replace, a sequence of these),
// each output byte keeping the input span it came from (tokenizer/aligned_text.h).
//
//   Normalizer n{.kind = Normalizer::Kind::replace, .pattern = " ", .content = "\u2581"};
//   AlignedText t = AlignedText::identity("a b", 0);
//   normalizer_apply(n, t);  // t.text == "a▁b", the 3 bytes of "▁" all span [1, 2)
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tokenizer/aligned_text.h"
#include "tokenizer/regex.h"

namespace headlab::model {

struct Normalizer {
  enum class Kind { nfc, nfd, nfkc, nfkd, lowercase, strip, prepend, replace, sequence };
  Kind kind = Kind::sequence;
  bool strip_left = false, strip_right = false;  // strip
  std::string prepend;                           // prepend
  std::string pattern;                           // replace: a literal string, unless regex is set
  std::optional<Regex> regex;                    // replace with a regex pattern
  std::string content;                           // replace
  std::vector<Normalizer> steps;                 // sequence, in order
};

void normalizer_apply(const Normalizer& n, AlignedText& text);

}  // namespace headlab::model
