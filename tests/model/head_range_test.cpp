// Tests for model/head_range.h: one wording for a layer or head the model does not have.
#include "model/head_range.h"

#include <gtest/gtest.h>

using namespace headlab;
using namespace headlab::model;

namespace {
ModelConfig two_by_four() {
  ModelConfig c;
  c.n_layer = 2;
  c.n_head = 4;
  return c;
}
}  // namespace

TEST(HeadRange, AcceptsEveryHeadTheModelHas) {
  for (int l = 0; l < 2; ++l)
    for (int h = 0; h < 4; ++h) EXPECT_TRUE(check_layer_head(two_by_four(), l, h));
}

TEST(HeadRange, NamesTheLayersThereAre) {
  Status s = check_layer_head(two_by_four(), 2, 0);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, ErrorCode::invalid_argument);
  EXPECT_EQ(s.error().message, "layer 2 does not exist: the model has layers 0 to 1");
  EXPECT_FALSE(check_layer(two_by_four(), -1));
}

TEST(HeadRange, NamesTheHeadsThereAre) {
  Status s = check_layer_head(two_by_four(), 0, 4);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().message, "head 4 does not exist: each layer has heads 0 to 3");
}

TEST(HeadRange, MinusOneMeansEveryHeadOnlyWhenAllowed) {
  EXPECT_FALSE(check_head(two_by_four(), -1));
  EXPECT_TRUE(check_head(two_by_four(), -1, /*every_head_ok=*/true));
  Status s = check_head(two_by_four(), -2, true);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("(or -1 for every head)"), std::string::npos);
}
