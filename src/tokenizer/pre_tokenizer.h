// tokenizer/pre_tokenizer.h — a tokenizer.json's pre-tokenizer: the normalized text cut into
// the pieces BPE merges within (ByteLevel with GPT-2's pattern, Split by a regex or string
// with each of Hugging Face's behaviours, Digits, Metaspace, Whitespace, WhitespaceSplit,
// Punctuation, a Sequence of these). Each piece keeps its bytes' input spans.
//
//   PreTokenizer p{.kind = PreTokenizer::Kind::digits, .individual_digits = true};
//   pre_tokenizer_apply(p, {AlignedText::identity("ab12", 0)});  // "ab", "1", "2"
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tokenizer/aligned_text.h"
#include "tokenizer/regex.h"

namespace headlab::model {

// What Split does with the parts that match (Hugging Face's SplitDelimiterBehavior).
enum class SplitBehavior { removed, isolated, merged_with_previous, merged_with_next, contiguous };

struct PreTokenizer {
  enum class Kind { byte_level, split, digits, metaspace, whitespace, whitespace_split, punctuation, sequence };
  Kind kind = Kind::sequence;
  bool add_prefix_space = false;  // byte_level
  bool use_regex = true;          // byte_level: split with GPT-2's pattern
  std::optional<Regex> regex;     // split (a regex), whitespace (\w+|[^\w\s]+)
  std::string pattern;            // split by a literal string (when regex is empty)
  SplitBehavior behavior = SplitBehavior::isolated;  // split, punctuation
  bool invert = false;            // split
  bool individual_digits = false; // digits
  std::string replacement = "\u2581";  // metaspace
  enum class Prepend { always, first, never } prepend_scheme = Prepend::always;  // metaspace
  bool metaspace_split = true;    // metaspace
  std::vector<PreTokenizer> steps;  // sequence
};

// Cuts each of pieces further; empty pieces are dropped, as Hugging Face does.
// `first`: the pieces begin the text (Metaspace's prepend_scheme "first").
std::vector<AlignedText> pre_tokenizer_apply(const PreTokenizer& p, std::vector<AlignedText> pieces, bool first = true);

// GPT-2's pattern, 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+,
// by hand (five times faster than the regex; a test holds it to Oniguruma on the same
// pattern): the byte spans of the pieces of valid UTF-8 text.
std::vector<std::pair<int, int>> byte_level_split(std::string_view text);

// The same pattern as a string, for the test and for Oniguruma.
inline constexpr std::string_view kGpt2Pattern =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

}  // namespace headlab::model
