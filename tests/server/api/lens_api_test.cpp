// POST /api/model/lens, /api/model/attribute and GET or POST /api/model/compose on the built-in
// model: the same answer as `headlab lens|attribute|compose --format json` (one pipeline, one
// codec), GET and POST alike, the composition answered from the cache the second time, and bad
// requests answered with the one error envelope.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "testing/process.h"
#include "testing/random_model.h"
#include "testing/test_server.h"

using headlab::testing::TestServer;
using headlab::testing::temp_path;
using nlohmann::json;

namespace {

const std::string kTiny = std::string(HEADLAB_SOURCE_DIR) + "/models/headlab-tiny";
// a random sequence twice: the induction heads complete the second copy
const std::string kIds = "4095 812 1999 77 3021 540 2210 1403 96 812 1999 77 3021 540 2210 1403";

json ids_json() {
  json ids = json::array();
  for (int id : {4095, 812, 1999, 77, 3021, 540, 2210, 1403, 96, 812, 1999, 77, 3021, 540, 2210, 1403}) ids.push_back(id);
  return ids;
}

json cli_json(const std::string& args) {
  const auto r = headlab::testing::command_run(std::string(HEADLAB_BINARY_DIR) + "/headlab " + args + " --model " + kTiny +
                                               " --format json 2>/dev/null");
  if (r.exit_code != 0) return json{{"exit", r.exit_code}, {"out", r.out}};
  return json::parse(r.out);
}

void expect_error(const TestServer::Reply& r, int status, const std::string& says) {
  EXPECT_EQ(r.status, status) << r.raw;
  ASSERT_TRUE(r.body.contains("error")) << r.raw;
  EXPECT_NE(r.body["error"]["message"].get<std::string>().find(says), std::string::npos) << r.raw;
}

}  // namespace

TEST(LensApi, AnswersAsTheCliDoesAndTheInductionHeadsPredictTheRepeat) {
  TestServer s(temp_path("m.db"), kTiny);
  auto api = s.post("/api/model/lens", json{{"ids", ids_json()}, {"answers", {"#96"}}, {"top_k", 3}});
  ASSERT_EQ(api.status, 200) << api.raw;
  EXPECT_EQ(cli_json("lens --ids '" + kIds + "' --answer '#96' --top 3"), api.body);
  EXPECT_EQ(api.body["what"], "logit_lens");
  EXPECT_EQ(api.body["axes"], json({"layer", "pos"}));
  EXPECT_EQ(api.body["layers"], json({"0_pre", "1_pre", "final_post"}));
  const json& last = api.body["values"][2][15];
  EXPECT_EQ(last["answers"][0]["rank"], 0);
  EXPECT_EQ(last["kl_final"], 0.0);
  EXPECT_GT(api.body["values"][0][15]["answers"][0]["rank"].get<int>(), 10);
}

TEST(AttributeApi, AnswersAsTheCliDoesAndThePartsAddUp) {
  TestServer s(temp_path("m.db"), kTiny);
  auto api = s.post("/api/model/attribute", json{{"ids", ids_json()}, {"answer", "#96"}, {"wrong", "#1403"}});
  ASSERT_EQ(api.status, 200) << api.raw;
  EXPECT_EQ(cli_json("attribute --ids '" + kIds + "' --answer '#96' --wrong '#1403'"), api.body);
  double sum = 0;
  for (const json& v : api.body["values"]) sum += v.get<double>();
  EXPECT_NEAR(sum, api.body["logit_diff"].get<double>(), 1e-4);
  EXPECT_EQ(api.body["components"][2]["label"], "L0H0");
}

TEST(AttributeApi, ABatchIsAveragedAsTheCliAveragesTheSameFile) {
  TestServer s(temp_path("m.db"), kTiny);
  const json prompts = {{{"text", "the old man sat by the river. the old man sat"}, {"answer", " by"}, {"wrong", " the"}},
                        {{"text", "a house by the sea"}}};
  auto api = s.post("/api/model/attribute", json{{"prompts", prompts}, {"answer", " the"}});
  ASSERT_EQ(api.status, 200) << api.raw;
  EXPECT_EQ(api.body["axes"], json({"prompt", "component"}));
  EXPECT_EQ(api.body["values"].size(), 2u);
  const std::string file = temp_path("prompts.jsonl");
  {
    std::ofstream f(file);
    f << R"({"clean": "the old man sat by the river. the old man sat", "answer": " by", "wrong": " the"})" << "\n"
      << "a house by the sea\n";
  }
  EXPECT_EQ(cli_json("attribute --prompts " + file + " --answer ' the'"), api.body);
  expect_error(s.post("/api/model/attribute", json{{"prompts", prompts}, {"text", "x"}}), 400, "not both");
  expect_error(s.post("/api/model/attribute", json{{"prompts", json::array()}}), 400, "'prompts'");
  expect_error(s.post("/api/model/attribute", json{{"prompts", {{{"text", "a house"}}}}}), 400, "prompt 1: no answer");
}

TEST(ComposeApi, GetAndPostAndTheCliGiveOneAnswerAndTheSecondComesFromTheCache) {
  TestServer s(temp_path("m.db"), kTiny);
  auto post = s.post("/api/model/compose", json{{"kind", "k"}, {"threshold", 0.15}, {"circuit", "1.2"}, {"top", 3}});
  ASSERT_EQ(post.status, 200) << post.raw;
  auto get = s.get("/api/model/compose?kind=k&threshold=0.15&circuit=1.2&top=3");
  ASSERT_EQ(get.status, 200) << get.raw;
  EXPECT_EQ(post.body, get.body);
  EXPECT_EQ(cli_json("compose --kind k --threshold 0.15 --ov-circuit 1.2 --top 3"), post.body);
  EXPECT_EQ(post.body["what"], "k_composition");
  EXPECT_EQ(post.body["weights"], "raw");
  const double k = post.body["values"][0][3][1][2].get<double>();
  EXPECT_GT(k, 2 * post.body["baseline"]["mean"].get<double>());
  bool edge = false;
  for (const json& e : post.body["edges"]) edge |= e["sender"] == json({0, 3}) && e["receiver"] == json({1, 2});
  EXPECT_TRUE(edge) << post.body["edges"].dump();
  EXPECT_GT(post.body["circuit"]["copying_score"].get<double>(), 0.5);
  auto copying = s.get("/api/model/compose?kind=v&copying=true");
  ASSERT_EQ(copying.status, 200) << copying.raw;
  EXPECT_EQ(cli_json("compose --kind v --copying"), copying.body);
  EXPECT_GT(copying.body["copying"][1][2].get<double>(), 0.99);  // the induction head copies
  auto again = s.client().Post("/api/model/compose", json{{"kind", "k"}, {"threshold", 0.15}, {"circuit", "1.2"}, {"top", 3}}.dump(),
                               "application/json");
  ASSERT_TRUE(again);
  EXPECT_EQ(again->get_header_value("X-Headlab-Cache"), "hit");
}

// A head of 640 channels over the built-in tokenizer's 4,096 tokens: its two (V, V) circuits are
// 2 V^2 HS = 2.1e10 multiply-adds, and 3.8e10 with the vocabulary factors and the eigenvalues,
// past the server's 2e10.
TEST(ComposeApi, ACircuitOverTheServersLimitIsRefusedWithItsCostAndHowToNarrowIt) {
  const std::string dir = headlab::testing::make_random_model_dir("wide_head", {.n_layer = 2, .n_head = 1, .n_embd = 640});
  TestServer s(temp_path("m.db"), dir);
  for (const bool fold_ln : {false, true}) {
    auto r = s.post("/api/model/compose", json{{"kind", "k"}, {"circuit", "1.0"}, {"fold_ln", fold_ln}});
    ASSERT_EQ(r.status, 413) << r.raw;
    EXPECT_EQ(r.body["error"]["code"], "too_long") << r.raw;
    const std::string message = r.body["error"]["message"].get<std::string>();
    EXPECT_NE(message.find("tokens) cost 3.8e+10 multiply-adds, over this server's limit of 2e10"), std::string::npos)
        << message;
    EXPECT_NE(message.find("ask without 'circuit' for the composition scores"), std::string::npos) << message;
    EXPECT_NE(message.find("headlab compose --model M --ov-circuit L.H"), std::string::npos) << message;
  }
}

// The scores' cost counts the random baseline (issue 27: one 640-channel head's scores were
// estimated at their products' 7.9e8 multiply-adds and ran past 100 s): 1,000 baseline samples
// are refused with the cost, the baseline's share and how to narrow it; 4 are answered.
TEST(ComposeApi, ScoresOverTheServersLimitAreRefusedWithTheirCostAndTheBaselinesShare) {
  const std::string dir = headlab::testing::make_random_model_dir("wide_head", {.n_layer = 2, .n_head = 1, .n_embd = 640});
  TestServer s(temp_path("m.db"), dir);
  auto r = s.post("/api/model/compose", json{{"kind", "k"}, {"baseline_samples", 1000}});
  ASSERT_EQ(r.status, 413) << r.raw;
  EXPECT_EQ(r.body["error"]["code"], "too_long") << r.raw;
  const std::string message = r.body["error"]["message"].get<std::string>();
  EXPECT_NE(message.find("this model's composition scores cost 2e+12 multiply-adds (the random baseline's 1000 samples "
                         "2e+12 of them), over this server's limit of 2e+11; ask for fewer 'baseline_samples'"),
            std::string::npos)
      << message;
  auto narrowed = s.post("/api/model/compose", json{{"kind", "k"}, {"baseline_samples", 4}});
  ASSERT_EQ(narrowed.status, 200) << narrowed.raw;
  EXPECT_EQ(narrowed.body["baseline"]["samples"], 4) << narrowed.raw;
  EXPECT_GT(narrowed.body["values"][0][0][1][0].get<double>(), 0.0);
}

TEST(LensApi, BadRequestsGetTheErrorEnvelopeNamingTheProblem) {
  TestServer s(temp_path("m.db"), kTiny);
  expect_error(s.post("/api/model/lens", json{{"text", "the cat"}, {"answers", {" the cat"}}}), 400, "tokens");
  expect_error(s.post("/api/model/lens", json{{"text", "the cat"}, {"colour", 1}}), 400, "colour");
  expect_error(s.post("/api/model/lens", json{{"answers", {" the"}}}), 400, "'text'");
  expect_error(s.post("/api/model/lens", json{{"text", ""}}), 400, "Field 'text' is empty");
  expect_error(s.post("/api/model/lens", json{{"ids", json::array()}}), 400, "Field 'ids' is an empty list");
  expect_error(s.post("/api/model/lens", json{{"ids", {1, 99999}}}), 400, "outside the vocabulary");
  expect_error(s.post("/api/model/attribute", json{{"text", "the cat"}}), 400, "'answer'");
  expect_error(s.post("/api/model/attribute", json{{"text", "the cat"}, {"answer", " the"}, {"wrong", " the"}}), 400,
               "same token");
  expect_error(s.post("/api/model/attribute", json{{"text", "the cat"}, {"answer", " the"}, {"position", 40}}), 400,
               "position 40");
  expect_error(s.post("/api/model/compose", json{{"circuit", "2.0"}}), 400, "layer");
  expect_error(s.post("/api/model/compose", json{{"circuit", "one.two"}}), 400, "'circuit'");
  expect_error(s.post("/api/model/compose", json{{"kind", "z"}}), 400, "'kind'");
  expect_error(s.get("/api/model/compose?fold_ln=yes"), 400, "fold_ln");
  expect_error(s.get("/api/model/compose?copying=1"), 400, "copying");
  expect_error(s.get("/api/model/compose?colour=red"), 400, "colour");
  // a body nested 30,000 deep (issue 24's crash) is refused in the envelope, and the server goes on
  const std::string deep = "{\"text\": " + std::string(30000, '[') + std::string(30000, ']') + "}";
  for (const char* route : {"/api/model/lens", "/api/model/attribute", "/api/model/compose"})
    expect_error(s.post(route, deep), 400, "nested deeper");
  EXPECT_EQ(s.get("/api/health").status, 200);
}
