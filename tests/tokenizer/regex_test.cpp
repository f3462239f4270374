// Tests for tokenizer/regex.h: Oniguruma with Hugging Face's meaning of the patterns.
#include "tokenizer/regex.h"

#include <gtest/gtest.h>

using namespace headlab::model;
using headlab::ErrorCode;

using Spans = std::vector<std::pair<int, int>>;

TEST(Regex, FindsSuccessiveMatches) {
  auto re = Regex::compile("\\p{N}{1,3}");
  ASSERT_TRUE(re) << re.error().message;
  EXPECT_EQ(re->find_all("a 12345"), (Spans{{2, 5}, {5, 7}}));
}

TEST(Regex, ReadsSpaceAsUnicodeWhiteSpace) {
  auto re = Regex::compile("\\s");
  ASSERT_TRUE(re);
  EXPECT_EQ(re->find_all("a\u0085b").size(), 1u);     // NEXT LINE is White_Space
  EXPECT_TRUE(re->find_all("a\ufeffb").empty());      // ZERO WIDTH NO-BREAK SPACE is not
  EXPECT_EQ(re->find_all("\u3000\u00a0").size(), 2u);
}

TEST(Regex, HonoursCaseInsensitiveGroupsAndLookahead) {
  auto re = Regex::compile("(?i:'s|'ll)|\\s+(?!\\S)");
  ASSERT_TRUE(re);
  EXPECT_EQ(re->find_all("IT'S WE'LL"), (Spans{{2, 4}, {7, 10}}));
  EXPECT_EQ(re->find_all("a   b"), (Spans{{1, 3}}));
}

TEST(Regex, StepsOverOneCharacterAfterAnEmptyMatch) {
  auto re = Regex::compile("x*");
  ASSERT_TRUE(re);
  // at 0 (empty), then "xx" at 2 (after é, two bytes), then the empty match at the end
  EXPECT_EQ(re->find_all("\u00e9xx"), (Spans{{0, 0}, {2, 4}, {4, 4}}));
}

TEST(Regex, RejectsABadPatternWithOnigurumasMessage) {
  auto re = Regex::compile("(unclosed");
  ASSERT_FALSE(re);
  EXPECT_EQ(re.error().code, ErrorCode::invalid_argument);
  EXPECT_NE(re.error().message.find("(unclosed"), std::string::npos);
}
