// Tests for tokenizer/normalizer.h: each normalizer's text, and the input span of its bytes.
#include "tokenizer/normalizer.h"

#include <gtest/gtest.h>

using namespace headlab::model;
using K = Normalizer::Kind;

namespace {

AlignedText run(const Normalizer& n, const std::string& s) {
  AlignedText t = AlignedText::identity(s, 0);
  normalizer_apply(n, t);
  return t;
}

}  // namespace

TEST(Normalizer, NfcComposesAndKeepsTheSpanOfWhatItComposed) {
  const AlignedText t = run({.kind = K::nfc}, "e\u0301x");  // e + COMBINING ACUTE, x
  EXPECT_EQ(t.text, "\u00e9x");
  EXPECT_EQ(t.begin[0], 0);
  EXPECT_EQ(t.end[1], 3);  // é (2 bytes) spans the 3 input bytes
  EXPECT_EQ(t.begin[2], 3);
}

TEST(Normalizer, NfdAndNfkdDecompose) {
  EXPECT_EQ(run({.kind = K::nfd}, "\u00e9").text, "e\u0301");
  EXPECT_EQ(run({.kind = K::nfkd}, "\ufb01").text, "fi");  // the ligature ﬁ
  EXPECT_EQ(run({.kind = K::nfkc}, "\u00bd").text, "1\u20442");  // ½
  EXPECT_EQ(run({.kind = K::nfc}, "\ufb01").text, "\ufb01");     // not a compatibility form
}

TEST(Normalizer, LowercaseMapsEachCharacter) {
  EXPECT_EQ(run({.kind = K::lowercase}, "ÀB Σ").text, "àb σ");
}

// Hugging Face's Lowercase is Rust's str::to_lowercase (the JS port's toLowerCase): Unicode's
// full mappings, not one character for one — Σ ends a word as ς, and İ becomes i + U+0307.
TEST(Normalizer, LowercaseEndsAWordWithFinalSigma) {
  EXPECT_EQ(run({.kind = K::lowercase}, "ΟΔΟΣ ΣΑΣ. ΣΑΣ.Σ Σ").text, "οδος σας. σασ.ς σ");
  EXPECT_EQ(run({.kind = K::lowercase}, "AΣ\u0301 xΣ'Σ").text, "aς\u0301 xσ'ς");  // marks and ' are skipped
}

TEST(Normalizer, LowercaseGivesDottedCapitalITwoCharactersWithItsSpan) {
  const AlignedText t = run({.kind = K::lowercase}, "\u0130x");  // İ (2 bytes), x
  EXPECT_EQ(t.text, "i\u0307x");
  for (int i = 0; i < 3; i++) {  // i and U+0307 both come from İ
    EXPECT_EQ(t.begin[i], 0);
    EXPECT_EQ(t.end[i], 2);
  }
  EXPECT_EQ(t.begin[3], 2);
}

TEST(Normalizer, StripRemovesWhiteSpaceAtTheChosenEnds) {
  EXPECT_EQ(run({.kind = K::strip, .strip_left = true, .strip_right = true}, " \t a b \u3000").text, "a b");
  EXPECT_EQ(run({.kind = K::strip, .strip_left = false, .strip_right = true}, "  a  ").text, "  a");
}

TEST(Normalizer, PrependAddsToANonEmptyTextOnly) {
  const AlignedText t = run({.kind = K::prepend, .prepend = "\u2581"}, "hi");
  EXPECT_EQ(t.text, "\u2581hi");
  EXPECT_EQ(t.begin[0], 0);
  EXPECT_EQ(t.end[0], 0);  // stands for no input byte
  EXPECT_EQ(run({.kind = K::prepend, .prepend = "\u2581"}, "").text, "");
}

TEST(Normalizer, ReplaceSubstitutesAStringOrARegex) {
  const AlignedText t = run({.kind = K::replace, .pattern = " ", .content = "\u2581"}, "a b");
  EXPECT_EQ(t.text, "a\u2581b");
  EXPECT_EQ(t.begin[1], 1);
  EXPECT_EQ(t.end[3], 2);
  Normalizer re{.kind = K::replace, .content = "#"};
  re.regex = *Regex::compile("\\d+");
  EXPECT_EQ(run(re, "a12b3").text, "a#b#");
}

TEST(Normalizer, SequenceAppliesEachInOrder) {
  Normalizer seq{.kind = K::sequence};
  seq.steps.push_back({.kind = K::prepend, .prepend = "\u2581"});
  seq.steps.push_back({.kind = K::replace, .pattern = " ", .content = "\u2581"});
  EXPECT_EQ(run(seq, "a b").text, "\u2581a\u2581b");
}
