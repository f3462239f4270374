// The model API against a real server with a small random-weight model (the built-in
// model's tokenizer, weights made here): shapes, sums, errors, interventions, the cache.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "tokenizer/bpe_tokenizer.h"
#include "formats/hf/checkpoint.h"
#include "testing/random_model.h"
#include "testing/test_server.h"

using headlab::testing::TestServer;
using headlab::testing::temp_path;
using nlohmann::json;
namespace fs = std::filesystem;
namespace model = headlab::model;

namespace {
// A 2-layer, 4-head random model with a real byte-level BPE vocabulary.
std::string make_model_dir() {
  static const std::string dir = headlab::testing::make_random_model_dir("tiny-model", {2, 4, 32, 64, 7});
  return dir;
}

void expect_rows_sum_to_one(const json& rows, const std::string& what) {
  for (std::size_t q = 0; q < rows.size(); ++q) {
    ASSERT_EQ(rows[q].size(), q + 1) << what << ": row " << q << " holds keys 0..q";
    double sum = 0;
    for (const auto& v : rows[q]) sum += v.get<double>();
    EXPECT_NEAR(sum, 1.0, 1e-3) << what << " row " << q;
  }
}

void expect_error(const TestServer::Reply& r, int status, const std::string& fragment) {
  EXPECT_EQ(r.status, status) << r.raw;
  ASSERT_TRUE(r.body.contains("error")) << r.raw;
  EXPECT_NE(r.body["error"]["message"].get<std::string>().find(fragment), std::string::npos) << r.raw;
}
}  // namespace

TEST(ModelApi, DescribesTheLoadedModel) {
  TestServer s(temp_path("m.db"), make_model_dir());
  auto r = s.get("/api/model");
  ASSERT_EQ(r.status, 200) << r.raw;
  EXPECT_EQ(r.body["config"]["n_layer"], 2);
  EXPECT_EQ(r.body["config"]["n_head"], 4);
  EXPECT_EQ(r.body["max_tokens"], 64);  // min(--max-tokens 256, n_ctx 64)
}

TEST(ModelApi, RunGivesEveryHeadsRaggedPatternAndEachRowSumsToOne) {
  TestServer s(temp_path("m.db"), make_model_dir());
  auto r = s.post("/api/model/run", json{{"text", "the cat sat on the mat"}, {"rollout", true},
                                          {"views", {"pattern", "value_weighted"}}});
  ASSERT_EQ(r.status, 200) << r.raw;
  const std::size_t T = r.body["tokens"].size();
  ASSERT_GE(T, 3u);
  EXPECT_EQ(r.body["tokens"][0]["id"], r.body["tokens"][0]["id"]);  // BOS first (bos defaults to true)
  ASSERT_EQ(r.body["heads"].size(), 8u);
  for (const auto& h : r.body["heads"]) {
    expect_rows_sum_to_one(h["pattern"], "pattern");
    expect_rows_sum_to_one(h["value_weighted"], "value_weighted");
  }
  expect_rows_sum_to_one(r.body["rollout"], "rollout");
  ASSERT_EQ(r.body["top_next"].size(), T);
  ASSERT_EQ(r.body["token_loss"].size(), T);
  EXPECT_TRUE(r.body["token_loss"][T - 1].is_null());
  const auto& top = r.body["top_next"][1];
  ASSERT_EQ(top.size(), 5u);
  for (std::size_t i = 1; i < top.size(); ++i) EXPECT_GE(top[i - 1]["prob"], top[i]["prob"]);
  EXPECT_GT(r.body["loss"].get<double>(), 0.0);
}

TEST(ModelApi, RunReturnsOnlyTheHeadsAskedFor) {
  TestServer s(temp_path("m.db"), make_model_dir());
  auto r = s.post("/api/model/run", json{{"text", "a b c"}, {"heads", {{1, 3}}}, {"bos", false}});
  ASSERT_EQ(r.status, 200) << r.raw;
  ASSERT_EQ(r.body["heads"].size(), 1u);
  EXPECT_EQ(r.body["heads"][0]["layer"], 1);
  EXPECT_EQ(r.body["heads"][0]["head"], 3);
}

TEST(ModelApi, RunRejectsBadRequestsWithMessages) {
  TestServer s(temp_path("m.db"), make_model_dir());
  expect_error(s.post("/api/model/run", json{{"text", "a"}, {"heads", {{2, 0}}}}), 400, "layers 0 to 1");
  expect_error(s.post("/api/model/run", json{{"text", "a"}, {"heads", {{0, 4}}}}), 400, "heads 0 to 3");
  expect_error(s.post("/api/model/run", json{{"text", ""}}), 400, "empty");
  expect_error(s.post("/api/model/run", json{{"text", "a"}, {"colour", 1}}), 400, "Unknown field 'colour'");
  expect_error(s.post("/api/model/run", json{{"text", "a"}, {"views", {"heatmap"}}}), 400, "Unknown view");
  expect_error(s.post("/api/model/run", json{{"text", "a"}, {"top_k", 500}}), 400, "top_k");
  expect_error(s.post("/api/model/run", std::string("{\"text\": \"bad \xC3\x28\"}")), 400, "not valid JSON");
  std::string long_text;
  for (int i = 0; i < 200; ++i) long_text += "word ";
  expect_error(s.post("/api/model/run", json{{"text", long_text}}), 413, "\"truncate\": true");
}

TEST(ModelApi, TruncateKeepsTheLastTokens) {
  TestServer s(temp_path("m.db"), make_model_dir());
  std::string long_text;
  for (int i = 0; i < 200; ++i) long_text += "word ";
  auto r = s.post("/api/model/run", json{{"text", long_text}, {"truncate", true}, {"heads", json::array()}});
  ASSERT_EQ(r.status, 200) << r.raw;
  EXPECT_EQ(r.body["tokens"].size(), 64u);
  EXPECT_EQ(r.body["truncated"], true);
}

TEST(ModelApi, AblatingEveryHeadChangesTheLoss) {
  TestServer s(temp_path("m.db"), make_model_dir());
  json ablate = json::array();
  for (int l = 0; l < 2; ++l)
    for (int h = 0; h < 4; ++h) ablate.push_back({{"layer", l}, {"head", h}, {"kind", "zero"}});
  auto r = s.post("/api/model/intervene", json{{"text", "the cat sat on the mat . the cat sat"}, {"ablate", ablate}});
  ASSERT_EQ(r.status, 200) << r.raw;
  EXPECT_NE(r.body["baseline"]["loss"], r.body["intervened"]["loss"]);
  auto none = s.post("/api/model/intervene", json{{"text", "the cat sat on the mat"}});
  EXPECT_EQ(none.body["baseline"]["loss"], none.body["intervened"]["loss"]);
}

TEST(ModelApi, InterventionsAreValidated) {
  TestServer s(temp_path("m.db"), make_model_dir());
  expect_error(s.post("/api/model/intervene", json{{"text", "a b"}, {"ablate", {{{"layer", 0}, {"head", 9}}}}}), 400,
               "heads 0 to 3");
  expect_error(s.post("/api/model/intervene", json{{"text", "a b"}, {"block", {{{"layer", 0}, {"key", 99}}}}}), 400,
               "outside the text");
  expect_error(s.post("/api/model/intervene",
                      json{{"text", "a b"}, {"ablate", {{{"layer", 0}, {"head", 1}, {"kind", "half"}}}}}),
               400, "\"zero\" or \"mean\"");
}

TEST(ModelApi, IdenticalRequestsComeFromTheCache) {
  TestServer s(temp_path("m.db"), make_model_dir());
  std::string a = R"({"text": "the cat", "top_k": 3})", b = R"({ "top_k": 3, "text": "the cat" })";
  auto first = s.client().Post("/api/model/run", a, "application/json");
  auto second = s.client().Post("/api/model/run", b, "application/json");
  ASSERT_TRUE(first && second);
  EXPECT_EQ(first->get_header_value("X-Headlab-Cache"), "");
  EXPECT_EQ(second->get_header_value("X-Headlab-Cache"), "hit");
  EXPECT_EQ(first->body, second->body);
}

TEST(ModelApi, AFullQueueAnswers503WithRetryAfter) {
  TestServer s(temp_path("m.db"), make_model_dir(), /*model_queue=*/0);
  auto r = s.client().Post("/api/model/run", R"({"text": "the cat"})", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503);
  EXPECT_EQ(r->get_header_value("Retry-After"), "2");
  EXPECT_NE(r->body.find("busy"), std::string::npos);
}

// The model-time budget through HTTP (each client by its X-Forwarded-For address behind a
// trusted proxy): past it while another client used the model too, 429 with Retry-After.
TEST(ModelApi, AClientPastItsModelTimeBudgetWhileOthersUseTheModelGets429WithRetryAfter) {
  TestServer s(temp_path("m.db"), make_model_dir(), 8, [](headlab::server::ServerOptions& o) {
    o.trusted_proxies = {"127.0.0.1"};
    o.client_model_seconds = 1e-9;  // any run spends it
  });
  auto run = [&](const std::string& from, const std::string& text) {
    return s.client().Post("/api/model/run", {{"X-Forwarded-For", from}}, json{{"text", text}}.dump(), "application/json");
  };
  auto first = run("192.0.2.1", "the cat");
  ASSERT_TRUE(first);
  EXPECT_EQ(first->status, 200) << first->body;
  auto other = run("192.0.2.2", "the dog");  // another client: its own budget
  ASSERT_TRUE(other);
  EXPECT_EQ(other->status, 200) << other->body;
  auto refused = run("192.0.2.1", "the bird");  // past its budget, and 192.0.2.2 used the model
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 429) << refused->body;
  const int retry = std::atoi(refused->get_header_value("Retry-After").c_str());
  EXPECT_GE(retry, 1);
  EXPECT_LE(retry, 60);  // within the minute its run is counted in
  json body = json::parse(refused->body);
  EXPECT_EQ(body["error"]["code"], "rate_limited");
  EXPECT_NE(body["error"]["message"].get<std::string>().find("--client-model-seconds"), std::string::npos);
  auto cached = run("192.0.2.1", "the cat");  // an answer from the cache takes no model time
  ASSERT_TRUE(cached);
  EXPECT_EQ(cached->status, 200);
}

TEST(ModelApi, JoinedLearnersBehindOneAddressHaveBudgetsOfTheirOwnAndMadeUpOrRemovedOnesShareTheAddresss) {
  TestServer s(temp_path("m.db"), make_model_dir(), 8, [](headlab::server::ServerOptions& o) {
    o.trusted_proxies = {"127.0.0.1"};
    o.client_model_seconds = 1e-9;  // any run spends it
  });
  const std::string school = "192.0.2.1";  // the whole class behind one NAT address
  auto post = [&](const std::string& path, const json& body, httplib::Headers headers) {
    headers.insert({"X-Forwarded-For", school});
    auto r = s.client().Post(path.c_str(), headers, body.dump(), "application/json");
    EXPECT_TRUE(r);
    return r;
  };
  auto created = post("/api/classes", json{{"name", "Period 3"}}, {});
  ASSERT_EQ(created->status, 201) << created->body;
  const std::string code = json::parse(created->body)["class"]["code"];
  const std::string set_cookie = created->get_header_value("Set-Cookie");
  const std::string cookie = set_cookie.substr(0, set_cookie.find(';'));
  for (auto [learner, nickname] : {std::pair{"learner-ada-0001", "Ada"}, std::pair{"learner-bo-00002", "Bo"}})
    ASSERT_EQ(post("/api/class/join", json{{"code", code}, {"learner", learner}, {"nickname", nickname}}, {})->status, 200);
  auto run = [&](const std::string& learner, const std::string& text) {
    httplib::Headers h;
    if (!learner.empty()) h.insert({"X-Headlab-Learner", learner});
    return post("/api/model/run", json{{"text", text}}, h)->status;
  };
  EXPECT_EQ(run("", "the cat"), 200);                   // the address itself spends its budget
  EXPECT_EQ(run("learner-ada-0001", "the dog"), 200);   // Ada: her own budget
  EXPECT_EQ(run("made-up-learner-1", "the bird"), 429);  // never joined: the address's budget, spent
  EXPECT_EQ(run("learner-bo-00002", "the fish"), 200);  // Bo: his own, though Ada spent hers
  EXPECT_EQ(run("learner-ada-0001", "the cow"), 429);   // Ada past hers while Bo used the model
  auto removed = post("/api/class/remove-learner", json{{"code", code}, {"nickname", "Bo"}}, {{"Cookie", cookie}});
  ASSERT_EQ(removed->status, 200) << removed->body;
  EXPECT_EQ(run("learner-bo-00002", "the horse"), 429);  // removed (banned): back to the address's budget
}

TEST(ModelApi, WithoutAModelTheRoutesSayHowToLoadOne) {
  TestServer s(temp_path("m.db"));
  expect_error(s.get("/api/model"), 503, "--model PATH");
  auto run = s.post("/api/model/run", json{{"text", "a"}});
  expect_error(run, 503, "--model PATH");
  EXPECT_EQ(run.body["error"]["model_loaded"], false) << run.raw;  // waiting will not help: the page does not retry
}

TEST(ModelApi, ABrokenModelFolderStopsTheServerWithTheReason) {
  headlab::server::ServerOptions o;
  o.port = 0;
  o.db_path = temp_path("m.db");
  o.model_dir = "/nonexistent/model";
  auto s = headlab::server::Server::create(o);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("/nonexistent/model"), std::string::npos) << s.error().message;
}

TEST(ModelApi, TrainingLogKeepsEmptyCellsAsNull) {
  std::string dir = make_model_dir();
  {
    std::ofstream log(fs::path(dir) / "train_log.csv");
    log << "step,loss,heldout_loss\n0,5.5,5.6\n10,4.1,\n";
  }
  TestServer s(temp_path("m.db"), dir);
  auto r = s.get("/api/model/training-log");
  fs::remove(fs::path(dir) / "train_log.csv");
  ASSERT_EQ(r.status, 200) << r.raw;
  EXPECT_EQ(r.body["columns"], json({"step", "loss", "heldout_loss"}));
  ASSERT_EQ(r.body["rows"].size(), 2u);
  ASSERT_EQ(r.body["rows"][1].size(), 3u);
  EXPECT_TRUE(r.body["rows"][1][2].is_null());
  EXPECT_EQ(r.body["rows"][1][1], 4.1);
}

namespace {
// Row q - queries.begin of a windowed view holds keys keys.begin..min(keys.end, q+1)-1;
// each cell must be the full answer's cell [q][k].
void expect_window_of(const json& windowed, const json& full, int qb, int qe, int kb, int ke, const std::string& what) {
  ASSERT_EQ(windowed.size(), std::size_t(qe - qb)) << what << ": one row per query in the window";
  for (int q = qb; q < qe; ++q) {
    const json& row = windowed[q - qb];
    ASSERT_EQ(row.size(), std::size_t(std::max(0, std::min(ke, q + 1) - kb))) << what << " row " << q;
    for (int k = kb; k < kb + int(row.size()); ++k)
      EXPECT_EQ(row[k - kb], full[q][k]) << what << " query " << q << " key " << k;
  }
}
}  // namespace

TEST(ModelApi, AWindowSendsOnlyTheRowsAndKeysAsked) {
  TestServer s(temp_path("m.db"), make_model_dir());
  const std::string text = "the cat sat on the mat . the cat sat on the mat . the dog";
  json views = {"pattern", "value_weighted", "scores"};
  auto full = s.post("/api/model/run", json{{"text", text}, {"views", views}, {"rollout", true}});
  ASSERT_EQ(full.status, 200) << full.raw;
  EXPECT_FALSE(full.body.contains("window")) << "without a window the answer is the whole view";
  const int T = int(full.body["tokens"].size());
  ASSERT_GE(T, 14);
  // Rows 2..11; keys 4..8, so rows 2 and 3 hold no key and rows 9.. hold five.
  const int qb = 2, qe = 12, kb = 4, ke = 9;
  auto r = s.post("/api/model/run", json{{"text", text}, {"views", views}, {"rollout", true},
                                          {"window", {{"queries", {qb, qe}}, {"keys", {kb, ke}}}}});
  ASSERT_EQ(r.status, 200) << r.raw;
  EXPECT_EQ(r.body["window"], json({{"queries", {qb, qe}}, {"keys", {kb, ke}}}));
  ASSERT_EQ(r.body["heads"].size(), full.body["heads"].size());
  for (std::size_t i = 0; i < r.body["heads"].size(); ++i) {
    const json &h = r.body["heads"][i], &f = full.body["heads"][i];
    EXPECT_EQ(h["layer"], f["layer"]);
    EXPECT_EQ(h["head"], f["head"]);
    for (const char* view : {"pattern", "value_weighted", "scores"})
      expect_window_of(h[view], f[view], qb, qe, kb, ke, std::string(view) + " of head " + std::to_string(i));
  }
  expect_window_of(r.body["rollout"], full.body["rollout"], qb, qe, kb, ke, "rollout");
  // The small per-token parts stay for the whole text.
  for (const char* whole : {"tokens", "top_next", "token_loss", "loss"}) EXPECT_EQ(r.body[whole], full.body[whole]) << whole;
}

TEST(ModelApi, AWindowOverTheWholeTextIsTheWholeView) {
  TestServer s(temp_path("m.db"), make_model_dir());
  auto full = s.post("/api/model/run", json{{"text", "the cat sat on the mat"}});
  ASSERT_EQ(full.status, 200) << full.raw;
  const int T = int(full.body["tokens"].size());
  auto r = s.post("/api/model/run", json{{"text", "the cat sat on the mat"}, {"window", {{"queries", {0, T}}, {"keys", {0, T}}}}});
  ASSERT_EQ(r.status, 200) << r.raw;
  EXPECT_EQ(r.body["heads"], full.body["heads"]);
  // An empty range is a window too: no rows.
  auto empty = s.post("/api/model/run", json{{"text", "the cat sat on the mat"}, {"heads", {{0, 1}}},
                                              {"window", {{"queries", {T, T}}, {"keys", {0, T}}}}});
  ASSERT_EQ(empty.status, 200) << empty.raw;
  EXPECT_EQ(empty.body["heads"][0]["pattern"], json::array());
}

TEST(ModelApi, TheCellBudgetCountsOnlyTheCellsAWindowSends) {
  // 32 heads over 256 tokens with three views are 3.2 million values, beyond the 2 million
  // an answer carries; a 48-token window of them is 113 thousand.
  static const std::string dir = headlab::testing::make_random_model_dir("many-heads-model", {2, 16, 64, 256, 7});
  TestServer s(temp_path("m.db"), dir);
  std::string long_text;
  for (int i = 0; i < 400; ++i) long_text += "word ";
  json body = {{"text", long_text}, {"truncate", true}, {"views", {"pattern", "value_weighted", "scores"}}, {"top_k", 0}};
  expect_error(s.post("/api/model/run", body), 413, "a smaller \"window\"");
  body["window"] = {{"queries", {200, 248}}, {"keys", {200, 248}}};
  auto r = s.post("/api/model/run", body);
  ASSERT_EQ(r.status, 200) << r.raw.substr(0, 300);
  EXPECT_EQ(r.body["tokens"].size(), 256u);
  ASSERT_EQ(r.body["heads"].size(), 32u);
  std::size_t cells = 0;
  for (const auto& row : r.body["heads"][31]["scores"]) cells += row.size();
  EXPECT_EQ(cells, 48u * 49u / 2u);
}

TEST(ModelApi, BadWindowsAreRefusedNamingTheFieldAndTheRange) {
  TestServer s(temp_path("m.db"), make_model_dir());
  const std::string text = "the cat sat";
  const int T = int(s.post("/api/model/run", json{{"text", text}, {"heads", json::array()}}).body["tokens"].size());
  ASSERT_GE(T, 3);
  const std::string t = std::to_string(T), past = std::to_string(T + 1);
  auto with_window = [&](const json& window) { return s.post("/api/model/run", json{{"text", text}, {"window", window}}); };
  auto expect_bad = [&](const json& window, const std::string& fragment) {
    SCOPED_TRACE(window.dump());
    auto r = with_window(window);
    expect_error(r, 400, fragment);
    EXPECT_EQ(r.body["error"]["code"], "invalid_argument");
  };
  const json all = {0, T};
  expect_bad(json{0, T}, "Field 'window' must be an object {\"queries\": [begin, end], \"keys\": [begin, end]}");
  expect_bad(json{{"queries", all}, {"keys", all}, {"rows", all}}, "Unknown field 'rows' in 'window'");
  expect_bad(json{{"queries", all}}, "Missing field 'window.keys'");
  expect_bad(json{{"keys", all}}, "Missing field 'window.queries'");
  for (const json& not_two_integers : {json(3), json{1}, json{0, 1, 2}, json{0.5, 2}, json{"0", 2}, json{0, nullptr},
                                       json{0, 1e12}, json{0, 1'000'000'000'000LL}, json::object()})
    expect_bad(json{{"queries", not_two_integers}, {"keys", all}}, "Field 'window.queries' must be two whole numbers [begin, end]");
  expect_bad(json{{"queries", all}, {"keys", {-1, 2}}}, "'window.keys' is [-1, 2]; a range needs 0 <= begin <= end");
  expect_bad(json{{"queries", {3, 1}}, {"keys", all}}, "'window.queries' is [3, 1]; a range needs 0 <= begin <= end");
  expect_bad(json{{"queries", {0, T + 1}}, {"keys", all}},
             "'window.queries' is [0, " + past + "], beyond the text: it has " + t + " tokens, so a range lies within [0, " +
                 t + "]. Send an end of at most " + t);
  expect_bad(json{{"queries", all}, {"keys", {T + 5, T + 9}}}, "'window.keys' is [" + std::to_string(T + 5) + ", " +
                                                                    std::to_string(T + 9) + "], beyond the text");
  // A window counts tokens as sent: without the start token the same text has one fewer.
  auto no_bos = s.post("/api/model/run", json{{"text", text}, {"bos", false}, {"window", {{"queries", all}, {"keys", all}}}});
  expect_error(no_bos, 400, "it has " + std::to_string(T - 1) + " tokens");
  EXPECT_EQ(with_window(json{{"queries", all}, {"keys", all}}).status, 200);
}

TEST(ModelApi, QueryScoresReachEveryKeyAndAgreeWithTheRunsScoresUpToTheQuery) {
  TestServer s(temp_path("m.db"), make_model_dir());
  const std::string text = "the cat sat on the mat";
  auto run = s.post("/api/model/run", json{{"text", text}, {"heads", {{1, 2}}}, {"views", {"scores"}}, {"top_k", 0}});
  ASSERT_EQ(run.status, 200) << run.raw;
  const std::size_t T = run.body["tokens"].size();
  for (std::size_t q : {std::size_t(1), T / 2, T - 1}) {
    auto r = s.post("/api/model/query-scores", json{{"text", text}, {"layer", 1}, {"head", 2}, {"query", q}});
    ASSERT_EQ(r.status, 200) << r.raw;
    ASSERT_EQ(r.body["scores"].size(), T) << "a score for every key, the later ones too";
    for (std::size_t k = 0; k <= q; ++k)
      EXPECT_NEAR(r.body["scores"][k].get<double>(), run.body["heads"][0]["scores"][q][k].get<double>(), 2e-5)
          << "query " << q << " key " << k;
  }
}

TEST(ModelApi, QueryScoresRefuseAQueryOrHeadOutsideTheModelOrText) {
  TestServer s(temp_path("m.db"), make_model_dir());
  expect_error(s.post("/api/model/query-scores", json{{"text", "a b"}, {"layer", 0}, {"head", 0}, {"query", 9}}), 400,
               "query must be a token position from 0 to");
  EXPECT_EQ(s.post("/api/model/query-scores", json{{"text", "a b"}, {"layer", 5}, {"head", 0}, {"query", 0}}).status, 400);
  EXPECT_EQ(s.post("/api/model/query-scores", json{{"text", "a b"}, {"layer", 0}, {"head", 0}}).status, 400);
}

// Issue 24: a cache hit was gzipped afresh each time (155 ms of CPU for a 16 MB answer). The
// cache keeps the answer with its gzip made once; a hit sends those bytes.
TEST(ModelApi, ACachedAnswerIsSentWithTheGzipMadeWhenItWasCached) {
  TestServer s(temp_path("m.db"), make_model_dir());
  const std::string body = R"({"text": "the cat sat on the mat and the dog sat on the log", "top_k": 20})";
  httplib::Headers gzip = {{"Accept-Encoding", "gzip"}};
  auto first = s.client().Post("/api/model/run", gzip, body, "application/json");
  auto second = s.client().Post("/api/model/run", gzip, body, "application/json");
  auto plain = s.client().Post("/api/model/run", body, "application/json");
  ASSERT_TRUE(first && second && plain);
  ASSERT_GT(plain->body.size(), 1024u) << "the answer must be over the gzip threshold for this test";
  EXPECT_EQ(second->get_header_value("X-Headlab-Cache"), "hit");
  EXPECT_EQ(second->get_header_value("Content-Encoding"), "gzip");
  EXPECT_EQ(first->get_header_value("Content-Encoding"), "gzip");
  EXPECT_EQ(first->body, second->body);  // (the client library unzips them)
  EXPECT_EQ(second->body, plain->body);
  EXPECT_EQ(plain->get_header_value("Content-Encoding"), "");
  EXPECT_EQ(plain->body.front(), '{') << "a client that does not take gzip gets the plain answer";
}

namespace {
std::string unbase64(const std::string& s) {
  auto val = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    return c == '+' ? 62 : c == '/' ? 63 : -1;
  };
  std::string out;
  unsigned bits = 0;
  int n = 0;
  for (char c : s) {
    if (val(c) < 0) break;  // '=' padding
    bits = bits << 6 | unsigned(val(c));
    n += 6;
    if (n >= 8) out.push_back(char((bits >> (n -= 8)) & 0xff));
  }
  return out;
}
// A compact view's cells, row after row: uint16 / 65535 or float32.
std::vector<double> compact_cells(const json& view, bool probabilities) {
  const std::string b = unbase64(view.get<std::string>());
  std::vector<double> out;
  if (probabilities)
    for (std::size_t i = 0; i + 1 < b.size(); i += 2)
      out.push_back(double(unsigned((unsigned char)b[i]) | unsigned((unsigned char)b[i + 1]) << 8) / 65535.0);
  else
    for (std::size_t i = 0; i + 3 < b.size(); i += 4) {
      std::uint32_t u = 0;
      for (int k = 3; k >= 0; k--) u = u << 8 | (unsigned char)b[i + std::size_t(k)];
      float f;
      std::memcpy(&f, &u, 4);
      out.push_back(f);
    }
  return out;
}
std::vector<double> row_cells(const json& rows) {
  std::vector<double> out;
  for (const auto& row : rows)
    for (const auto& v : row) out.push_back(v.get<double>());
  return out;
}
}  // namespace

TEST(ModelApi, ACompactAnswerCarriesEveryViewWithinItsStatedPrecisionInFewerBytes) {
  TestServer s(temp_path("m.db"), make_model_dir());
  const std::string text = "the cat sat on the mat . the cat sat on the mat . the dog";
  json ask = {{"text", text}, {"views", {"pattern", "value_weighted", "scores"}}, {"rollout", true},
              {"window", {{"queries", {2, 12}}, {"keys", {4, 9}}}}};
  auto rows = s.post("/api/model/run", ask);
  ask["encoding"] = "base64";
  auto compact = s.post("/api/model/run", ask);
  ASSERT_EQ(rows.status, 200) << rows.raw;
  ASSERT_EQ(compact.status, 200) << compact.raw;
  EXPECT_EQ(compact.body["encoding"], "base64");
  EXPECT_LT(compact.raw.size(), rows.raw.size());
  // the rows round to 5 decimals (within 5e-6); uint16 is within 1/131070 of p
  const double u16 = 1.0 / 131070 + 5e-6 + 1e-12;
  for (std::size_t i = 0; i < rows.body["heads"].size(); ++i) {
    const json &c = compact.body["heads"][i], &r = rows.body["heads"][i];
    for (const char* view : {"pattern", "value_weighted", "scores"}) {
      const bool p = std::string(view) != "scores";
      const auto got = compact_cells(c[view], p), want = row_cells(r[view]);
      ASSERT_EQ(got.size(), want.size()) << view;
      for (std::size_t k = 0; k < got.size(); k++)
        EXPECT_NEAR(got[k], want[k], p ? u16 : 5e-6 + 1e-6 * std::fabs(want[k])) << view << " of head " << i << ", cell " << k;
    }
  }
  const auto got = compact_cells(compact.body["rollout"], true), want = row_cells(rows.body["rollout"]);
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t k = 0; k < got.size(); k++) EXPECT_NEAR(got[k], want[k], u16) << "rollout cell " << k;
  for (const char* whole : {"tokens", "top_next", "token_loss", "loss", "window"}) EXPECT_EQ(compact.body[whole], rows.body[whole]) << whole;
  auto bad = s.post("/api/model/run", json{{"text", text}, {"encoding", "hex"}});
  expect_error(bad, 400, "'encoding'");
}

TEST(ModelApi, WithoutPredictionsTheAnswerLeavesThemOutAndItsHeadsAreTheSame) {
  TestServer s(temp_path("m.db"), make_model_dir());
  for (json heads : {json{{0, 1}, {0, 3}}, json{{1, 2}}}) {
    json ask = {{"text", "the cat sat on the mat"}, {"heads", heads}, {"views", {"pattern", "value_weighted", "scores"}}};
    auto with = s.post("/api/model/run", ask);
    ask["predictions"] = false;
    auto without = s.post("/api/model/run", ask);  // layer 0's heads: the forward stops after block 0
    ASSERT_EQ(with.status, 200) << with.raw;
    ASSERT_EQ(without.status, 200) << without.raw;
    EXPECT_EQ(without.body["heads"], with.body["heads"]) << heads;
    EXPECT_EQ(without.body["tokens"], with.body["tokens"]);
    for (const char* gone : {"top_next", "token_loss", "loss"}) EXPECT_FALSE(without.body.contains(gone)) << gone;
    EXPECT_TRUE(with.body.contains("loss"));
  }
}
