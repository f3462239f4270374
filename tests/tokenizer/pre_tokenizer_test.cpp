// Tests for tokenizer/pre_tokenizer.h: each pre-tokenizer and each Split behaviour, and GPT-2's
// hand-written pattern against Oniguruma running the same pattern.
#include "tokenizer/pre_tokenizer.h"

#include <gtest/gtest.h>

#include "testing/model_fixtures.h"

using namespace headlab::model;
using K = PreTokenizer::Kind;
using Pieces = std::vector<std::string>;

namespace {

Pieces run(const PreTokenizer& p, const std::string& s) {
  Pieces out;
  for (const AlignedText& t : pre_tokenizer_apply(p, {AlignedText::identity(s, 0)})) out.push_back(t.text);
  return out;
}

PreTokenizer split_dash(SplitBehavior b, bool invert = false) {
  return {.kind = K::split, .pattern = "-", .behavior = b, .invert = invert};
}

}  // namespace

TEST(PreTokenizer, SplitHasEachOfHuggingFacesBehaviours) {
  const std::string s = "a-b--c";
  EXPECT_EQ(run(split_dash(SplitBehavior::removed), s), (Pieces{"a", "b", "c"}));
  EXPECT_EQ(run(split_dash(SplitBehavior::isolated), s), (Pieces{"a", "-", "b", "-", "-", "c"}));
  EXPECT_EQ(run(split_dash(SplitBehavior::merged_with_previous), s), (Pieces{"a-", "b-", "-", "c"}));
  EXPECT_EQ(run(split_dash(SplitBehavior::merged_with_next), s), (Pieces{"a", "-b", "-", "-c"}));
  EXPECT_EQ(run(split_dash(SplitBehavior::contiguous), s), (Pieces{"a", "-", "b", "--", "c"}));
  // invert: the matches are kept and the rest removed; each "-" is a match of its own
  EXPECT_EQ(run(split_dash(SplitBehavior::removed, true), s), (Pieces{"-", "-", "-"}));
}

TEST(PreTokenizer, SplitByRegex) {
  PreTokenizer p{.kind = K::split, .behavior = SplitBehavior::isolated};
  p.regex = *Regex::compile("\\p{N}{1,3}");
  EXPECT_EQ(run(p, "x12345"), (Pieces{"x", "123", "45"}));
}

TEST(PreTokenizer, ByteLevelSplitsWithGpt2sPatternAndAddsAPrefixSpace) {
  EXPECT_EQ(run({.kind = K::byte_level}, "it's  a"), (Pieces{"it", "'s", " ", " a"}));
  EXPECT_EQ(run({.kind = K::byte_level, .add_prefix_space = true}, "hi there"), (Pieces{" hi", " there"}));
  EXPECT_EQ(run({.kind = K::byte_level, .use_regex = false}, "hi there"), (Pieces{"hi there"}));
}

TEST(PreTokenizer, Gpt2sHandWrittenPatternMatchesOniguruma) {
  auto re = Regex::compile(std::string(kGpt2Pattern));
  ASSERT_TRUE(re);
  auto golden = headlab::testing::read_json_file(std::string(HEADLAB_SOURCE_DIR) + "/tests/fixtures/tokenizers/gpt2.json");
  std::vector<std::string> texts = {"a \u0085 b\u0085\u0085 c \ufeff\ufeff d\u2028\u2029 e \u00a0\u00a0f", "  \n\n  x  ", "'S 'll 'LL"};
  for (const auto& c : golden["cases"]) texts.push_back(c["text"].get<std::string>());
  for (const std::string& t : texts) EXPECT_EQ(byte_level_split(t), re->find_all(t)) << t;
}

TEST(PreTokenizer, DigitsIsolatedOrContiguous) {
  EXPECT_EQ(run({.kind = K::digits, .individual_digits = true}, "ab12"), (Pieces{"ab", "1", "2"}));
  EXPECT_EQ(run({.kind = K::digits}, "ab12c"), (Pieces{"ab", "12", "c"}));
}

TEST(PreTokenizer, MetaspaceReplacesSpacesAndPrependsByScheme) {
  EXPECT_EQ(run({.kind = K::metaspace}, "hi there"), (Pieces{"\u2581hi", "\u2581there"}));
  EXPECT_EQ(run({.kind = K::metaspace, .prepend_scheme = PreTokenizer::Prepend::never}, "hi there"),
            (Pieces{"hi", "\u2581there"}));
  EXPECT_EQ(run({.kind = K::metaspace, .metaspace_split = false}, "hi there"), (Pieces{"\u2581hi\u2581there"}));
  // "first": only the piece at the start of the text gets the prefix
  PreTokenizer first{.kind = K::metaspace, .prepend_scheme = PreTokenizer::Prepend::first};
  auto pieces = pre_tokenizer_apply(first, {AlignedText::identity("a", 0), AlignedText::identity("b", 1)});
  ASSERT_EQ(pieces.size(), 2u);
  EXPECT_EQ(pieces[0].text, "\u2581a");
  EXPECT_EQ(pieces[1].text, "b");
}

TEST(PreTokenizer, WhitespaceAndWhitespaceSplit) {
  PreTokenizer ws{.kind = K::whitespace};
  ws.regex = *Regex::compile("\\w+|[^\\w\\s]+");
  EXPECT_EQ(run(ws, "Hey, you!  ok"), (Pieces{"Hey", ",", "you", "!", "ok"}));
  EXPECT_EQ(run({.kind = K::whitespace_split}, "Hey, you!\u3000ok"), (Pieces{"Hey,", "you!", "ok"}));
}

TEST(PreTokenizer, PunctuationIsolatesEachMark) {
  EXPECT_EQ(run({.kind = K::punctuation}, "a,b\u3001c!!"), (Pieces{"a", ",", "b", "\u3001", "c", "!", "!"}));
}

TEST(PreTokenizer, SequenceAppliesEachToEveryPiece) {
  PreTokenizer seq{.kind = K::sequence};
  seq.steps.push_back({.kind = K::whitespace_split});
  seq.steps.push_back({.kind = K::digits, .individual_digits = true});
  EXPECT_EQ(run(seq, "a1 b22"), (Pieces{"a", "1", "b", "2", "2"}));
}

TEST(PreTokenizer, PiecesKeepTheirInputSpans) {
  auto pieces = pre_tokenizer_apply({.kind = K::metaspace}, {AlignedText::identity("ab cd", 10)});
  ASSERT_EQ(pieces.size(), 2u);
  EXPECT_EQ(pieces[1].input_begin(0), 12);  // "▁" stands for the space at 12
  EXPECT_EQ(pieces[1].end.back(), 15);
}

TEST(PreTokenizer, Gpt2sSplitMatchesGpt2sPythonOriginal) {
  // tests/fixtures/tokenizers/gpt2_python_split.json: encoder.py's pattern in Python's regex
  auto golden = headlab::testing::read_json_file(std::string(HEADLAB_SOURCE_DIR) +
                                                 "/tests/fixtures/tokenizers/gpt2_python_split.json");
  int cases = 0;
  for (const auto& c : golden["cases"]) {
    const std::string text = c["text"].get<std::string>();
    std::vector<std::pair<int, int>> expected;
    for (const auto& s : c["spans"]) expected.emplace_back(s[0].get<int>(), s[1].get<int>());
    EXPECT_EQ(byte_level_split(text), expected) << text;
    cases++;
  }
  EXPECT_GT(cases, 20);
}
