// The word-order lesson's routes (docs/api.md, "Word order"): RoPE's rotation and
// wavelengths, position similarity, the content-only head, the lesson models by name, and
// lesson 3's answer checks, against a server with a small random model.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "course/word_order.h"
#include "testing/random_model.h"
#include "testing/test_server.h"

using headlab::testing::TestServer;
using headlab::testing::temp_path;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

std::string model_dir() {
  static const std::string dir = [] {
    std::string d = headlab::testing::make_random_model_dir("positions-model", {2, 2, 16, 128, 5});
    std::ofstream heldout(fs::path(d) / "heldout.txt");
    for (int i = 0; i < 60; ++i)
      heldout << "The committee met on a cold morning, and the members argued about the price of bread, the "
                 "state of the roads, and whether the river would flood again this spring. ";
    return d;
  }();
  return dir;
}

// A models folder holding the random model as headlab-rope only, trained (it says) on 64 tokens.
std::string models_dir() {
  static const std::string dir = [] {
    fs::path d = fs::path(temp_path("x")).parent_path() / "lesson-models";
    fs::create_directories(d);
    fs::copy(model_dir(), d / "headlab-rope", fs::copy_options::recursive | fs::copy_options::overwrite_existing);
    std::ofstream(d / "headlab-rope" / "train_log.json") << R"({"options": {"context": 64}, "log": []})";
    return d.string();
  }();
  return dir;
}

TestServer lesson_server(const std::string& db) {
  return TestServer(temp_path(db), model_dir(), 8, [](headlab::server::ServerOptions& o) { o.models_dir = models_dir(); });
}

TEST(RopeApi, GivesTheSameScoreForTheSameOffsetAnywhere) {
  TestServer s(temp_path("r.db"));
  auto r = s.post("/api/rope", json{{"pairs", {{5, 2}, {4005, 4002}, {9, 3}}}});
  ASSERT_EQ(r.status, 200) << r.raw;
  EXPECT_EQ(r.body["head_size"], 64);
  const auto& p = r.body["pairs"];
  EXPECT_NEAR(p[0]["dot"].get<double>(), p[1]["dot"].get<double>(), 1e-3);
  EXPECT_GT(std::fabs(p[0]["dot"].get<double>() - p[2]["dot"].get<double>()), 0.1);
  EXPECT_EQ(p[1]["offset"], 3);
  EXPECT_EQ(p[0]["q"].size(), 64u);
}

TEST(RopeApi, TurnsOnePairByPositionTimesFrequency) {
  TestServer s(temp_path("r.db"));
  auto r = s.post("/api/rope", json{{"q", {1, 0}}, {"k", {1, 0}}, {"pairs", {{2, 0}}}});
  ASSERT_EQ(r.status, 200) << r.raw;
  EXPECT_NEAR(r.body["pairs"][0]["q"][0].get<double>(), std::cos(2.0), 1e-5);
  EXPECT_NEAR(r.body["pairs"][0]["q"][1].get<double>(), std::sin(2.0), 1e-5);
}

TEST(RopeApi, RefusesBadRequestsByName) {
  TestServer s(temp_path("r.db"));
  EXPECT_EQ(s.post("/api/rope", json{{"pairs", {{1, 2, 3}}}}).status, 400);
  EXPECT_EQ(s.post("/api/rope", json{{"pairs", {{-1, 2}}}}).status, 400);
  EXPECT_EQ(s.post("/api/rope", json{{"pairs", {{9000, 2}}}}).status, 400);
  EXPECT_EQ(s.post("/api/rope", json{{"pairs", {{1, 2}}}, {"q", {1, 2, 3}}, {"k", {1, 2, 3}}}).status, 400);
  EXPECT_EQ(s.post("/api/rope", json{{"pairs", {{1, 2}}}, {"theta", 1}}).status, 400);
  auto unknown = s.post("/api/rope", json{{"pairs", {{1, 2}}}, {"nope", 1}});
  EXPECT_EQ(unknown.status, 400);
  EXPECT_NE(unknown.raw.find("nope"), std::string::npos) << unknown.raw;
  EXPECT_EQ(s.post("/api/rope", json{{"theta", 10000}}).status, 400);
  // an empty vector names none: it was read as the lesson's own
  auto empty = s.post("/api/rope", json{{"pairs", {{1, 2}}}, {"q", json::array()}, {"k", json::array()}});
  EXPECT_EQ(empty.status, 400);
  EXPECT_NE(empty.raw.find("Field 'q' is an empty list"), std::string::npos) << empty.raw;
  // past float's range the theta was read as infinite and called "not above 1"
  for (double theta : {1e308, 1e12}) {
    auto big = s.post("/api/rope", json{{"pairs", {{1, 2}}}, {"theta", theta}});
    EXPECT_EQ(big.status, 400);
    EXPECT_NE(big.raw.find("at most 1,000,000,000"), std::string::npos) << big.raw;
  }
}

TEST(RopeApi, WavelengthsFollowThetaAndSayWhatIsWrong) {
  TestServer s(temp_path("r.db"));
  auto r = s.get("/api/rope/wavelengths?theta=500000&head_size=128");
  ASSERT_EQ(r.status, 200) << r.raw;
  ASSERT_EQ(r.body["pairs"].size(), 64u);
  EXPECT_NEAR(r.body["pairs"][63]["wavelength"].get<double>(), 2 * M_PI * std::pow(500000.0, 126.0 / 128), 1.0);
  EXPECT_EQ(r.body["presets"][1]["name"], "Llama 3");
  auto abc = s.get("/api/rope/wavelengths?theta=abc");
  EXPECT_EQ(abc.status, 400);
  EXPECT_EQ(abc.body["error"]["message"], "The base theta must be a number; got \u201c" "abc" "\u201d.");
  EXPECT_EQ(s.get("/api/rope/wavelengths?head_size=2.5").status, 400);
  EXPECT_EQ(s.get("/api/rope/wavelengths?head_size=63").status, 400);
  auto huge = s.get("/api/rope/wavelengths?head_size=100000000");  // a whole number, only too big
  EXPECT_EQ(huge.status, 400);
  EXPECT_NE(huge.raw.find("at most 1024 here"), std::string::npos) << huge.raw;
  EXPECT_EQ(s.get("/api/rope/wavelengths?x=1").status, 400);
}

TEST(PositionsApi, ShowsTheModelsLearnedPositionsBesideTheSinusoids) {
  TestServer s = lesson_server("p.db");
  auto r = s.get("/api/positions");
  ASSERT_EQ(r.status, 200) << r.raw;
  EXPECT_EQ(r.body["n_ctx"], 128);
  ASSERT_EQ(r.body["learned"].size(), 128u);
  EXPECT_NEAR(r.body["learned"][7][7].get<double>(), 1.0, 1e-4);
  EXPECT_NEAR(r.body["sinusoidal"][3][5].get<double>(), r.body["sinusoidal"][5][3].get<double>(), 1e-6);
}

TEST(PositionsApi, WithoutAModelShowsTheSinusoidsAndSaysWhy) {
  TestServer s(temp_path("p.db"));
  auto r = s.get("/api/positions");
  ASSERT_EQ(r.status, 200) << r.raw;
  EXPECT_TRUE(r.body["learned"].is_null());
  EXPECT_EQ(r.body["learned_note"], "No model is loaded.");
  EXPECT_EQ(r.body["sinusoidal"].size(), 128u);
}

TEST(PositionsApi, TheContentOnlyPatternPermutesWithTheTokens) {
  TestServer s = lesson_server("p.db");
  const std::string text = "the man sent his men to the mill";
  auto a = s.post("/api/positions/content-only", json{{"text", text}, {"head", 1}});
  ASSERT_EQ(a.status, 200) << a.raw;
  const int T = int(a.body["tokens"].size());
  std::vector<int> order;
  for (int i = T - 1; i >= 0; --i) order.push_back(i);
  auto b = s.post("/api/positions/content-only", json{{"text", text}, {"head", 1}, {"order", order}});
  ASSERT_EQ(b.status, 200) << b.raw;
  for (int i = 0; i < T; ++i)
    for (int j = 0; j < T; ++j)
      EXPECT_NEAR(b.body["pattern"][i][j].get<double>(), a.body["pattern"][order[i]][order[j]].get<double>(), 2e-5);
  EXPECT_EQ(b.body["tokens"][0]["text"], a.body["tokens"][T - 1]["text"]);
}

TEST(PositionsApi, TheContentOnlyViewRefusesBadInput) {
  TestServer s = lesson_server("p.db");
  EXPECT_EQ(s.post("/api/positions/content-only", json{{"text", "a b c"}, {"head", 2}}).status, 400);
  EXPECT_EQ(s.post("/api/positions/content-only", json{{"text", " "}}).status, 400);
  auto order = s.post("/api/positions/content-only", json{{"text", "a b c"}, {"order", {0, 0, 1}}});
  EXPECT_EQ(order.status, 400);
  EXPECT_NE(order.raw.find("each of the text's 3 tokens once"), std::string::npos) << order.raw;
  auto no_order = s.post("/api/positions/content-only", json{{"text", "a b c"}, {"order", json::array()}});
  EXPECT_EQ(no_order.status, 400);  // was read as the text's own order
  EXPECT_NE(no_order.raw.find("Field 'order' is an empty list"), std::string::npos) << no_order.raw;
  std::string longer;
  for (int i = 0; i < 70; ++i) longer += " the";
  EXPECT_EQ(s.post("/api/positions/content-only", json{{"text", longer}}).status, 413);
  TestServer no_model(temp_path("n.db"));
  EXPECT_EQ(no_model.post("/api/positions/content-only", json{{"text", "a b"}}).status, 503);
}

TEST(PositionsApi, ListsTheThreeLessonModelsAndSaysWhereAMissingOneWasLookedFor) {
  TestServer s = lesson_server("m.db");
  auto r = s.get("/api/positions/models");
  ASSERT_EQ(r.status, 200) << r.raw;
  const auto& m = r.body["models"];
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[0]["name"], "headlab-nopos");
  EXPECT_FALSE(m[0]["available"].get<bool>());
  EXPECT_NE(m[0]["error"].get<std::string>().find(models_dir()), std::string::npos) << m[0];
  EXPECT_EQ(m[2]["name"], "headlab-rope");
  ASSERT_TRUE(m[2]["available"].get<bool>()) << m[2];
  EXPECT_EQ(m[2]["positions"], "rotary");
  EXPECT_EQ(m[2]["config_positions"], "learned");  // the stand-in's own config
  EXPECT_EQ(m[2]["trained_context"], 64);
  EXPECT_GE(m[2]["previous_token"]["layer"].get<int>(), 0);
  EXPECT_GE(m[2]["induction"]["score"].get<double>(), 0.0);
  // the previous-token head by band of query positions, cut to the trained context
  const auto& bands = m[2]["previous_by_position"];
  ASSERT_EQ(bands.size(), 3u) << m[2];
  EXPECT_EQ(bands[0]["from"], 2);
  EXPECT_EQ(bands[1]["from"], 8);
  EXPECT_EQ(bands[2]["to"], 64);
  for (const auto& b : bands) {
    EXPECT_GT(b["queries"].get<int>(), 0);
    EXPECT_GE(b["share"].get<double>(), 0.0);
    EXPECT_LE(b["share"].get<double>(), 1.0);
    EXPECT_NEAR(b["chance"].get<double>(), 1.0 / ((b["from"].get<int>() + b["to"].get<int>()) / 2.0), 0.07) << b;
  }
}

TEST(PositionsApi, MeasuresTheLossInsideAndPastTheTrainedLength) {
  TestServer s = lesson_server("l.db");
  auto r = s.post("/api/positions/length", json{{"model", "headlab-rope"}});
  ASSERT_EQ(r.status, 200) << r.raw;
  EXPECT_EQ(r.body["trained_context"], 64);
  EXPECT_EQ(r.body["run_limit"], 128);  // learned positions: n_ctx rows of wpe
  EXPECT_EQ(r.body["T"], 128);
  EXPECT_EQ(r.body["token_loss"].size(), 127u);
  EXPECT_EQ(r.body["beyond_count"], 127 - 64);
  EXPECT_GT(r.body["inside"].get<double>(), 0.0);
  EXPECT_GT(r.body["beyond"].get<double>(), 0.0);
  EXPECT_EQ(s.post("/api/positions/length", json{{"model", "headlab-nopos"}}).status, 404);
  EXPECT_EQ(s.post("/api/positions/length", json{{"model", "../etc"}}).status, 400);
  EXPECT_EQ(s.post("/api/positions/length", json{{"model", "headlab-rope"}, {"text", "a b"}}).status, 400);
  auto blank = s.post("/api/positions/length", json{{"model", "headlab-rope"}, {"text", ""}});
  EXPECT_EQ(blank.status, 400);  // was read as the held-out text
  EXPECT_NE(blank.raw.find("Field 'text' is empty"), std::string::npos) << blank.raw;
}

// Lesson 2 shows a sink from a lesson model when the built-in model has none: the models'
// summary names the scanner's sink heads, and a run gives the value-weighted rows and the
// find-sink numbers read off them (rows 2..T-1), as the check computes them.
TEST(PositionsApi, NamesTheSinkHeadsAndGivesAHeadsFirstTokenSharesRawAndValueWeighted) {
  // the repository's own lesson models (headlab-learned's head 1.1 is a sink)
  TestServer s(temp_path("k.db"), model_dir(), 8,
               [](headlab::server::ServerOptions& o) { o.models_dir = std::string(HEADLAB_SOURCE_DIR) + "/models"; });
  auto models = s.get("/api/positions/models");
  ASSERT_EQ(models.status, 200) << models.raw;
  for (const auto& m : models.body["models"]) {
    if (!m["available"].get<bool>()) continue;
    ASSERT_TRUE(m.contains("sinks")) << m.dump();
    for (const auto& k : m["sinks"])
      EXPECT_LT(k["value_weighted"].get<double>(), 0.5 * k["first_token"].get<double>()) << m["name"] << k.dump();
    if (m["name"] == "headlab-learned") EXPECT_FALSE(m["sinks"].empty()) << m.dump();
  }
  auto r = s.post("/api/positions/run", json{{"model", "headlab-learned"},
                                             {"text", "the man said that his men will report to the market before the end of the year"},
                                             {"layer", 1},
                                             {"head", 1}});
  ASSERT_EQ(r.status, 200) << r.raw;
  const auto& p = r.body["pattern"];
  const auto& w = r.body["value_weighted"];
  const int T = int(r.body["tokens"].size());
  ASSERT_EQ(int(w.size()), T);
  double attention = 0, weighted = 0;
  for (int q = 0; q < T; ++q) {
    double sum = 0;
    for (int k = 0; k < T; ++k) {
      sum += w[q][k].get<double>();
      if (k > q) EXPECT_EQ(w[q][k].get<double>(), 0.0);
    }
    EXPECT_NEAR(sum, 1.0, 1e-3);  // each row normalised again
    if (q >= 2) attention += p[q][0].get<double>(), weighted += w[q][0].get<double>();
  }
  const auto& f = r.body["first_token"];
  EXPECT_EQ(f["rows"], T - 2);
  EXPECT_NEAR(f["attention"].get<double>(), attention / (T - 2), 1e-4);
  EXPECT_NEAR(f["value_weighted"].get<double>(), weighted / (T - 2), 1e-4);
  EXPECT_EQ(f["parks"].get<bool>(), weighted < 0.5 * attention);
}

TEST(PositionsApi, RunsOneHeadOfALessonModelUnderTheMask) {
  TestServer s = lesson_server("r.db");
  auto r = s.post("/api/positions/run", json{{"model", "headlab-rope"}, {"text", "the cat sat"}, {"layer", 1}, {"head", 0}});
  ASSERT_EQ(r.status, 200) << r.raw;
  const auto& p = r.body["pattern"];
  const int T = int(r.body["tokens"].size());
  for (int q = 0; q < T; ++q) {
    double sum = 0;
    for (int k = 0; k < T; ++k) {
      sum += p[q][k].get<double>();
      if (k > q) EXPECT_EQ(p[q][k].get<double>(), 0.0);
    }
    EXPECT_NEAR(sum, 1.0, 1e-3);
  }
  // the share on the token before, over queries 2..T-1, read off the same pattern
  double share = 0, chance = 0;
  for (int q = 2; q < T; ++q) share += p[q][q - 1].get<double>(), chance += 1.0 / (q + 1);
  const auto& prev = r.body["previous_token"];
  EXPECT_EQ(prev["queries"], T - 2);
  EXPECT_NEAR(prev["share"].get<double>(), share / (T - 2), 1e-4);
  EXPECT_NEAR(prev["chance"].get<double>(), chance / (T - 2), 1e-4);
  EXPECT_EQ(s.post("/api/positions/run", json{{"model", "headlab-rope"}, {"text", "a"}, {"layer", 5}, {"head", 0}}).status, 400);
}

json check(const std::string& challenge, json answer) {
  return {{"learner", "positions-learner"}, {"challenge", challenge}, {"answer", std::move(answer)}};
}

TEST(WordOrderChecks, TheOffsetChallengeIsMetOnlyByTheSameOffsetFarApart) {
  TestServer s = lesson_server("c.db");
  auto start = s.post("/api/lessons/word-order/check", check("offset-only", {{"positions", {5, 2, 9, 3}}}));
  ASSERT_EQ(start.status, 200) << start.raw;
  EXPECT_FALSE(start.body["correct"].get<bool>());
  auto met = s.post("/api/lessons/word-order/check", check("offset-only", {{"positions", {5, 2, 905, 902}}}));
  ASSERT_EQ(met.status, 200) << met.raw;
  EXPECT_TRUE(met.body["correct"].get<bool>()) << met.raw;
  EXPECT_EQ(met.body["progress"]["completed_count"], 1);
}

TEST(WordOrderChecks, TheShuffleIsCheckedOnTheLearnersOrderAndAFlatRowEarnsNothing) {
  TestServer s = lesson_server("c.db");
  const std::string text = "the man sent his men to the mill by the river";  // the page's: rows with a clear favourite
  auto base = s.post("/api/positions/content-only", json{{"text", text}, {"head", 0}});
  const int T = int(base.body["tokens"].size());
  std::vector<int> order;
  for (int i = T - 1; i >= 0; --i) order.push_back(i);
  auto argmax = [&](const json& row) {
    int best = 0;
    for (int k = 1; k < T; ++k)
      if (row[k].get<double>() > row[best].get<double>()) best = k;
    return best;
  };
  // The head and query whose row is most peaked, as the page follows, among those whose
  // favourite word leaves its place under the reversal (the check refuses a flat row and an
  // unmoved word).
  int head = -1, query = -1, best = -1;
  double top = 0;
  for (int h = 0;; ++h) {
    auto shuffled = s.post("/api/positions/content-only", json{{"text", text}, {"head", h}, {"order", order}});
    if (shuffled.status != 200) break;
    for (int q = 0; q < T; ++q) {
      const auto& row = shuffled.body["pattern"][q];
      const int k = argmax(row);
      if (order[k] == T - 1 - k && k == T - 1 - k) continue;  // the middle token: the reversal leaves it
      if (row[k].get<double>() > top) top = row[k].get<double>(), head = h, query = q, best = k;
    }
  }
  ASSERT_GE(query, 0);
  auto right = s.post("/api/lessons/word-order/check",
                      check("shuffle-follows", {{"text", text}, {"head", head}, {"order", order}, {"positions", {query, best}}}));
  ASSERT_EQ(right.status, 200) << right.raw;
  // This test's model may spread every row nearly evenly: then no pick tells anything and
  // the check says so; with a clear favourite the word followed is met.
  if (top >= headlab::course::kShuffleFavouriteOverEven / T + 0.01) {
    EXPECT_TRUE(right.body["correct"].get<bool>()) << right.raw;
  } else {
    EXPECT_FALSE(right.body["correct"].get<bool>()) << right.raw;
    EXPECT_NE(right.body["explanation"].get<std::string>().find("no clear favourite"), std::string::npos) << right.raw;
  }
  std::vector<int> same;
  for (int i = 0; i < T; ++i) same.push_back(i);
  auto unshuffled = s.post("/api/lessons/word-order/check",
                           check("shuffle-follows", {{"text", text}, {"head", 0}, {"order", same}, {"positions", {0, 0}}}));
  ASSERT_EQ(unshuffled.status, 200);
  EXPECT_FALSE(unshuffled.body["correct"].get<bool>());
  EXPECT_EQ(s.post("/api/lessons/word-order/check", check("shuffle-follows", {{"order", "x"}})).status, 400);
}

TEST(WordOrderChecks, TheNearestPositionGuessIsCheckedOnTheModelsWpe) {
  TestServer s = lesson_server("c.db");
  auto pos = s.get("/api/positions");
  const auto& row = pos.body["learned"][20];
  int best = -1;
  for (int j = 0; j < 128; ++j)
    if (j != 20 && (best < 0 || row[j].get<double>() > row[best].get<double>())) best = j;
  auto right = s.post("/api/lessons/word-order/check", check("wpe-neighbour", {{"positions", {20, best}}}));
  ASSERT_EQ(right.status, 200) << right.raw;
  EXPECT_TRUE(right.body["correct"].get<bool>()) << right.raw;
  auto self = s.post("/api/lessons/word-order/check", check("wpe-neighbour", {{"positions", {20, 20}}}));
  EXPECT_FALSE(self.body["correct"].get<bool>());
  EXPECT_EQ(s.post("/api/lessons/word-order/check", check("wpe-neighbour", {{"positions", {20, 500}}})).status, 400);
}

TEST(WordOrderChecks, AWrongGuessIsNeverToldTheAnswerAndAShownAnswerIsNeverCreditedAfter) {
  TestServer s = lesson_server("c.db");
  auto pos = s.get("/api/positions");
  const auto& row = pos.body["learned"][20];
  int best = -1, worst = -1;
  for (int j = 0; j < 128; ++j)
    if (j != 20) {
      if (best < 0 || row[j].get<double>() > row[best].get<double>()) best = j;
      if (worst < 0 || row[j].get<double>() < row[worst].get<double>()) worst = j;
    }
  auto wrong = s.post("/api/lessons/word-order/check", check("wpe-neighbour", {{"positions", {20, worst}}}));
  ASSERT_EQ(wrong.status, 200) << wrong.raw;
  EXPECT_FALSE(wrong.body["correct"].get<bool>());
  const std::string said = wrong.body["explanation"];
  EXPECT_EQ(said.find(" is " + std::to_string(best) + " "), std::string::npos) << said;
  // Shown on request: the server tells the answer, remembers it, and never credits it after.
  auto shown = s.post("/api/lessons/word-order/check", check("wpe-neighbour", {{"positions", {20}}, {"revealed", true}}));
  ASSERT_EQ(shown.status, 200) << shown.raw;
  EXPECT_FALSE(shown.body["correct"].get<bool>());
  EXPECT_NE(shown.body["explanation"].get<std::string>().find("position 20 is " + std::to_string(best) + " (cosine"), std::string::npos)
      << shown.raw;
  auto retyped = s.post("/api/lessons/word-order/check", check("wpe-neighbour", {{"positions", {20, best}}}));
  ASSERT_EQ(retyped.status, 200) << retyped.raw;
  EXPECT_FALSE(retyped.body["correct"].get<bool>()) << retyped.raw;
  EXPECT_NE(retyped.body["explanation"].get<std::string>().find("earns no credit"), std::string::npos) << retyped.raw;
  // Without a reveal, one number is not an answer.
  EXPECT_EQ(s.post("/api/lessons/word-order/check", check("offset-only", {{"positions", {20}}})).status, 400);
}

// A wrong guess is told how far off it is: a client could walk every position until one is
// right. Only the first answer on a position counts; another position is a fresh guess.
TEST(WordOrderChecks, OnlyTheFirstGuessOnAPositionCanEarnCredit) {
  TestServer s = lesson_server("g.db");
  auto pos = s.get("/api/positions");
  auto nearest = [&](int p) {
    const auto& row = pos.body["learned"][p];
    int best = -1;
    for (int j = 0; j < 128; ++j)
      if (j != p && (best < 0 || row[j].get<double>() > row[best].get<double>())) best = j;
    return best;
  };
  const int best = nearest(30);
  const int wrong_guess = best == 0 ? 1 : 0;
  auto wrong = s.post("/api/lessons/word-order/check", check("wpe-neighbour", {{"positions", {30, wrong_guess}}}));
  ASSERT_EQ(wrong.status, 200) << wrong.raw;
  EXPECT_FALSE(wrong.body["correct"].get<bool>());
  auto steered = s.post("/api/lessons/word-order/check", check("wpe-neighbour", {{"positions", {30, best}}}));
  ASSERT_EQ(steered.status, 200) << steered.raw;
  EXPECT_FALSE(steered.body["correct"].get<bool>()) << steered.raw;
  EXPECT_NE(steered.body["explanation"].get<std::string>().find("only the first answer on a position counts"),
            std::string::npos)
      << steered.raw;
  // A refused request spends no guess: position 40's first real answer still counts.
  EXPECT_EQ(s.post("/api/lessons/word-order/check", check("wpe-neighbour", {{"positions", {40, 500}}})).status, 400);
  auto fresh = s.post("/api/lessons/word-order/check", check("wpe-neighbour", {{"positions", {40, nearest(40)}}}));
  ASSERT_EQ(fresh.status, 200) << fresh.raw;
  EXPECT_TRUE(fresh.body["correct"].get<bool>()) << fresh.raw;
}

// A reveal request the check refuses (no position) showed nothing: it is not remembered, so
// the challenge can still be earned.
TEST(WordOrderChecks, ARefusedRevealIsNotRemembered) {
  TestServer s = lesson_server("r.db");
  EXPECT_EQ(s.post("/api/lessons/word-order/check", check("wpe-neighbour", {{"positions", json::array()}, {"revealed", true}})).status,
            400);
  auto pos = s.get("/api/positions");
  const auto& row = pos.body["learned"][50];
  int best = -1;
  for (int j = 0; j < 128; ++j)
    if (j != 50 && (best < 0 || row[j].get<double>() > row[best].get<double>())) best = j;
  auto right = s.post("/api/lessons/word-order/check", check("wpe-neighbour", {{"positions", {50, best}}}));
  ASSERT_EQ(right.status, 200) << right.raw;
  EXPECT_TRUE(right.body["correct"].get<bool>()) << right.raw;
}

TEST(WordOrderPrograms, ShowWhatTheBuildPrinted) {
  TestServer s(temp_path("g.db"));
  auto r = s.get("/api/lessons/word-order/programs");
  ASSERT_EQ(r.status, 200) << r.raw;
  ASSERT_EQ(r.body["programs"].size(), 2u);
  for (const auto& p : r.body["programs"])
    EXPECT_NE(p["output"].get<std::string>().find("offset 3: q.k = 22.9082"), std::string::npos) << p["output"];
}

}  // namespace
