// util/json_depth.h: JSON nested too deeply is found before a parser recurses over it.
#include "util/json_depth.h"

#include <string>

#include <gtest/gtest.h>

using namespace headlab;

namespace {
std::string nested(int depth, char open = '[', char close = ']') {
  return std::string(std::size_t(depth), open) + std::string(std::size_t(depth), close);
}
}  // namespace

TEST(JsonDepth, SixtyFourLevelsPassAndSixtyFiveAreRefusedAtTheByteThatOpensThem) {
  EXPECT_TRUE(json_depth_check(nested(kMaxJsonDepth), "x"));
  auto s = json_depth_check("  " + nested(kMaxJsonDepth + 1), "config.json");
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, ErrorCode::corrupt);
  EXPECT_EQ(s.error().message.rfind("config.json: JSON nested deeper than 64 levels (at byte 66)", 0), 0u)
      << s.error().message;
}

TEST(JsonDepth, AHundredThousandLevelsOfObjectsAreRefusedWithTheCallersCode) {
  std::string deep;
  for (int i = 0; i < 100000; i++) deep += "{\"a\":";
  deep += "1" + std::string(100000, '}');
  auto s = json_depth_check(deep, "The request body", ErrorCode::invalid_argument);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, ErrorCode::invalid_argument);
}

TEST(JsonDepth, BracketsInsideStringsAndEscapedQuotesDoNotCount) {
  const std::string text = "{\"k\": \"" + std::string(500, '[') + "\\\" {{{\", \"v\": [1, [2]]}";
  EXPECT_TRUE(json_depth_check(text, "x"));
  EXPECT_EQ(json_too_deep_at(text, 3), std::string::npos);
  EXPECT_NE(json_too_deep_at(text, 2), std::string::npos);  // the [2] in [1, [2]] inside the object is level 3
}

TEST(JsonDepth, UnbalancedOrInvalidTextIsLeftToTheParser) {
  EXPECT_TRUE(json_depth_check("]]]}}} not json", "x"));
  EXPECT_TRUE(json_depth_check("", "x"));
  EXPECT_TRUE(json_depth_check("\"unterminated [[[[", "x"));
}
