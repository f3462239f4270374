// Tests for the model routes under a class's load (issue 25, "a class at once"): the runs
// waiting together are batched by the inference pool (server/model_service/inference_pool.h),
// each answered as it would be alone, and a waiting run's place is reported.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "testing/test_server.h"

using headlab::testing::TestServer;
using headlab::testing::temp_path;
using nlohmann::json;

namespace {
std::string builtin_model() { return std::string(HEADLAB_SOURCE_DIR) + "/models/headlab-tiny"; }
}  // namespace

TEST(ModelBatch, FortyLearnersClickingTogetherGetNo503AndEachTheAnswerOfALoneRun) {
  TestServer s(temp_path("m.db"), builtin_model(), /*model_queue=*/64);
  const int n = 40;
  std::vector<std::string> texts;
  for (int i = 0; i < n; i++)
    texts.push_back("Learner " + std::to_string(i) + " asks: when the cat sat on the mat, which word did it see " +
                    std::to_string(i * 7 % 13) + " times?");
  std::vector<int> status(n, 0);
  std::vector<std::string> bodies(n);
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> learners;
  for (int i = 0; i < n; i++)
    learners.emplace_back([&, i] {
      httplib::Client c("127.0.0.1", s.port());
      c.set_read_timeout(60, 0);
      const std::string path = "/api/model/run?request_id=learner-" + std::to_string(i);
      ++ready;
      while (!go) std::this_thread::yield();
      auto r = c.Post(path.c_str(), json{{"text", texts[std::size_t(i)]}}.dump(), "application/json");
      if (r) status[std::size_t(i)] = r->status, bodies[std::size_t(i)] = r->body;
    });
  while (ready < n) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  go = true;
  for (auto& t : learners) t.join();
  for (int i = 0; i < n; i++) ASSERT_EQ(status[std::size_t(i)], 200) << "learner " << i << ": " << bodies[std::size_t(i)];
  // Alone, one after another ("top_k": 5 is the default: the same answer, not the cache's).
  for (int i = 0; i < n; i++) {
    auto lone = s.client().Post("/api/model/run", json{{"text", texts[std::size_t(i)]}, {"top_k", 5}}.dump(),
                                "application/json");
    ASSERT_TRUE(lone);
    ASSERT_EQ(lone->status, 200);
    EXPECT_EQ(lone->get_header_value("X-Headlab-Cache"), "");
    EXPECT_EQ(bodies[std::size_t(i)], lone->body) << "learner " << i;
  }
}

// The class benchmark's "shared burst": forty learners sending a lesson's default text at
// once are answered by one computation (one request leads, the others follow it or hit the
// cache it filled), each the bytes of a lone run.
TEST(ModelBatch, FortyLearnersSendingTheSameTextAreAnsweredByOneComputation) {
  TestServer s(temp_path("m.db"), builtin_model(), /*model_queue=*/64);
  const int n = 40;
  const std::string text = "the cat sat on the mat and the dog sat on the log";
  const std::string body = json{{"text", text}}.dump();
  std::vector<int> status(n, 0);
  std::vector<std::string> bodies(n), how(n);
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> learners;
  for (int i = 0; i < n; i++)
    learners.emplace_back([&, i] {
      httplib::Client c("127.0.0.1", s.port());
      c.set_read_timeout(60, 0);
      const std::string path = "/api/model/run?request_id=same-" + std::to_string(i);
      ++ready;
      while (!go) std::this_thread::yield();
      auto r = c.Post(path.c_str(), body, "application/json");
      if (r) status[std::size_t(i)] = r->status, bodies[std::size_t(i)] = r->body,
             how[std::size_t(i)] = r->get_header_value("X-Headlab-Cache");
    });
  while (ready < n) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  go = true;
  for (auto& t : learners) t.join();
  int computed = 0;
  for (int i = 0; i < n; i++) {
    ASSERT_EQ(status[std::size_t(i)], 200) << "learner " << i << ": " << bodies[std::size_t(i)];
    EXPECT_EQ(bodies[std::size_t(i)], bodies[0]) << "learner " << i;
    computed += how[std::size_t(i)].empty();
    EXPECT_TRUE(how[std::size_t(i)].empty() || how[std::size_t(i)] == "joined" || how[std::size_t(i)] == "hit") << how[std::size_t(i)];
  }
  EXPECT_EQ(computed, 1);
  // a lone run of the same text (another body: "top_k" given, so not the cache's answer)
  auto lone = s.client().Post("/api/model/run", json{{"text", text}, {"top_k", 5}}.dump(), "application/json");
  ASSERT_TRUE(lone);
  EXPECT_EQ(lone->get_header_value("X-Headlab-Cache"), "");
  EXPECT_EQ(lone->body, bodies[0]);
}

TEST(ModelBatch, TheQueueRouteSaysWhereARunIsAndRefusesABadId) {
  TestServer s(temp_path("m.db"), builtin_model());
  auto r = s.get("/api/model/queue?request_id=abc-123");
  ASSERT_EQ(r.status, 200) << r.raw;
  EXPECT_EQ(r.body, json({{"state", "unknown"}, {"ahead", 0}, {"waiting", 0}}));  // nothing waits
  auto bad = s.get("/api/model/queue?request_id=a%20b");
  EXPECT_EQ(bad.status, 400);
  EXPECT_NE(bad.raw.find("request_id"), std::string::npos) << bad.raw;
  EXPECT_EQ(s.get("/api/model/queue").status, 400);
  auto run = s.post("/api/model/run?request_id=!", json{{"text", "the cat"}});
  EXPECT_EQ(run.status, 400);
  EXPECT_EQ(s.post("/api/model/run?request_id=ok_1", json{{"text", "the cat"}}).status, 200);
}
