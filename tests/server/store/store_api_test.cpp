// The routes that write, through a real server, on both engines: what the handlers see of
// the store does not depend on which engine is under it.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "server/store/store_testing.h"
#include "testing/process.h"
#include "testing/test_server.h"

using namespace headlab;
using headlab::testing::StoreDatabase;
using headlab::testing::TestServer;
using nlohmann::json;

namespace {

class StoreApi : public ::testing::TestWithParam<server::db::Engine> {};

std::string engine_label(const ::testing::TestParamInfo<server::db::Engine>& info) {
  return info.param == server::db::Engine::sqlite ? "SQLite" : "PostgreSQL";
}

json check_body(const std::string& learner) {
  return {{"learner", learner}, {"lesson", "causal-mask"}, {"sentence", "the cat chased the dog . the cat chased the"},
          {"head", "induction"}, {"mask", true}, {"query", 8}};
}

bool done(const json& view, const std::string& challenge) {
  for (const json& c : view["challenges"])
    if (c["id"] == challenge) return c["done"].get<bool>();
  return false;
}

}  // namespace

TEST_P(StoreApi, ProgressIsRecordedOnceReadBackAndReset) {
  StoreDatabase fresh(GetParam());
  HEADLAB_REQUIRE_DATABASE(fresh);
  TestServer s(fresh.target());
  auto first = s.post("/api/progress/check", check_body("learner-api-0001"));
  ASSERT_EQ(first.status, 200) << first.raw;
  EXPECT_EQ(first.body["newly_completed"], json::array({"induction-next-word"}));
  auto again = s.post("/api/progress/check", check_body("learner-api-0001"));
  ASSERT_EQ(again.status, 200) << again.raw;
  EXPECT_EQ(again.body["newly_completed"], json::array());
  auto view = s.get("/api/progress?learner=learner-api-0001&lesson=causal-mask");
  ASSERT_EQ(view.status, 200) << view.raw;
  EXPECT_TRUE(done(view.body, "induction-next-word"));
  auto reset = s.post("/api/progress/reset", json{{"learner", "learner-api-0001"}, {"lesson", "causal-mask"}});
  ASSERT_EQ(reset.status, 200) << reset.raw;
  EXPECT_FALSE(done(reset.body, "induction-next-word"));
}

TEST_P(StoreApi, TwoServersOnOneDatabaseSeeEachOthersWrites) {
  StoreDatabase fresh(GetParam());
  HEADLAB_REQUIRE_DATABASE(fresh);
  TestServer a(fresh.target());
  TestServer b(fresh.target());
  ASSERT_EQ(a.post("/api/progress/check", check_body("learner-api-0002")).status, 200);
  auto seen = b.get("/api/progress?learner=learner-api-0002&lesson=causal-mask");
  ASSERT_EQ(seen.status, 200) << seen.raw;
  EXPECT_TRUE(done(seen.body, "induction-next-word"));
  auto twice = b.post("/api/progress/check", check_body("learner-api-0002"));
  EXPECT_EQ(twice.body["newly_completed"], json::array()) << "already completed on the other server";
}

TEST_P(StoreApi, AFeedbackNoteIsSavedAndFeedbackListReadsIt) {
  StoreDatabase fresh(GetParam());
  HEADLAB_REQUIRE_DATABASE(fresh);
  {
    TestServer s(fresh.target());
    auto r = s.post("/api/feedback", json{{"lesson", "causal-mask"}, {"message", "Row 6 is off, é"}});
    ASSERT_EQ(r.status, 201) << r.raw;
  }
  auto list = headlab::testing::headlab_run("feedback list --format json --db '" + fresh.target() + "'");
  ASSERT_EQ(list.exit_code, 0) << list.out;
  json notes = json::parse(list.out);
  ASSERT_EQ(notes.size(), 1u) << list.out;
  EXPECT_EQ(notes[0]["message"], "Row 6 is off, é");
}

INSTANTIATE_TEST_SUITE_P(BothEngines, StoreApi, ::testing::Values(server::db::Engine::sqlite, server::db::Engine::postgresql),
                         engine_label);
