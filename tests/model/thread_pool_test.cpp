// Tests for model/thread_pool.h: thread_pool_run runs every task once; thread_pool_for_parts
// covers [0, n) once in contiguous parts, and leaves small work on the caller; thread_pool_parts
// sizes every job by its work.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "model/thread_pool.h"

using namespace headlab::model;

TEST(ThreadPool, RunsEveryTaskOnce) {
  std::vector<std::atomic<int>> runs(37);
  thread_pool_run(37, [&](int task) { runs[std::size_t(task)]++; });
  for (const auto& r : runs) EXPECT_EQ(r.load(), 1);
}

TEST(ThreadPool, RunsEveryTaskOnceWhenSmallJobsFollowEachOther) {
  // the caller may take every task before a worker wakes, and the next job then starts at once:
  // a late worker must not run the old job's tasks, nor miss the new one's
  std::vector<std::atomic<int>> runs(3);
  for (int job = 0; job < 20000; job++) thread_pool_run(3, [&](int task) { runs[std::size_t(task)]++; });
  for (const auto& r : runs) EXPECT_EQ(r.load(), 20000);
}

TEST(ThreadPoolParts, SmallWorkIsOnePartAndLargeWorkOnePerThread) {
  EXPECT_EQ(thread_pool_parts(kPoolMinWork - 1, 64), 1);
  EXPECT_EQ(thread_pool_parts(kPoolMinWork, 64), thread_pool_size());
  EXPECT_EQ(thread_pool_parts(kPoolMinWork, 1), 1);  // never more parts than asked for
  EXPECT_EQ(thread_pool_parts(kPoolMinWork, 0), 1);
}

TEST(ThreadPoolForParts, CoversEveryItemOnceInContiguousParts) {
  const std::size_t n = 100003;
  std::vector<int> seen(n, 0);
  std::mutex m;
  std::vector<std::pair<std::size_t, std::size_t>> parts;
  thread_pool_for_parts(n, [&](std::size_t i0, std::size_t i1) {
    for (std::size_t i = i0; i < i1; i++) seen[i]++;
    std::lock_guard<std::mutex> lock(m);
    parts.push_back({i0, i1});
  });
  for (std::size_t i = 0; i < n; i++) ASSERT_EQ(seen[i], 1) << "item " << i;
  EXPECT_EQ(parts.size(), std::size_t(thread_pool_size()));
}

TEST(ThreadPoolForParts, SmallWorkRunsOnTheCallerInOnePart) {
  const std::thread::id caller = std::this_thread::get_id();
  int calls = 0;
  thread_pool_for_parts(100, [&](std::size_t i0, std::size_t i1) {
    calls++;
    EXPECT_EQ(std::this_thread::get_id(), caller);
    EXPECT_EQ(i0, 0u);
    EXPECT_EQ(i1, 100u);
  }, /*work_per_item=*/kPoolMinWork / kPoolElementWork / 200);
  EXPECT_EQ(calls, 1);
  thread_pool_for_parts(0, [&](std::size_t, std::size_t) { calls++; });
  EXPECT_EQ(calls, 1);  // nothing to do: not called
}
