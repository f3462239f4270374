#include "server/model_service/inference_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

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

TEST(InferencePool, ClientsAreServedInTurnsAndAGreedyOneCannotFillTheQueue) {
  InferencePool pool({4, 5000});
  std::atomic<bool> release{false}, started{false};
  std::mutex order_mutex;
  std::vector<std::string> order;
  std::thread busy([&] {
    InferencePool::ClientScope as("greedy");
    pool.run<int>([&](model::Workspace&) -> Result<int> {
      started = true;
      while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      return 0;
    });
  });
  while (!started) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  auto job = [&](const std::string& who) {
    return [&, who] {
      InferencePool::ClientScope as(who);
      auto r = pool.run<int>([&, who](model::Workspace&) -> Result<int> {
        std::lock_guard<std::mutex> lock(order_mutex);
        order.push_back(who);
        return 1;
      });
      std::lock_guard<std::mutex> lock(order_mutex);
      if (!r) order.push_back(who + " refused");
    };
  };
  std::vector<std::thread> greedy;
  for (int i = 0; i < 4; ++i) greedy.emplace_back(job("greedy"));  // fills the queue of 4
  while (pool.queued() < 4) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::thread normal(job("normal"));  // takes the greedy client's newest place
  while (true) {
    {
      std::lock_guard<std::mutex> lock(order_mutex);
      if (!order.empty()) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  release = true;
  busy.join();
  normal.join();
  for (auto& t : greedy) t.join();
  ASSERT_EQ(order.size(), 5u);
  EXPECT_EQ(order[0], "greedy refused");  // the one that made room
  EXPECT_EQ(order[1], "greedy");          // the oldest waiting, as its turn came first
  EXPECT_EQ(order[2], "normal");          // then the other client's turn, before greedy's rest
  EXPECT_EQ(order[3], "greedy");
  EXPECT_EQ(order[4], "greedy");
}
