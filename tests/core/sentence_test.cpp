#include "core/sentence.h"

#include <gtest/gtest.h>

using namespace headlab;
using namespace headlab::core;

TEST(Sentence, LessonSentenceHasTenTokens) {
  auto t = tokenize_sentence(kLessonSentence);
  ASSERT_TRUE(t);
  ASSERT_EQ(t->size(), 10u);
  EXPECT_EQ((*t)[2], "chased");
  EXPECT_EQ((*t)[5], ".");
}

TEST(Sentence, PunctuationBecomesItsOwnToken) {
  auto t = tokenize_sentence("Hello, world! (yes)");
  ASSERT_TRUE(t);
  std::vector<std::string> want = {"Hello", ",", "world", "!", "(", "yes", ")"};
  EXPECT_EQ(*t, want);
}

TEST(Sentence, ApostropheInsideAWordStays) {
  auto t = tokenize_sentence("don't 'quote'");
  ASSERT_TRUE(t);
  std::vector<std::string> want = {"don't", "'", "quote", "'"};
  EXPECT_EQ(*t, want);
}

TEST(Sentence, TypographicMarksAreSplitToo) {
  auto t = tokenize_sentence("wait\u2026 \u201Cyes\u201D");
  ASSERT_TRUE(t);
  std::vector<std::string> want = {"wait", "\u2026", "\u201C", "yes", "\u201D"};
  EXPECT_EQ(*t, want);
}

TEST(Sentence, AccentedWordsStayWhole) {
  auto t = tokenize_sentence("caf\u00E9 na\u00EFve");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->size(), 2u);
  EXPECT_EQ((*t)[0], "caf\u00E9");
}

TEST(Sentence, RejectsEmptyText) {
  auto t = tokenize_sentence("   \n ");
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().code, ErrorCode::invalid_argument);
  EXPECT_NE(t.error().message.find("empty"), std::string::npos);
}

TEST(Sentence, RejectsMoreThan32TokensAndSaysTheLimit) {
  std::string text;
  for (int i = 0; i < 33; ++i) text += "w ";
  auto t = tokenize_sentence(text);
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().code, ErrorCode::too_long);
  EXPECT_NE(t.error().message.find("33 tokens"), std::string::npos);
  EXPECT_NE(t.error().message.find("at most 32"), std::string::npos);
}

TEST(Sentence, AcceptsExactly32Tokens) {
  std::string text;
  for (int i = 0; i < 32; ++i) text += "w ";
  EXPECT_TRUE(tokenize_sentence(text));
}

TEST(Sentence, RejectsInvalidUtf8) {
  auto t = tokenize_sentence("bad \xC3\x28 byte");
  ASSERT_FALSE(t);
  EXPECT_NE(t.error().message.find("UTF-8"), std::string::npos);
}

TEST(Sentence, RejectsOverlongText) {
  auto t = tokenize_sentence(std::string(kMaxSentenceBytes + 1, 'a'));
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().code, ErrorCode::too_long);
}

TEST(Utf8, RejectsOverlongsSurrogatesAndTruncation) {
  EXPECT_TRUE(is_valid_utf8("plain \xE2\x80\xA6 \xF0\x9F\x98\x80"));
  EXPECT_FALSE(is_valid_utf8("\xC0\xAF"));          // overlong '/'
  EXPECT_FALSE(is_valid_utf8("\xED\xA0\x80"));      // surrogate
  EXPECT_FALSE(is_valid_utf8("\xE2\x80"));          // truncated
  EXPECT_FALSE(is_valid_utf8("\xF4\x90\x80\x80"));  // above U+10FFFF
}

TEST(Punctuation, KnowsMarksFromWords) {
  EXPECT_TRUE(is_punctuation("."));
  EXPECT_TRUE(is_punctuation("\u2014"));
  EXPECT_FALSE(is_punctuation("dog"));
  EXPECT_FALSE(is_punctuation(".."));
  EXPECT_FALSE(is_punctuation(""));
}
