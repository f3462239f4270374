// The JSON API against a real server on loopback: good requests and bad ones.
#include <gtest/gtest.h>

#include "testing/test_server.h"

using headlab::testing::TestServer;
using headlab::testing::temp_path;
using nlohmann::json;

namespace {
const char* kLesson = "the cat chased the dog . the cat chased the";
const char* kLearner = "learner-0001";

json check(const std::string& head, bool mask, int query, const std::string& sentence = kLesson) {
  return {{"learner", kLearner}, {"lesson", "causal-mask"}, {"sentence", sentence},
          {"head", head},        {"mask", mask},            {"query", query}};
}

void expect_error(const TestServer::Reply& r, int status, const std::string& code, const std::string& fragment) {
  EXPECT_EQ(r.status, status) << r.raw;
  ASSERT_TRUE(r.body.contains("error")) << r.raw;
  EXPECT_EQ(r.body["error"]["code"], code) << r.raw;
  EXPECT_NE(r.body["error"]["message"].get<std::string>().find(fragment), std::string::npos) << r.raw;
}
}  // namespace

TEST(Api, HealthAnswersOk) {
  TestServer s(temp_path("a.db"));
  auto r = s.get("/api/health");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body["ok"], true);
}

TEST(Api, ListsTheFiveHeadsWithCitations) {
  TestServer s(temp_path("a.db"));
  auto r = s.get("/api/heads");
  ASSERT_EQ(r.status, 200);
  ASSERT_EQ(r.body["heads"].size(), 5u);
  EXPECT_EQ(r.body["default_sentence"], kLesson);
  EXPECT_EQ(r.body["max_tokens"], 32);
  for (const auto& h : r.body["heads"]) {
    EXPECT_FALSE(h["description"].get<std::string>().empty());
    EXPECT_FALSE(h["citations"].empty());
  }
}

TEST(Api, WeightsGiveTheLessonTableWithNullForMaskedCells) {
  TestServer s(temp_path("a.db"));
  auto r = s.post("/api/weights", json{{"sentence", kLesson}, {"head", "induction"}, {"mask", true}});
  ASSERT_EQ(r.status, 200) << r.raw;
  EXPECT_EQ(r.body["tokens"].size(), 10u);
  EXPECT_NEAR(r.body["weights"][7][2].get<double>(), 0.92, 0.005);
  EXPECT_NEAR(r.body["weights"][9][4].get<double>(), 0.32, 0.005);
  EXPECT_TRUE(r.body["weights"][0][1].is_null());
  EXPECT_EQ(r.body["summaries"][7]["text"], "chased (2), 92%");
  EXPECT_EQ(r.body["summaries"][6]["keys"], json({1, 4}));
}

TEST(Api, WeightsCarryTheRulesScoresBeforeTheMaskAndTheClauseThatGaveEach) {
  TestServer s(temp_path("a.db"));
  auto r = s.post("/api/weights", json{{"sentence", kLesson}, {"head", "induction"}, {"mask", true}});
  ASSERT_EQ(r.status, 200) << r.raw;
  EXPECT_EQ(r.body["scores"][7][2], 5.0);
  EXPECT_EQ(r.body["scores"][7][0], 2.0);
  EXPECT_EQ(r.body["scores"][0][1], 0.0);  // a number even where the mask hides the key
  EXPECT_EQ(r.body["clauses"][7][2], "comes right after an earlier \u201ccat\u201d");
  EXPECT_EQ(r.body["clauses"][7][0], "position 0, the fallback");
}

TEST(Api, WeightsWithTheMaskOffHaveNoNulls) {
  TestServer s(temp_path("a.db"));
  auto r = s.post("/api/weights", json{{"sentence", "a b . a"}, {"head", "same-word"}, {"mask", false}});
  ASSERT_EQ(r.status, 200);
  for (const auto& row : r.body["weights"])
    for (const auto& w : row) EXPECT_TRUE(w.is_number());
}

TEST(Api, WeightsRejectBadRequestsWithAMessage) {
  TestServer s(temp_path("a.db"));
  expect_error(s.post("/api/weights", json{{"sentence", kLesson}, {"head", "inductoin"}}), 400, "invalid_argument",
               "Choose one of: previous, first, same-word, induction, punctuation");
  std::string long_text;
  for (int i = 0; i < 40; ++i) long_text += "w ";
  expect_error(s.post("/api/weights", json{{"sentence", long_text}, {"head", "first"}}), 413, "too_long",
               "at most 32");
  expect_error(s.post("/api/weights", json{{"sentence", "   "}, {"head", "first"}}), 400, "invalid_argument", "empty");
  expect_error(s.post("/api/weights", std::string("{\"sentence\": 5, \"head\": \"first\"}")), 400, "invalid_argument",
               "'sentence' must be a string");
  expect_error(s.post("/api/weights", std::string("{\"sentence\": \"a\", \"head\": \"first\", \"mask\": \"yes\"}")),
               400, "invalid_argument", "true or false");
  expect_error(s.post("/api/weights", json{{"sentence", "a"}, {"head", "first"}, {"colour", "red"}}), 400,
               "invalid_argument", "Unknown field 'colour'");
  expect_error(s.post("/api/weights", std::string("{\"sentence\": ")), 400, "invalid_argument", "not valid JSON");
  expect_error(s.post("/api/weights", std::string("[1,2]")), 400, "invalid_argument", "JSON object");
  expect_error(s.post("/api/weights", std::string("{\"sentence\": \"bad \xC3\x28\", \"head\": \"first\"}")), 400,
               "invalid_argument", "not valid JSON");
  // A number beyond a double's range once ended the server (the fuzzer found it).
  expect_error(s.post("/api/weights", std::string("767e67697e87")), 400, "invalid_argument", "not valid JSON");
  expect_error(s.post("/api/progress/check", std::string("{\"query\": 1e999}")), 400, "invalid_argument",
               "not valid JSON");
  EXPECT_EQ(s.post("/api/weights", json{{"sentence", "a b"}, {"head", "first"}}).status, 200);
}

TEST(Api, RejectsBodiesOver64KB) {
  TestServer s(temp_path("a.db"));
  std::string big = "{\"sentence\": \"" + std::string(70000, 'a') + "\", \"head\": \"first\"}";
  expect_error(s.post("/api/weights", big), 413, "too_long", "64 KB");
}

TEST(Api, UnknownRoutesAndWrongMethodsGetJsonErrors) {
  TestServer s(temp_path("a.db"));
  expect_error(s.get("/api/nope"), 404, "not_found", "/api/nope");
  auto r = s.post("/api/heads", std::string("{}"));
  expect_error(r, 405, "method_not_allowed", "use GET");
}

TEST(Api, HeadSplitComputesWidthsAndRejectsBadValues) {
  TestServer s(temp_path("a.db"));
  auto r = s.get("/api/head-split?d_model=512&h=8");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.body["d_k"], 64);
  EXPECT_EQ(r.body["projection_weights_text"], "1,048,576");
  EXPECT_EQ(r.body["w_o_shape"], json({512, 512}));
  EXPECT_EQ(r.body["presets"].size(), 3u);
  expect_error(s.get("/api/head-split?d_model=768&h=7"), 400, "invalid_argument", "divide");
  expect_error(s.get("/api/head-split?d_model=0&h=1"), 400, "invalid_argument", "positive");
  expect_error(s.get("/api/head-split?d_model=512&h=-2"), 400, "invalid_argument", "at least 1");
  expect_error(s.get("/api/head-split?d_model=abc&h=8"), 400, "invalid_argument", "whole number");
  expect_error(s.get("/api/head-split?d_model=99999999999999999999&h=8"), 400, "invalid_argument",
               "d_model = 99999999999999999999 is far beyond any model's size");
  expect_error(s.get("/api/head-split?width=3"), 400, "invalid_argument", "Unknown parameter");
}

TEST(Api, ChallengesAreDetectedFromWhatTheLearnerLooksAt) {
  TestServer s(temp_path("a.db"));
  auto none = s.post("/api/progress/check", check("induction", true, 7));  // the worked example does not count
  ASSERT_EQ(none.status, 200) << none.raw;
  EXPECT_EQ(none.body["completed_count"], 0);
  auto one = s.post("/api/progress/check", check("induction", true, 8));
  EXPECT_EQ(one.body["newly_completed"], json({"induction-next-word"}));
  auto two = s.post("/api/progress/check", check("same-word", true, 1));
  EXPECT_EQ(two.body["newly_completed"], json({"same-word-first-copy"}));
  auto three = s.post("/api/progress/check", check("punctuation", false, 0));
  EXPECT_EQ(three.body["newly_completed"], json({"future-favourite"}));
  EXPECT_EQ(three.body["completed_count"], 3);
  auto again = s.post("/api/progress/check", check("punctuation", false, 1));
  EXPECT_TRUE(again.body["newly_completed"].empty());
}

TEST(Api, ProgressSurvivesARestartOnTheSameDatabase) {
  std::string db = temp_path("restart.db");
  {
    TestServer s(db);
    s.post("/api/progress/check", check("induction", true, 8));
    s.post("/api/progress/check", check("same-word", true, 0));
  }
  TestServer s(db);
  auto r = s.get(std::string("/api/progress?learner=") + kLearner + "&lesson=causal-mask");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.body["completed_count"], 2);
  EXPECT_EQ(r.body["challenges"][0]["done"], true);
  EXPECT_EQ(r.body["challenges"][2]["done"], false);
}

TEST(Api, ProgressIsKeptPerLearnerAndCanBeReset) {
  TestServer s(temp_path("a.db"));
  s.post("/api/progress/check", check("induction", true, 8));
  auto other = s.get("/api/progress?learner=someone-else");
  EXPECT_EQ(other.body["completed_count"], 0);
  auto reset = s.post("/api/progress/reset", json{{"learner", kLearner}, {"lesson", "causal-mask"}});
  EXPECT_EQ(reset.body["completed_count"], 0);
}

TEST(Api, ProgressRejectsBadLearnersLessonsAndQueries) {
  TestServer s(temp_path("a.db"));
  expect_error(s.get("/api/progress?learner=x"), 400, "invalid_argument", "8 to 64 characters");
  expect_error(s.get("/api/progress?learner=abc%20def%3Bdrop"), 400, "invalid_argument", "8 to 64 characters");
  expect_error(s.get("/api/progress"), 400, "invalid_argument", "Missing parameter 'learner'");
  expect_error(s.get("/api/progress?learner=learner-0001&lesson=nope"), 400, "invalid_argument", "Unknown lesson");
  expect_error(s.post("/api/progress/check", check("induction", true, 10)), 400, "invalid_argument", "0 to 9");
  expect_error(s.post("/api/progress/check", check("induction", true, -1)), 400, "invalid_argument", "out of range");
  json missing = check("induction", true, 1);
  missing.erase("query");
  expect_error(s.post("/api/progress/check", missing), 400, "invalid_argument", "Missing field 'query'");
}

TEST(Api, ServesTheLessonProgramsWithTheirOutput) {
  TestServer s(temp_path("a.db"));
  auto r = s.get("/api/lessons/causal-mask/programs");
  ASSERT_EQ(r.status, 200);
  ASSERT_EQ(r.body["programs"].size(), 2u);
  EXPECT_EQ(r.body["programs"][0]["id"], "numpy");
  EXPECT_NE(r.body["programs"][0]["source"].get<std::string>().find("import numpy"), std::string::npos);
}

TEST(Api, EveryResponseCarriesSecurityHeaders) {
  TestServer s(temp_path("a.db"));
  auto r = s.client().Get("/api/heads");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->get_header_value("X-Content-Type-Options"), "nosniff");
  EXPECT_NE(r->get_header_value("Content-Security-Policy").find("frame-ancestors 'none'"), std::string::npos);
  EXPECT_NE(r->get_header_value("Content-Security-Policy").find("script-src 'self'"), std::string::npos);
}

TEST(Api, WithoutAUsableDatabaseLessonsStillWorkAndProgressSaysWhy) {
  TestServer s("/proc/headlab-cannot-be-here/p.db");
  EXPECT_EQ(s.post("/api/weights", json{{"sentence", kLesson}, {"head", "first"}}).status, 200);
  expect_error(s.post("/api/progress/check", check("induction", true, 8)), 503, "unavailable",
               "Progress cannot be saved");
}

// Issue 24: with --max-body-bytes raised, one body nested 200,000 deep killed the server
// (SIGSEGV in a recursive re-serialisation before any check). Now every route refuses it in
// the envelope and the server goes on answering.
TEST(Api, ABodyNestedTwoHundredThousandDeepIsRefusedAndTheServerGoesOn) {
  TestServer s(temp_path("a.db"), "", 8, [](headlab::server::ServerOptions& o) { o.max_body_bytes = 4 << 20; });
  std::string deep = "{\"sentence\": " + std::string(200000, '[') + std::string(200000, ']') + "}";
  for (const char* route : {"/api/weights", "/api/progress/check", "/api/model/run"}) {
    auto r = s.post(route, deep);
    // refused in the envelope: 400, or 503 from a model route of a server without a model
    EXPECT_TRUE(r.status == 400 || r.status == 503) << route << ": " << r.raw.substr(0, 300);
  }
  auto r = s.post("/api/weights", deep);
  expect_error(r, 400, "invalid_argument", "nested deeper than 64 levels");
  EXPECT_EQ(s.get("/api/health").status, 200);
}

TEST(Api, ARouteThatReadsNoQueryRefusesAnyParameterByName) {
  TestServer s(temp_path("a.db"));
  for (const char* path : {"/api/health?verbose=1", "/api/heads?layer=0", "/api/lessons/causal-mask/programs?x="})
    expect_error(s.get(path), 400, "invalid_argument", "takes no query parameters");
  expect_error(s.get("/api/heads?layer=0"), 400, "invalid_argument", "Unknown parameter 'layer'");
  expect_error(s.post("/api/weights?head=first", json{{"sentence", kLesson}, {"head", "first"}}), 400,
               "invalid_argument", "POST /api/weights takes no query parameters");
  EXPECT_EQ(s.get("/api/health").status, 200);  // and without one, the same route answers
}

TEST(Api, AQueryParameterGivenTwiceIsRefusedNotReadAsTheLastOne) {
  TestServer s(temp_path("a.db"));
  expect_error(s.get("/api/head-split?d_model=512&h=8&h=7"), 400, "invalid_argument",
               "The query parameter 'h' is given more than once");
  EXPECT_EQ(s.get("/api/head-split?d_model=512&h=8").status, 200);
}

TEST(Api, AKeyRepeatedInOneObjectOfTheBodyIsRefusedByName) {
  TestServer s(temp_path("a.db"));
  expect_error(s.post("/api/weights", std::string(R"({"sentence": "a b", "head": "first", "head": "previous"})")), 400,
               "invalid_argument", "The key 'head' appears twice");
  // nested: the repeat is inside the inner object, and the same key in two objects is not a repeat
  expect_error(s.post("/api/rope", std::string(R"({"q": {"x": 1, "x": 2}})")), 400, "invalid_argument",
               "The key 'x' appears twice");
  expect_error(s.post("/api/weights", std::string(R"({"sentence": "a b", "head": "first", "o": [{"k": 1}, {"k": 2}]})")),
               400, "invalid_argument", "Unknown field 'o'");
  EXPECT_EQ(s.post("/api/weights", json{{"sentence", "a b"}, {"head", "first"}}).status, 200);
}
