#include "core/causal_mask.h"

#include <cmath>

#include <gtest/gtest.h>

using namespace headlab;
using namespace headlab::core;

TEST(CausalMask, HidesFuturePositions) {
  Matrix s(4, 4, 1.0);
  causal_mask_apply(s);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) {
      if (j > i) EXPECT_TRUE(std::isinf(s.at(i, j)) && s.at(i, j) < 0);
      else EXPECT_EQ(s.at(i, j), 1.0);
    }
}

TEST(CausalMask, KeepsTheDiagonalVisible) {
  Matrix s(3, 3, 2.0);
  causal_mask_apply(s);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(s.at(i, i), 2.0);
  EXPECT_FALSE(is_future(2, 2));
  EXPECT_TRUE(is_future(1, 2));
}
