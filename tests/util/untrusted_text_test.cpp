// util/untrusted_text_test.cpp — a learner's text cannot drive a terminal, hide characters
// in a nickname or pass for another learner's name.
#include "util/untrusted_text.h"

#include <gtest/gtest.h>

namespace headlab {
namespace {

const std::string kFffd = "\xEF\xBF\xBD";

TEST(EscapeControls, ReplacesC0C1AndBidiControls) {
  EXPECT_EQ(escape_controls("a\x1b[31mb"), "a" + kFffd + "[31mb");
  EXPECT_EQ(escape_controls("x\xC2\x9B" "2J"), "x" + kFffd + "2J");           // U+009B CSI
  EXPECT_EQ(escape_controls("\xE2\x80\xAE" "evil"), kFffd + "evil");             // U+202E
  EXPECT_EQ(escape_controls("\xE2\x81\xA6x\xE2\x81\xA9"), kFffd + "x" + kFffd);  // U+2066, U+2069
  EXPECT_EQ(escape_controls("\xE2\x80\x8F"), kFffd);                          // U+200F
  EXPECT_EQ(escape_controls("del\x7f"), "del" + kFffd);
}

TEST(EscapeControls, ReplacesBytesThatAreNotUtf8) {
  EXPECT_EQ(escape_controls("a\x9b" "b"), "a" + kFffd + "b");  // a raw 8-bit CSI
}

TEST(EscapeControls, KeepsTextAndTheBytesAskedFor) {
  EXPECT_EQ(escape_controls("Ada \xC3\xA9t\xC3\xA9 \xE2\x9C\x93"), "Ada \xC3\xA9t\xC3\xA9 \xE2\x9C\x93");
  EXPECT_EQ(escape_controls("a\tb\nc"), "a" + kFffd + "b" + kFffd + "c");
  EXPECT_EQ(escape_controls("a\tb\nc", "\t\r\n"), "a\tb\nc");
}

TEST(CleanNickname, NormalisesWithNfkcAndTrims) {
  auto n = clean_nickname("  \xEF\xBC\xA1\xEF\xBD\x84\xEF\xBD\x81 ");  // fullwidth "Ａｄａ"
  ASSERT_TRUE(n) << n.error().message;
  EXPECT_EQ(n->text, "Ada");
  EXPECT_EQ(n->key, "ada");
}

TEST(CleanNickname, KeyFoldsCaseBeyondAscii) {
  EXPECT_EQ(nickname_key("\xC3\x89MILE"), nickname_key("\xC3\xA9mile"));  // ÉMILE, émile
  EXPECT_EQ(nickname_key("Stra\xC3\x9F" "e"), nickname_key("STRASSE"));
}

TEST(CleanNickname, RefusesZeroWidthCharactersNamingThem) {
  auto n = clean_nickname("Ad\xE2\x80\x8B" "a");
  ASSERT_FALSE(n);
  EXPECT_EQ(n.error().code, ErrorCode::invalid_argument);
  EXPECT_NE(n.error().message.find("U+200B"), std::string::npos) << n.error().message;
  EXPECT_NE(n.error().message.find("zero-width"), std::string::npos) << n.error().message;
  for (const char* s : {"A\xE2\x80\x8D" "da", "A\xE2\x81\xA0" "da", "\xEF\xBB\xBF" "Ada"}) EXPECT_FALSE(clean_nickname(s)) << s;
}

TEST(CleanNickname, RefusesBidiMarksAndControls) {
  auto rlo = clean_nickname("Ada\xE2\x80\xAE" "x");
  ASSERT_FALSE(rlo);
  EXPECT_NE(rlo.error().message.find("U+202E"), std::string::npos) << rlo.error().message;
  EXPECT_FALSE(clean_nickname("Ada\xE2\x80\x8E"));     // U+200E
  EXPECT_FALSE(clean_nickname("A\xC2\x9B" "da"));      // U+009B
  EXPECT_FALSE(clean_nickname("A\x1b" "da"));
  EXPECT_FALSE(clean_nickname("\xE3\x85\xA4"));        // U+3164 Hangul filler
  EXPECT_FALSE(clean_nickname("a\x9b"));               // not UTF-8
}

TEST(CleanNickname, RefusesLatinMixedWithCyrillicOrGreek) {
  auto n = clean_nickname("\xD0\x90" "da");  // Cyrillic А + "da"
  ASSERT_FALSE(n);
  EXPECT_NE(n.error().message.find("U+0410"), std::string::npos) << n.error().message;
  EXPECT_NE(n.error().message.find("Cyrillic"), std::string::npos) << n.error().message;
  EXPECT_FALSE(clean_nickname("Ad\xCE\xB1"));  // Greek alpha
}

TEST(CleanNickname, AcceptsOneAlphabetWithDigitsAndMarks) {
  EXPECT_TRUE(clean_nickname("\xD0\x90\xD0\xBD\xD1\x8F 2"));  // "Аня 2"
  EXPECT_TRUE(clean_nickname("\xCE\x9D\xCE\xAF\xCE\xBA\xCE\xBF\xCF\x82"));  // Νίκος
  EXPECT_TRUE(clean_nickname("Zo\xC3\xAB_42"));
  EXPECT_TRUE(clean_nickname("\xE5\xB0\x8F\xE6\x98\x8E"));  // 小明
}

TEST(CleanNickname, RefusesEmptyAndOverLong) {
  EXPECT_FALSE(clean_nickname("   "));
  EXPECT_TRUE(clean_nickname(std::string(24, 'a')));
  auto n = clean_nickname(std::string(25, 'a'));
  ASSERT_FALSE(n);
  EXPECT_NE(n.error().message.find("24"), std::string::npos);
}

TEST(DisplayWidth, CountsWideCharactersTwiceAndCombiningMarksNotAtAll) {
  EXPECT_EQ(display_width("Ada"), 3u);
  EXPECT_EQ(display_width("\u5B66\u751F"), 4u);        // 学生: two wide characters
  EXPECT_EQ(display_width("e\u0301"), 1u);              // e and a combining acute
  EXPECT_EQ(display_width("\u00E9l\u00E8ve"), 5u);      // élève, precomposed
  EXPECT_EQ(display_width("\xFF"), 1u);                 // a byte that is not UTF-8
}

}  // namespace
}  // namespace headlab
