#include "train/lr_schedule.h"

#include <gtest/gtest.h>

using namespace headlab;
using namespace headlab::train;

TEST(LrSchedule, WarmsUpLinearly) {
  LrSchedule s{.lr = 1.0f, .warmup_steps = 4, .total_steps = 100, .decay = LrDecay::cosine};
  EXPECT_FLOAT_EQ(learning_rate_at(s, 0), 0.25f);
  EXPECT_FLOAT_EQ(learning_rate_at(s, 3), 1.0f);
}

TEST(LrSchedule, CosineEndsAtMinimum) {
  LrSchedule s{.lr = 1.0f, .warmup_steps = 10, .total_steps = 110, .decay = LrDecay::cosine,
               .min_lr_fraction = 0.1f};
  EXPECT_FLOAT_EQ(learning_rate_at(s, 10), 1.0f);
  EXPECT_NEAR(learning_rate_at(s, 109), 0.1f, 1e-6);
  EXPECT_NEAR(learning_rate_at(s, 500), 0.1f, 1e-6);  // past the end: stays at the floor
  EXPECT_GT(learning_rate_at(s, 30), learning_rate_at(s, 80));
}

TEST(LrSchedule, ConstantStaysAfterWarmup) {
  LrSchedule s{.lr = 3e-4f, .warmup_steps = 2, .total_steps = 50, .decay = LrDecay::constant};
  EXPECT_FLOAT_EQ(learning_rate_at(s, 40), 3e-4f);
}

TEST(LrDecayName, RejectsUnknownName) {
  EXPECT_EQ(*lr_decay_from_name("cosine"), LrDecay::cosine);
  auto bad = lr_decay_from_name("linear");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, ErrorCode::invalid_argument);
}
