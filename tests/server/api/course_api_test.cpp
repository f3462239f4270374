// The course around the lessons: table of contents, lesson 2's checked answers, feedback.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "tokenizer/bpe_tokenizer.h"
#include "formats/hf/checkpoint.h"
#include "server/store/feedback_store.h"
#include "server/http/rate_limiter.h"
#include "testing/random_model.h"
#include "testing/test_server.h"

using headlab::testing::TestServer;
using headlab::testing::temp_path;
using nlohmann::json;
namespace fs = std::filesystem;
namespace model = headlab::model;

namespace {
const char* kLearner = "course-learner-1";

// A random 2-layer model with the built-in tokenizer and a held-out text for the scanner.
std::string model_dir() {
  static const std::string dir = [] {
    std::string d = headlab::testing::make_random_model_dir("course-model", {2, 2, 16, 128, 3});
    std::ofstream heldout(fs::path(d) / "heldout.txt");
    for (int i = 0; i < 60; ++i)
      heldout << "The committee met on a cold morning, and the members argued about the price of bread, the "
                 "state of the roads, and whether the river would flood again this spring. ";
    return d;
  }();
  return dir;
}

// A score in the scan report: a number, or {"score": ..., "chance": ...}.
double score_of(const json& v) { return v.is_object() ? v["score"].get<double>() : v.get<double>(); }

json check(const std::string& challenge, json answer) {
  return {{"learner", kLearner}, {"challenge", challenge}, {"answer", std::move(answer)}};
}
}  // namespace

TEST(CourseApi, ListsTheLessonsInOrder) {
  TestServer s(temp_path("c.db"));
  auto r = s.get("/api/lessons");
  ASSERT_EQ(r.status, 200) << r.raw;
  ASSERT_EQ(r.body["lessons"].size(), 3u);
  EXPECT_EQ(r.body["lessons"][0]["id"], "causal-mask");
  EXPECT_EQ(r.body["lessons"][1]["id"], "trained-heads");
  EXPECT_EQ(r.body["lessons"][1]["total"], 4);
  EXPECT_EQ(r.body["lessons"][2]["id"], "word-order");
  EXPECT_EQ(r.body["lessons"][2]["coming"], false);
  EXPECT_EQ(r.body["lessons"][2]["total"], 3);
}

TEST(CourseApi, LessonListCountsTheLearnersCompletedChallenges) {
  TestServer s(temp_path("c.db"));
  s.post("/api/progress/check", json{{"learner", kLearner}, {"lesson", "causal-mask"},
                                     {"sentence", "the cat chased the dog . the cat chased the"},
                                     {"head", "induction"}, {"mask", true}, {"query", 8}});
  s.post("/api/lessons/trained-heads/check", check("pattern-quiz", {{"choice", "below-diagonal"}}));
  auto r = s.get(std::string("/api/lessons?learner=") + kLearner);
  EXPECT_EQ(r.body["lessons"][0]["completed_count"], 1);
  EXPECT_EQ(r.body["lessons"][1]["completed_count"], 1);
  EXPECT_EQ(s.get("/api/lessons?learner=x").status, 400);
}

TEST(CourseApi, PatternQuizIsCheckedWrongThenRightAndRecorded) {
  TestServer s(temp_path("c.db"));
  auto wrong = s.post("/api/lessons/trained-heads/check", check("pattern-quiz", {{"choice", "diagonal"}}));
  ASSERT_EQ(wrong.status, 200) << wrong.raw;
  EXPECT_EQ(wrong.body["correct"], false);
  EXPECT_NE(wrong.body["explanation"].get<std::string>().find("itself"), std::string::npos);
  EXPECT_EQ(wrong.body["progress"]["completed_count"], 0);
  auto right = s.post("/api/lessons/trained-heads/check", check("pattern-quiz", {{"choice", "below-diagonal"}}));
  EXPECT_EQ(right.body["correct"], true);
  EXPECT_EQ(right.body["progress"]["completed_count"], 1);
  auto progress = s.get(std::string("/api/progress?learner=") + kLearner + "&lesson=trained-heads");
  EXPECT_EQ(progress.body["challenges"][0]["done"], true);
}

TEST(CourseApi, PatternQuizExplainsWithTheModelsBestHeadForTheChosenPattern) {
  TestServer s(temp_path("c.db"), model_dir());
  auto scan = s.get("/api/model/scan");
  ASSERT_EQ(scan.status, 200) << scan.raw;
  double best = -1;
  std::string best_name;
  for (const auto& h : scan.body["heads"]) {
    if (score_of(h["scores"]["previous_token"]) > best) {
      best = score_of(h["scores"]["previous_token"]);
      best_name = std::to_string(h["layer"].get<int>()) + "." + std::to_string(h["head"].get<int>());
    }
  }
  char score[16];
  std::snprintf(score, sizeof score, "%.2f", best);
  auto right = s.post("/api/lessons/trained-heads/check", check("pattern-quiz", {{"choice", "below-diagonal"}}));
  ASSERT_EQ(right.status, 200) << right.raw;
  EXPECT_NE(right.raw.find("head " + best_name + " does it best (previous-token score " + score + ")"), std::string::npos)
      << right.raw;
  auto wrong = s.post("/api/lessons/trained-heads/check", check("pattern-quiz", {{"choice", "first-column"}}));
  EXPECT_EQ(wrong.body["correct"], false);
  EXPECT_NE(wrong.raw.find("first-token score"), std::string::npos) << wrong.raw;
}

TEST(CourseApi, OnlyLessonsWithAnsweredChallengesHaveACheckRoute) {
  TestServer s(temp_path("c.db"));
  EXPECT_EQ(s.post("/api/lessons/causal-mask/check", check("future-favourite", {{"choice", "x"}})).status, 404);
  EXPECT_EQ(s.post("/api/lessons/nope/check", check("x", {{"choice", "x"}})).status, 404);
}

TEST(CourseApi, ChecksRejectBadAnswers) {
  TestServer s(temp_path("c.db"), model_dir());
  EXPECT_EQ(s.post("/api/lessons/trained-heads/check", check("pattern-quiz", {{"choice", "stripes"}})).status, 400);
  EXPECT_EQ(s.post("/api/lessons/trained-heads/check", check("guess", {{"choice", "uniform"}})).status, 400);
  EXPECT_EQ(s.post("/api/lessons/trained-heads/check", check("find-sink", {{"layer", 5}, {"head", 0}})).status, 400);
  EXPECT_EQ(s.post("/api/lessons/trained-heads/check", check("ablation-matters", {{"layer", 0}, {"head", 0}})).status, 400);
  EXPECT_EQ(s.post("/api/lessons/trained-heads/check", json{{"learner", kLearner}, {"challenge", "find-sink"}}).status, 400);
}

TEST(CourseApi, ModelChallengesWithoutAModelSayWhy) {
  TestServer s(temp_path("c.db"));
  auto r = s.post("/api/lessons/trained-heads/check", check("find-induction", {{"layer", 0}, {"head", 0}}));
  EXPECT_EQ(r.status, 503);
  EXPECT_NE(r.raw.find("--model"), std::string::npos);
}

TEST(CourseApi, FindInductionIsNeverMetOnATextWithoutARepeatedSpan) {
  TestServer s(temp_path("c.db"), model_dir());
  const std::string text = "Mr Hobbs painted the green door of the old mill";
  for (int l = 0; l < 2; ++l)
    for (int h = 0; h < 2; ++h) {
      auto r = s.post("/api/lessons/trained-heads/check", check("find-induction", {{"layer", l}, {"head", h}, {"text", text}}));
      ASSERT_EQ(r.status, 200) << r.raw;
      EXPECT_FALSE(r.body["correct"].get<bool>()) << r.raw;
      EXPECT_NE(r.body["explanation"].get<std::string>().find("repeats no span"), std::string::npos) << r.raw;
    }
}

TEST(CourseApi, FindInductionMeasuresTheHeadOnTheLearnersRepeatedText) {
  TestServer s(temp_path("c.db"), model_dir());
  const std::string once = "Mr Hobbs painted the green door of the old mill";
  auto r = s.post("/api/lessons/trained-heads/check",
                  check("find-induction", {{"layer", 1}, {"head", 0}, {"text", once + " " + once}}));
  ASSERT_EQ(r.status, 200) << r.raw;
  const std::string why = r.body["explanation"];
  EXPECT_NE(why.find("tokens sit in a repeated span. On them head 1.0 gives on average"), std::string::npos) << why;
  EXPECT_NE(why.find("the bar is 30%"), std::string::npos) << why;
}

// The sink check quotes the same first-token shares as the page computes from the run.
TEST(CourseApi, FindSinkQuotesTheSharesOfTheRunOnTheLearnersText) {
  TestServer s(temp_path("c.db"), model_dir());
  const std::string text = "the committee will report to the house before the end of the year";
  auto run = s.post("/api/model/run", json{{"text", text}, {"heads", {{1, 1}}}, {"views", {"pattern", "value_weighted"}}, {"top_k", 0}});
  ASSERT_EQ(run.status, 200) << run.raw;
  double raw = 0, weighted = 0;
  const json& rows = run.body["heads"][0]["pattern"];
  const json& vw = run.body["heads"][0]["value_weighted"];
  // rows from the third token on: before it the first token is also the previous one
  for (std::size_t q = 2; q < rows.size(); ++q) raw += rows[q][0].get<double>(), weighted += vw[q][0].get<double>();
  raw /= double(rows.size() - 2), weighted /= double(rows.size() - 2);
  char expected[160];
  std::snprintf(expected, sizeof expected, "head 1.1 gives %.0f%% of its rows\u2019 attention to the first token, and %.0f%% once",
                raw * 100, weighted * 100);
  auto r = s.post("/api/lessons/trained-heads/check",
                  check("find-sink", {{"layer", 1}, {"head", 1}, {"text", text}, {"choice", "sink"}}));
  ASSERT_EQ(r.status, 200) << r.raw;
  EXPECT_NE(r.body["explanation"].get<std::string>().find(expected), std::string::npos) << r.raw << "\n" << expected;
  EXPECT_EQ(s.post("/api/lessons/trained-heads/check", check("find-sink", {{"layer", 1}, {"head", 1}, {"text", text}})).status, 400);
}

// find-sink's verdict on a wrong choice says what the head is: the right choice on that head
// is then explained but not credited, on the same text, the text with a space added, or
// another text (a sink is the head's habit). A verdict that said no kind (a text too short)
// spends nothing: the head can still be answered.
TEST(CourseApi, FindSinkCreditsOnlyTheFirstChoiceOnAHead) {
  // the built-in model: trained, so some heads park on the first token
  TestServer s(temp_path("g.db"), std::string(HEADLAB_SOURCE_DIR) + "/models/headlab-tiny");
  const std::string texts[2] = {"the committee will report to the house before the end of the year",
                                "the old man sent his men to the mill by the river before the rain"};
  auto model = s.get("/api/model");
  ASSERT_TRUE(model.body["config"]["n_layer"].is_number()) << model.raw;
  const int L = model.body["config"]["n_layer"], NH = model.body["config"]["n_head"];
  // Every head's mean share of the first token from the third row on, raw and value-weighted,
  // on one text: one run of all heads.
  auto shares_of = [&](const std::string& text) {
    json heads = json::array();
    for (int l = 0; l < L; ++l)
      for (int h = 0; h < NH; ++h) heads.push_back({l, h});
    auto run = s.post("/api/model/run", json{{"text", text}, {"heads", heads}, {"views", {"pattern", "value_weighted"}}, {"top_k", 0}});
    EXPECT_EQ(run.status, 200) << run.raw;
    std::vector<std::pair<double, double>> out;
    for (const json& h : run.body["heads"]) {
      double raw = 0, weighted = 0;
      const json& rows = h["pattern"];
      const json& vw = h["value_weighted"];
      for (std::size_t q = 2; q < rows.size(); ++q) raw += rows[q][0].get<double>(), weighted += vw[q][0].get<double>();
      out.push_back({raw / double(rows.size() - 2), weighted / double(rows.size() - 2)});
    }
    return out;
  };
  const auto a = shares_of(texts[0]), b = shares_of(texts[1]);
  ASSERT_EQ(int(a.size()), L * NH);
  int layer = -1, head = -1;
  for (int i = 0; i < L * NH && layer < 0; ++i)
    if (a[i].first >= 0.5 && b[i].first >= 0.5) layer = i / NH, head = i % NH;
  if (layer < 0) {
    std::string seen;
    for (int i = 0; i < L * NH; ++i) seen += " " + std::to_string(a[i].first) + "/" + std::to_string(b[i].first);
    GTEST_SKIP() << "no head of this model gives the first token half its attention on both texts:" << seen;
  }
  auto shares = [&](const std::string& text, int l, int h) { return (text == texts[0] ? a : b)[l * NH + h]; };
  auto kind = [](std::pair<double, double> sh) { return sh.second < 0.5 * sh.first ? "sink" : "reads-first"; };
  const std::string right = kind(shares(texts[0], layer, head));
  const std::string wrong = right == "sink" ? "reads-first" : "sink";
  auto answer = [&](const std::string& text, const std::string& choice, const char* learner = kLearner) {
    return s.post("/api/lessons/trained-heads/check",
                  json{{"learner", learner},
                       {"challenge", "find-sink"},
                       {"answer", {{"layer", layer}, {"head", head}, {"text", text}, {"choice", choice}}}});
  };
  auto first = answer(texts[0], wrong);
  ASSERT_EQ(first.status, 200) << first.raw;
  EXPECT_FALSE(first.body["correct"].get<bool>());
  for (const std::string& text : {texts[0], texts[0] + " ", texts[0] + ".", texts[1]}) {
    const auto sh = shares_of(text)[std::size_t(layer * NH + head)];  // the right choice on this text
    auto steered = answer(text, kind(sh));
    ASSERT_EQ(steered.status, 200) << steered.raw;
    EXPECT_FALSE(steered.body["correct"].get<bool>()) << text << "\n" << steered.raw;
    if (sh.first >= 0.5)
      EXPECT_NE(steered.body["explanation"].get<std::string>().find("only the first answer on a head counts"), std::string::npos)
          << steered.raw;
  }
  // Another learner's first answer is on two tokens: no kind said, the head is still theirs to answer.
  auto short_text = answer("the cat", wrong, "course-learner-2");
  ASSERT_EQ(short_text.status, 200) << short_text.raw;
  EXPECT_FALSE(short_text.body["correct"].get<bool>());
  EXPECT_NE(short_text.body["explanation"].get<std::string>().find("Type at least"), std::string::npos) << short_text.raw;
  auto fresh = answer(texts[0], right, "course-learner-2");
  ASSERT_EQ(fresh.status, 200) << fresh.raw;
  EXPECT_TRUE(fresh.body["correct"].get<bool>()) << fresh.raw;
}

TEST(CourseApi, ARevealedAnswerIsCheckedButNotRecorded) {
  TestServer s(temp_path("c.db"));
  auto r = s.post("/api/lessons/trained-heads/check", check("pattern-quiz", {{"choice", "below-diagonal"}, {"revealed", true}}));
  ASSERT_EQ(r.status, 200) << r.raw;
  EXPECT_FALSE(r.body["correct"].get<bool>());
  EXPECT_NE(r.body["explanation"].get<std::string>().find("no credit"), std::string::npos) << r.raw;
  EXPECT_EQ(r.body["progress"]["completed_count"], 0) << r.raw;
}

TEST(CourseApi, AblationMattersAcceptsTheHeadWhoseRemovalHurtsMost) {
  TestServer s(temp_path("c.db"), model_dir());
  const std::string text = "the river rose and the river fell . the river rose and the river fell";
  double best = -1e9;
  int best_layer = 0, best_head = 0;
  for (int l = 0; l < 2; ++l)
    for (int h = 0; h < 2; ++h) {
      auto r = s.post("/api/model/intervene",
                      json{{"text", text}, {"ablate", {{{"layer", l}, {"head", h}, {"kind", "zero"}}}}});
      ASSERT_EQ(r.status, 200) << r.raw;
      double delta = r.body["intervened"]["loss"].get<double>() - r.body["baseline"]["loss"].get<double>();
      if (delta > best) best = delta, best_layer = l, best_head = h;
    }
  auto r = s.post("/api/lessons/trained-heads/check",
                  check("ablation-matters", {{"layer", best_layer}, {"head", best_head}, {"text", text}}));
  ASSERT_EQ(r.status, 200) << r.raw;
  EXPECT_EQ(r.body["correct"], best > 0) << r.raw;
  const std::string why = r.body["explanation"];
  EXPECT_NE(why.find("Removing head " + std::to_string(best_layer) + "." + std::to_string(best_head)), std::string::npos) << why;
  if (best > 0) {
    EXPECT_NE(why.find("% of that; half is needed"), std::string::npos) << why;
  }
}

// The check reads the whole text (no "truncate" field, unlike /api/model/run): its 413
// says to shorten the text and names the limit.
TEST(CourseApi, AblationCheckOfALongTextSaysToShortenIt) {
  TestServer s(temp_path("c.db"), model_dir());
  std::string text;
  for (int i = 0; i < 100; ++i) text += "the river rose and fell . ";
  auto r = s.post("/api/lessons/trained-heads/check", check("ablation-matters", {{"layer", 0}, {"head", 0}, {"text", text}}));
  EXPECT_EQ(r.status, 413) << r.raw;
  const std::string message = r.body["error"]["message"];
  EXPECT_EQ(message.find("truncate"), std::string::npos) << message;
  EXPECT_NE(message.find("shorten it"), std::string::npos) << message;
  EXPECT_NE(message.find("limit of 128 tokens"), std::string::npos) << message;
}

// Every route without a "truncate" field tells a too-long text to be shortened, never to send
// that field (which it would refuse as unknown): the lesson checks, lesson 1's induction
// comparison, the query scores.
TEST(CourseApi, RoutesWithoutTruncateNeverTellALongTextToSendIt) {
  TestServer s(temp_path("c.db"), model_dir());
  std::string text;
  for (int i = 0; i < 100; ++i) text += "the river rose and fell . ";
  const std::vector<std::pair<std::string, json>> routes = {
      {"/api/lessons/trained-heads/check", check("find-sink", {{"layer", 0}, {"head", 0}, {"text", text}, {"choice", "sink"}})},
      {"/api/lessons/trained-heads/check", check("find-induction", {{"layer", 0}, {"head", 0}, {"text", text}})},
      {"/api/lessons/causal-mask/induction", json{{"sentence", text}}},
      {"/api/model/query-scores", json{{"text", text}, {"layer", 0}, {"head", 0}, {"query", 1}}},
  };
  for (const auto& [route, body] : routes) {
    auto r = s.post(route, body);
    EXPECT_EQ(r.status, 413) << route << " " << r.raw;
    const std::string message = r.body["error"]["message"];
    EXPECT_EQ(message.find("truncate"), std::string::npos) << route << ": " << message;
    EXPECT_NE(message.find("shorten"), std::string::npos) << route << ": " << message;
  }
}

TEST(CourseApi, FeedbackIsStoredAndCanBeListed) {
  std::string db = temp_path("f.db");
  {
    TestServer s(db);
    auto r = s.post("/api/feedback", json{{"lesson", "causal-mask"}, {"message", "Row 6 <b>looks</b> odd"}, {"contact", "a@b.c"}});
    EXPECT_EQ(r.status, 201) << r.raw;
    EXPECT_GT(r.body["id"].get<int>(), 0);
  }
  auto store = headlab::server::FeedbackStore::open(db);
  ASSERT_TRUE(store);
  auto all = (*store)->list();
  ASSERT_TRUE(all);
  ASSERT_EQ(all->size(), 1u);
  EXPECT_EQ((*all)[0].message, "Row 6 <b>looks</b> odd");  // kept as text, rendered as text
  EXPECT_EQ((*all)[0].contact, "a@b.c");
}

// Five notes in the window from one address; a note refused for what it holds spends none.
TEST(CourseApi, FeedbackIsValidatedAndRateLimitedAndARefusedNoteIsNotCounted) {
  TestServer s(temp_path("f.db"));
  EXPECT_EQ(s.post("/api/feedback", json{{"lesson", "causal-mask"}, {"message", "  "}}).status, 400);
  EXPECT_EQ(s.post("/api/feedback", json{{"lesson", "nope"}, {"message", "x"}}).status, 400);
  EXPECT_EQ(s.post("/api/feedback", json{{"lesson", "causal-mask"}, {"message", std::string(2001, 'x')}}).status, 413);
  EXPECT_EQ(s.post("/api/feedback", json{{"lesson", "causal-mask"}, {"message", "x"}, {"contact", std::string(201, 'c')}}).status, 413);
  // refused for what they hold (a NUL, only white space): not counted against the five
  EXPECT_EQ(s.post("/api/feedback", json{{"lesson", "explorer"}, {"message", std::string("a\0b", 3)}}).status, 400);
  EXPECT_EQ(s.post("/api/feedback", json{{"lesson", "explorer"}, {"message", "\u00a0\u3000"}}).status, 400);
  for (int i = 0; i < 5; ++i)
    EXPECT_EQ(s.post("/api/feedback", json{{"lesson", "explorer"}, {"message", "note " + std::to_string(i)}}).status, 201);
  auto limited = s.client().Post("/api/feedback", json{{"lesson", "explorer"}, {"message", "one more"}}.dump(), "application/json");
  ASSERT_TRUE(limited);
  EXPECT_EQ(limited->status, 429);
  EXPECT_FALSE(limited->get_header_value("Retry-After").empty());
}

TEST(RateLimiter, AllowsNInAWindowThenRecovers) {
  using namespace std::chrono;
  headlab::server::RateLimiter limiter(2, seconds(10));
  auto t0 = headlab::server::RateLimiter::Clock::now();
  EXPECT_TRUE(limiter.allow("a", t0));
  EXPECT_TRUE(limiter.allow("a", t0 + seconds(1)));
  EXPECT_FALSE(limiter.allow("a", t0 + seconds(2)));
  EXPECT_TRUE(limiter.allow("b", t0 + seconds(2)));
  EXPECT_TRUE(limiter.allow("a", t0 + seconds(11)));
}

namespace {
// The scanner's prefix-matching score recomputed from ragged rows: mean over queries whose
// token occurred before of the weight on the keys right after those earlier copies.
double prefix_matching_of(const json& rows, const std::vector<int>& ids) {
  double sum = 0;
  int n = 0;
  for (std::size_t q = 1; q < ids.size(); ++q) {
    double mass = 0;
    bool has = false;
    for (std::size_t k = 1; k <= q; ++k)
      if (ids[k - 1] == ids[q]) {
        mass += rows[q][k].get<double>();
        has = true;
      }
    if (!has) continue;
    sum += mass;
    ++n;
  }
  return n ? sum / n : 0;
}
}  // namespace

TEST(CourseApi, InductionComparisonScoresBothHeadsOnTheSameTokensWithTheScannersMeasure) {
  TestServer s(temp_path("c.db"), model_dir());
  auto r = s.post("/api/lessons/causal-mask/induction", json{{"sentence", "the cat sat on the mat . the cat sat on the mat ."}});
  ASSERT_EQ(r.status, 200) << r.raw;
  const auto& tokens = r.body["tokens"];
  std::vector<int> ids;
  for (const auto& t : tokens) ids.push_back(t["id"].get<int>());
  EXPECT_EQ(r.body["measure"], "prefix_matching");
  EXPECT_GT(r.body["queries_scored"].get<int>(), 5);
  for (const char* which : {"rule_built", "model_head"}) {
    const json& h = r.body[which];
    ASSERT_EQ(h["pattern"].size(), ids.size()) << which;
    for (std::size_t q = 0; q < ids.size(); ++q) {
      ASSERT_EQ(h["pattern"][q].size(), q + 1) << which;
      double row = 0;
      for (const auto& v : h["pattern"][q]) row += v.get<double>();
      EXPECT_NEAR(row, 1.0, 1e-3) << which << " row " << q;
    }
    EXPECT_NEAR(h["score"].get<double>(), prefix_matching_of(h["pattern"], ids), 1e-3) << which;
    EXPECT_GT(h["chance"].get<double>(), 0.0) << which;
  }
  // The rule finds every earlier copy: most of each scored row sits on its target.
  EXPECT_GT(r.body["rule_built"]["score"].get<double>(), 0.8);
  EXPECT_EQ(r.body["rule_built"]["name"], "induction");
  const json& m = r.body["model_head"];
  EXPECT_EQ(m["name"], std::to_string(m["layer"].get<int>()) + "." + std::to_string(m["head"].get<int>()));
}

TEST(CourseApi, InductionComparisonRefusesASentenceWithNoRepeatAndSaysSo) {
  TestServer s(temp_path("c.db"), model_dir());
  auto r = s.post("/api/lessons/causal-mask/induction", json{{"sentence", "one two three"}});
  EXPECT_EQ(r.status, 400) << r.raw;
  EXPECT_NE(r.raw.find("type it again"), std::string::npos) << r.raw;
  EXPECT_EQ(s.post("/api/lessons/causal-mask/induction", json{{"text", "a a"}}).status, 400);
}

TEST(CourseApi, InductionComparisonWithoutAModelSaysHowToLoadOne) {
  TestServer s(temp_path("c.db"));
  auto r = s.post("/api/lessons/causal-mask/induction", json{{"sentence", "a b a b"}});
  EXPECT_EQ(r.status, 503) << r.raw;
}

// Issue 26: a revealed quiz answer earned credit after a reload (the reveal was only a flag
// the page sent). The server remembers the reveal for the learner, for good.
TEST(CourseApi, AChallengeWhoseAnswerWasShownIsNeverCreditedAfterEvenWithoutTheFlag) {
  TestServer s(temp_path("c.db"), model_dir());
  auto shown = s.post("/api/lessons/trained-heads/check",
                      check("pattern-quiz", {{"choice", "below-diagonal"}, {"revealed", true}}));
  ASSERT_EQ(shown.status, 200) << shown.raw;
  EXPECT_EQ(shown.body["correct"], false);
  auto after_reload = s.post("/api/lessons/trained-heads/check", check("pattern-quiz", {{"choice", "below-diagonal"}}));
  ASSERT_EQ(after_reload.status, 200) << after_reload.raw;
  EXPECT_EQ(after_reload.body["correct"], false) << after_reload.raw;
  EXPECT_NE(after_reload.raw.find("remembers that you looked"), std::string::npos) << after_reload.raw;
  EXPECT_EQ(after_reload.body["progress"]["completed_count"], 0);
  // a reset of the lesson does not wash it out either
  ASSERT_EQ(s.post("/api/progress/reset", json{{"learner", kLearner}, {"lesson", "trained-heads"}}).status, 200);
  EXPECT_EQ(s.post("/api/lessons/trained-heads/check", check("pattern-quiz", {{"choice", "below-diagonal"}})).body["correct"],
            false);
}
