#include "server/inference_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

using namespace headlab;
using namespace headlab::server;

TEST(InferencePool, RunsJobsAndReturnsTheirResults) {
  InferencePool pool({4, 5000});
  auto r = pool.run<int>([](model::Workspace&) -> Result<int> { return 42; });
  ASSERT_TRUE(r);
  EXPECT_EQ(*r, 42);
}

TEST(InferencePool, RefusesWorkBeyondTheQueueLimitAtOnce) {
  InferencePool pool({1, 5000});
  std::atomic<bool> release{false}, started{false};
  std::thread busy([&] {
    pool.run<int>([&](model::Workspace&) -> Result<int> {
      started = true;
      while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      return 1;
    });
  });
  while (!started) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::thread queued([&] { pool.run<int>([](model::Workspace&) -> Result<int> { return 2; }); });
  while (pool.queued() < 1) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  auto refused = pool.run<int>([](model::Workspace&) -> Result<int> { return 3; });
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::unavailable);
  release = true;
  busy.join();
  queued.join();
}

TEST(InferencePool, AJobWhoseRequestGaveUpIsNeverRun) {
  InferencePool pool({4, 50});
  std::atomic<bool> release{false}, late_ran{false}, busy_started{false};
  std::thread busy([&] {
    pool.run<int>([&](model::Workspace&) -> Result<int> {
      busy_started = true;
      while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      return 1;
    });
  });
  // the one worker must be inside the busy job first (a fixed sleep was not always enough
  // under the sanitizers on a loaded machine: the late job then ran first)
  while (!busy_started) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  auto late = pool.run<int>([&](model::Workspace&) -> Result<int> {
    late_ran = true;
    return 2;
  });
  ASSERT_FALSE(late);  // timed out after 50 ms
  EXPECT_NE(late.error().message.find("busy"), std::string::npos);
  release = true;
  busy.join();
  auto after = pool.run<int>([](model::Workspace&) -> Result<int> { return 3; });  // the worker moved on
  EXPECT_TRUE(after);
  EXPECT_FALSE(late_ran);
}
