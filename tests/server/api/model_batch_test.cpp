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

struct Answer {
  int status = 0;  // 0: no answer
  std::string body, cache;  // cache: the X-Headlab-Cache header ("", "joined", "hit")
};

// A class clicking together: learner i posts bodies[i] to POST /api/model/run?request_id=<id>-i,
// each on its own connection, all released at once.
std::vector<Answer> burst(TestServer& s, const std::string& id, const std::vector<std::string>& bodies) {
  const int n = static_cast<int>(bodies.size());
  std::vector<Answer> answers(bodies.size());
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> learners;
  for (int i = 0; i < n; i++)
    learners.emplace_back([&, i] {
      httplib::Client c("127.0.0.1", s.port());
      c.set_read_timeout(60, 0);
      const std::string path = "/api/model/run?request_id=" + id + "-" + std::to_string(i);
      ++ready;
      while (!go) std::this_thread::yield();
      auto r = c.Post(path.c_str(), bodies[std::size_t(i)], "application/json");
      if (r) answers[std::size_t(i)] = {r->status, r->body, r->get_header_value("X-Headlab-Cache")};
    });
  while (ready < n) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  go = true;
  for (auto& t : learners) t.join();
  return answers;
}
}  // namespace

TEST(ModelBatch, FortyLearnersClickingTogetherGetNo503AndEachTheAnswerOfALoneRun) {
  TestServer s(temp_path("m.db"), builtin_model(), /*model_queue=*/64);
  const int n = 40;
  std::vector<std::string> texts, bodies;
  for (int i = 0; i < n; i++) {
    texts.push_back("Learner " + std::to_string(i) + " asks: when the cat sat on the mat, which word did it see " +
                    std::to_string(i * 7 % 13) + " times?");
    bodies.push_back(json{{"text", texts.back()}}.dump());
  }
  const std::vector<Answer> got = burst(s, "learner", bodies);
  for (int i = 0; i < n; i++)
    ASSERT_EQ(got[std::size_t(i)].status, 200) << "learner " << i << ": " << got[std::size_t(i)].body;
  // Alone, one after another ("top_k": 5 is the default: the same answer, not the cache's).
  for (int i = 0; i < n; i++) {
    auto lone = s.client().Post("/api/model/run", json{{"text", texts[std::size_t(i)]}, {"top_k", 5}}.dump(),
                                "application/json");
    ASSERT_TRUE(lone);
    ASSERT_EQ(lone->status, 200);
    EXPECT_EQ(lone->get_header_value("X-Headlab-Cache"), "");
    EXPECT_EQ(got[std::size_t(i)].body, lone->body) << "learner " << i;
  }
}

// The class benchmark's "shared burst": forty learners sending a lesson's default text at
// once are answered by one computation (one request leads, the others follow it or hit the
// cache it filled), each the bytes of a lone run.
TEST(ModelBatch, FortyLearnersSendingTheSameTextAreAnsweredByOneComputation) {
  TestServer s(temp_path("m.db"), builtin_model(), /*model_queue=*/64);
  const int n = 40;
  const std::string text = "the cat sat on the mat and the dog sat on the log";
  const std::vector<Answer> got = burst(s, "same", std::vector<std::string>(n, json{{"text", text}}.dump()));
  int computed = 0;
  for (int i = 0; i < n; i++) {
    const Answer& a = got[std::size_t(i)];
    ASSERT_EQ(a.status, 200) << "learner " << i << ": " << a.body;
    EXPECT_EQ(a.body, got[0].body) << "learner " << i;
    computed += a.cache.empty();
    EXPECT_TRUE(a.cache.empty() || a.cache == "joined" || a.cache == "hit") << a.cache;
  }
  EXPECT_EQ(computed, 1);
  // a lone run of the same text (another body: "top_k" given, so not the cache's answer)
  auto lone = s.client().Post("/api/model/run", json{{"text", text}, {"top_k", 5}}.dump(), "application/json");
  ASSERT_TRUE(lone);
  EXPECT_EQ(lone->get_header_value("X-Headlab-Cache"), "");
  EXPECT_EQ(lone->body, got[0].body);
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
