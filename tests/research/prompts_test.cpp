// Tests for research/prompts.h: a batch of prompts from plain lines or JSON lines.
#include <gtest/gtest.h>

#include "research/prompts.h"

using headlab::research::parse_prompts;

TEST(Prompts, PlainLinesAndJsonLinesMixAndBlankLinesAreSkipped) {
  auto p = parse_prompts("When Mary and John went\r\n\n{\"clean\": \"a b\", \"corrupted\": \"a c\", \"answer\": \" b\", \"wrong\": \" c\"}\n");
  ASSERT_TRUE(p) << p.error().message;
  ASSERT_EQ(p->size(), 2u);
  EXPECT_EQ((*p)[0].clean, "When Mary and John went");
  EXPECT_EQ((*p)[1].corrupted, "a c");
  EXPECT_EQ((*p)[1].wrong, " c");
  EXPECT_EQ((*p)[1].line, 3);
}

TEST(Prompts, JunkIsRefusedNamingTheLine) {
  for (const char* junk : {"", "\n\n  \n", "ok\n{\"clean\": 3}", "{\"clean\": \"x\", \"answr\": \"y\"}", "{not json",
                           "{\"corrupted\": \"x\"}", "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
                           "{\"clean\": {\"a\": {\"b\": {\"c\": {\"d\": {\"e\": {\"f\": {\"g\": {\"h\": 1}}}}}}}}}"}) {
    auto p = parse_prompts(junk);
    if (std::string(junk).rfind("[[", 0) == 0) {  // not JSON (it does not start with '{'): a plain prompt
      EXPECT_TRUE(p);
      continue;
    }
    ASSERT_FALSE(p) << junk;
    EXPECT_FALSE(p.error().message.empty());
  }
  auto p = parse_prompts("a\nb\nc\n", 2);
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().message.find("line 3"), std::string::npos) << p.error().message;
}
