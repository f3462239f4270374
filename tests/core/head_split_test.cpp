#include "core/head_split.h"

#include <gtest/gtest.h>

using namespace headlab;
using namespace headlab::core;

TEST(HeadSplit, TransformerBaseHas64WideHeadsAndAMillionProjectionWeights) {
  auto s = head_split(512, 8);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->d_k, 64);
  EXPECT_EQ(s->projection_weights, 1048576);
  EXPECT_EQ(with_thousands_separators(s->projection_weights), "1,048,576");
}

TEST(HeadSplit, PresetsGiveTheirPerHeadWidths) {
  const auto& presets = head_split_presets();
  ASSERT_EQ(presets.size(), 3u);
  EXPECT_EQ(head_split(presets[1].d_model, presets[1].h)->d_k, 64);    // GPT-2 small
  EXPECT_EQ(head_split(presets[2].d_model, presets[2].h)->d_k, 128);   // GPT-3 175B
  EXPECT_EQ(head_split(768, 12)->projection_weights, 2359296);
}

TEST(HeadSplit, RejectsAHeadCountThatDoesNotDivideAndSuggestsDivisors) {
  auto s = head_split(768, 7);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, ErrorCode::invalid_argument);
  EXPECT_NE(s.error().message.find("divide"), std::string::npos);
  EXPECT_NE(s.error().message.find("h = 6 or h = 8"), std::string::npos);
}

TEST(HeadSplit, RejectsZeroNegativeAndAbsurdValues) {
  EXPECT_FALSE(head_split(0, 8));
  EXPECT_FALSE(head_split(-512, 8));
  EXPECT_FALSE(head_split(512, 0));
  EXPECT_FALSE(head_split(512, -8));
  EXPECT_FALSE(head_split(512, 1024));
  EXPECT_FALSE(head_split(kMaxModelWidth + 1, 1));
  EXPECT_TRUE(head_split(kMaxModelWidth, 1));
}

TEST(ThousandsSeparators, GroupDigitsInThrees) {
  EXPECT_EQ(with_thousands_separators(0), "0");
  EXPECT_EQ(with_thousands_separators(999), "999");
  EXPECT_EQ(with_thousands_separators(1000), "1,000");
  EXPECT_EQ(with_thousands_separators(-1234567), "-1,234,567");
}
