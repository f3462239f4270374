// Classes through a real server on loopback: a teacher creates a class, a learner joins and
// checks answers on the lesson routes, and the teacher's view shows them; the cookie and
// the origin check as a browser meets them.
#include <gtest/gtest.h>

#include "testing/test_server.h"

using headlab::testing::TestServer;
using headlab::testing::temp_path;
using nlohmann::json;

namespace {

struct Teacher {
  std::string code, secret, cookie, set_cookie;
};

Teacher create_class(TestServer& s, const std::string& name) {
  auto r = s.client().Post("/api/classes", json{{"name", name}}.dump(), "application/json");
  EXPECT_TRUE(r);
  EXPECT_EQ(r->status, 201) << r->body;
  json j = json::parse(r->body);
  Teacher t{j["class"]["code"], j["secret"], "", r->get_header_value("Set-Cookie")};
  t.cookie = t.set_cookie.substr(0, t.set_cookie.find(';'));
  return t;
}

json view(TestServer& s, const Teacher& t, int* status = nullptr) {
  auto r = s.client().Get(("/api/class/view?code=" + t.code).c_str(), {{"Cookie", t.cookie}});
  if (status) *status = r ? r->status : 0;
  return r ? json::parse(r->body, nullptr, false) : json();
}

const json& cell(const json& v, const std::string& nickname, const std::string& lesson, const std::string& challenge) {
  for (const json& l : v["learners"])
    if (l["nickname"] == nickname)
      for (const json& ls : l["lessons"])
        if (ls["lesson"] == lesson)
          for (const json& c : ls["challenges"])
            if (c["challenge"] == challenge) return c;
  static const json none;
  return none;
}

json quiz(const std::string& learner, const std::string& choice) {
  return {{"learner", learner}, {"challenge", "pattern-quiz"}, {"answer", {{"choice", choice}}}};
}

}  // namespace

TEST(ClassApi, AClassMembersAnswerChecksReachTheTeachersView) {
  TestServer s(temp_path("class.db"));
  Teacher t = create_class(s, "Period 3");
  ASSERT_EQ(s.post("/api/class/join", json{{"code", t.code}, {"learner", "learner-0001"}, {"nickname", "Ada"}}).status, 200);
  ASSERT_EQ(s.post("/api/lessons/trained-heads/check", quiz("learner-0001", "uniform")).status, 200);
  auto right = s.post("/api/lessons/trained-heads/check", quiz("learner-0001", "below-diagonal"));
  ASSERT_EQ(right.status, 200) << right.raw;
  EXPECT_EQ(right.body["correct"], true);
  // a learner in no class: checked as before, not noted anywhere
  ASSERT_EQ(s.post("/api/lessons/trained-heads/check", quiz("learner-0002", "diagonal")).status, 200);

  int status = 0;
  json v = view(s, t, &status);
  ASSERT_EQ(status, 200) << v.dump();
  EXPECT_EQ(v["learner_count"], 1);
  const json& c = cell(v, "Ada", "trained-heads", "pattern-quiz");
  EXPECT_EQ(c["done"], true);
  EXPECT_EQ(c["tries"], 2);
  EXPECT_TRUE(c["done_at"].is_string());
  for (const json& ch : v["challenges"])
    if (ch["challenge"] == "pattern-quiz") {
      EXPECT_EQ(ch["done_count"], 1);
      ASSERT_EQ(ch["wrong_answers"].size(), 1u);  // not learner-0002's "diagonal"
      EXPECT_EQ(ch["wrong_answers"][0], (json{{"answer", "uniform"}, {"count", 1}}));
    }
  EXPECT_EQ(v.dump().find("learner-0001"), std::string::npos);  // the teacher never sees learner ids
}

TEST(ClassApi, Lesson1sDetectedChallengesReachTheTeachersView) {
  TestServer s(temp_path("class.db"));
  Teacher t = create_class(s, "Period 3");
  s.post("/api/class/join", json{{"code", t.code}, {"learner", "learner-0001"}, {"nickname", "Ada"}});
  auto r = s.post("/api/progress/check", json{{"learner", "learner-0001"}, {"lesson", "causal-mask"},
                                              {"sentence", "the cat chased the dog . the cat chased the"},
                                              {"head", "induction"}, {"mask", true}, {"query", 8}});
  ASSERT_EQ(r.status, 200) << r.raw;
  ASSERT_FALSE(r.body["newly_completed"].empty()) << r.raw;
  const std::string done = r.body["newly_completed"][0];
  json v = view(s, t);
  EXPECT_EQ(cell(v, "Ada", "causal-mask", done)["done"], true) << v.dump();
}

TEST(ClassApi, TheServersCookieIsHttpOnlyStrictAndOpensOnlyItsClass) {
  TestServer s(temp_path("class.db"));
  Teacher a = create_class(s, "Period 3"), b = create_class(s, "Period 4");
  EXPECT_NE(a.set_cookie.find("HttpOnly"), std::string::npos) << a.set_cookie;
  EXPECT_NE(a.set_cookie.find("SameSite=Strict"), std::string::npos) << a.set_cookie;
  int status = 0;
  view(s, a, &status);
  EXPECT_EQ(status, 200);
  Teacher a_with_b_cookie = a;
  a_with_b_cookie.cookie = b.cookie;
  view(s, a_with_b_cookie, &status);
  EXPECT_EQ(status, 403);
  auto none = s.get("/api/class/view?code=" + a.code);
  EXPECT_EQ(none.status, 401);
  EXPECT_EQ(none.body["error"]["code"], "unauthorized");
}

TEST(ClassApi, ACrossSitePageCannotDeleteAClassEvenWithTheCookie) {
  TestServer s(temp_path("class.db"));
  Teacher t = create_class(s, "Period 3");
  auto r = s.client().Post("/api/class/delete", {{"Cookie", t.cookie}, {"Origin", "https://evil.example"}},
                           json{{"code", t.code}}.dump(), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 403);
  int status = 0;
  view(s, t, &status);
  EXPECT_EQ(status, 200);
}

TEST(ClassApi, PollingWithTheETagAnswers304UntilALearnerActs) {
  TestServer s(temp_path("class.db"));
  Teacher t = create_class(s, "Period 3");
  auto first = s.client().Get(("/api/class/view?code=" + t.code).c_str(), {{"Cookie", t.cookie}});
  ASSERT_TRUE(first);
  std::string etag = first->get_header_value("ETag");
  ASSERT_FALSE(etag.empty());
  auto same = s.client().Get(("/api/class/view?code=" + t.code).c_str(), {{"Cookie", t.cookie}, {"If-None-Match", etag}});
  EXPECT_EQ(same->status, 304);
  s.post("/api/class/join", json{{"code", t.code}, {"learner", "learner-0001"}, {"nickname", "Ada"}});
  auto changed = s.client().Get(("/api/class/view?code=" + t.code).c_str(), {{"Cookie", t.cookie}, {"If-None-Match", etag}});
  EXPECT_EQ(changed->status, 200);
}

TEST(ClassApi, TheTeacherLogsInWithTheSecretShownAtCreation) {
  TestServer s(temp_path("class.db"));
  Teacher t = create_class(s, "Period 3");
  auto wrong = s.post("/api/class/login", json{{"code", t.code}, {"secret", "not-it"}});
  EXPECT_EQ(wrong.status, 401);
  auto r = s.client().Post("/api/class/login", json{{"code", t.code}, {"secret", t.secret}}.dump(), "application/json");
  ASSERT_EQ(r->status, 200) << r->body;
  Teacher again = t;
  again.cookie = r->get_header_value("Set-Cookie").substr(0, r->get_header_value("Set-Cookie").find(';'));
  int status = 0;
  view(s, again, &status);
  EXPECT_EQ(status, 200);
}
