// server/api/login_backoff_test.cpp — failed logins slow down one key, doubling, capped,
// forgiven by a success or an idle hour.
#include "server/api/login_backoff.h"

#include <gtest/gtest.h>

using headlab::server::LoginBackoff;
using std::chrono::seconds;

namespace {

// `n` failed tries of `key` at `at`; each must have been let through.
void fail(LoginBackoff& b, const std::string& key, int n, LoginBackoff::Clock::time_point at) {
  for (int i = 0; i < n; ++i) ASSERT_EQ(b.begin(key, at), 0) << "try " << i + 1;
}

}  // namespace

TEST(LoginBackoff, FiveFailuresAreFreeThenTheWaitDoubles) {
  LoginBackoff b;
  auto t = LoginBackoff::Clock::now();
  fail(b, "K7QPM3 10.0.0.9", 5, t);
  EXPECT_EQ(b.begin("K7QPM3 10.0.0.9", t), 2);  // after the 5th failure: 2 s
  t += seconds(2);
  fail(b, "K7QPM3 10.0.0.9", 1, t);             // the 6th, let through, fails
  EXPECT_EQ(b.begin("K7QPM3 10.0.0.9", t), 4);
  t += seconds(4);
  fail(b, "K7QPM3 10.0.0.9", 1, t);
  EXPECT_EQ(b.begin("K7QPM3 10.0.0.9", t), 8);
}

TEST(LoginBackoff, AWaitingKeyDoesNotHoldUpAnother) {
  LoginBackoff b;
  auto t = LoginBackoff::Clock::now();
  fail(b, "K7QPM3 10.0.0.9", 5, t);
  EXPECT_GT(b.begin("K7QPM3 10.0.0.9", t), 0);
  EXPECT_EQ(b.begin("K7QPM3 10.0.0.10", t), 0);  // the teacher, from another address
  EXPECT_EQ(b.begin("ABCDEF 10.0.0.9", t), 0);   // the same address, another class
}

TEST(LoginBackoff, ASuccessForgivesTheFailures) {
  LoginBackoff b;
  auto t = LoginBackoff::Clock::now();
  fail(b, "k", 4, t);
  ASSERT_EQ(b.begin("k", t), 0);  // the 5th try is right
  b.succeeded("k");
  fail(b, "k", 5, t);  // five free failures again
}

TEST(LoginBackoff, TheWaitIsCappedAndForgottenAfterAnIdleHour) {
  LoginBackoff b;
  auto t = LoginBackoff::Clock::now();
  for (int i = 0; i < 40; ++i) {
    int wait = b.begin("k", t);
    t += seconds(wait);
    if (wait == 0) continue;
    ASSERT_EQ(b.begin("k", t), 0);
  }
  EXPECT_EQ(b.begin("k", t), 15 * 60);
  t += std::chrono::hours(2);
  fail(b, "k", 5, t);
}
