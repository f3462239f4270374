// Tests for POST /api/model/patch (server/model_service/model_patch.cpp, server/api/patch_codec):
// the CLI's answer number for number, a batch, the work limit's 413 with the cost and how to
// narrow, and bad bodies as the one error envelope naming what is wrong.
#include <gtest/gtest.h>

#include <string>

#include "testing/process.h"
#include "testing/test_server.h"

using headlab::testing::TestServer;
using headlab::testing::temp_path;
using nlohmann::json;

namespace {

const std::string kModel = std::string(HEADLAB_SOURCE_DIR) + "/models/headlab-tiny";
const std::string kClean = " gray whale ink crown plum fog violin arch gray whale ink crown plum fog";
const std::string kCorrupted = " gray whale ink crown plum fog arch violin gray whale ink crown plum fog";

json pair_body(json extra = json::object()) {
  json b = {{"clean", kClean}, {"corrupted", kCorrupted}, {"answer", " viol"}, {"wrong", " ar"}};
  b.update(extra);
  return b;
}

// `headlab patch` on the same pair with `args`, its standard output alone (a sweep slower than
// a second also prints progress on stderr).
headlab::testing::CommandResult cli_patch(const std::string& args) {
  return headlab::testing::command_run(std::string(HEADLAB_BINARY_DIR) + "/headlab patch --model " + kModel +
                                       " --clean '" + kClean + "' --corrupted '" + kCorrupted +
                                       "' --answer ' viol' --wrong ' ar' " + args + " --format json 2>/dev/null");
}

}  // namespace

TEST(PatchApi, AnswersWhatTheCliPrints) {
  TestServer s(temp_path("p.db"), kModel);
  auto api = s.post("/api/model/patch", pair_body({{"what", "v_by_pos"}, {"layers", {1}}, {"metric", "normalized"}}));
  ASSERT_EQ(api.status, 200) << api.raw.substr(0, 400);
  auto cli = cli_patch("--what v_by_pos --layers 1 --metric normalized");
  ASSERT_EQ(cli.exit_code, 0) << cli.out;
  EXPECT_EQ(json::parse(cli.out), api.body);
  EXPECT_EQ(api.body["axes"], (json{"layer", "pos", "head"}));
  EXPECT_EQ(api.body["clean"], 1.0);
  // the induction head 1.2 reads the first copy's token after " fog" (position 14) through its value
  EXPECT_GT(double(api.body["values"][0][14][2]), 0.3) << api.raw.substr(0, 400);
}

TEST(PatchApi, APairAsIdsWithIdAnswersIsTheSamePairAsText) {
  TestServer s(temp_path("p.db"), kModel);
  auto text = s.post("/api/model/patch", pair_body({{"what", "z_all_pos"}}));
  ASSERT_EQ(text.status, 200) << text.raw.substr(0, 300);
  json clean_ids = json::array(), corrupted_ids = json::array();
  for (const json& t : text.body["tokens"]) clean_ids.push_back(t["id"]);
  for (const json& t : text.body["corrupted_tokens"]) corrupted_ids.push_back(t["id"]);
  auto ids = s.post("/api/model/patch", json{{"clean_ids", clean_ids}, {"corrupted_ids", corrupted_ids},
                                             {"answer", "#1580"}, {"wrong", " ar"}, {"what", "z_all_pos"}});
  ASSERT_EQ(ids.status, 200) << ids.raw.substr(0, 300);
  EXPECT_EQ(ids.body["values"], text.body["values"]);
  auto both = s.post("/api/model/patch", pair_body({{"clean_ids", clean_ids}, {"corrupted_ids", corrupted_ids}}));
  EXPECT_EQ(both.status, 400);
  EXPECT_NE(both.raw.find("not both"), std::string::npos) << both.raw;
}

TEST(PatchApi, ABatchOfPromptsIsTheMeanOfItsPairs) {
  TestServer s(temp_path("p.db"), kModel);
  json one = {{"clean", kClean}, {"corrupted", kCorrupted}, {"answer", " viol"}, {"wrong", " ar"}};
  auto batch = s.post("/api/model/patch", json{{"prompts", {one, one}}, {"what", "z_all_pos"}});
  auto single = s.post("/api/model/patch", pair_body({{"what", "z_all_pos"}}));
  ASSERT_EQ(batch.status, 200) << batch.raw.substr(0, 400);
  ASSERT_EQ(single.status, 200);
  EXPECT_EQ(batch.body["pairs"], 2);
  EXPECT_EQ(batch.body["values"], single.body["values"]);
}

TEST(PatchApi, ASweepPastTheWorkLimitIsRefusedWithItsCostAndHowToNarrowIt) {
  TestServer s(temp_path("p.db"), kModel, 8, [](headlab::server::ServerOptions& o) { o.max_patch_multiply_adds = 1e8; });
  auto big = s.post("/api/model/patch", pair_body({{"what", "attn_head_by_pos_every"}}));
  EXPECT_EQ(big.status, 413) << big.raw;
  EXPECT_EQ(big.body["error"]["code"], "too_long");
  const std::string message = big.body["error"]["message"];
  for (const char* says : {"This sweep is 1,", "forwards over 1 prompt pair", "block-tokens", "\"layers\": [3, 4, 5]",
                           "\"positions\"", "headlab patch"})
    EXPECT_NE(message.find(says), std::string::npos) << says << ": " << message;
  auto narrow = s.post("/api/model/patch", pair_body({{"what", "attn_head_by_pos_every"}, {"layers", {1}}, {"positions", {14, 30}}}));
  EXPECT_EQ(narrow.status, 200) << narrow.raw.substr(0, 400);
  EXPECT_EQ(narrow.body["positions"], (json{14, 30}));
}

TEST(PatchApi, BadBodiesAreRefusedNamingWhatIsWrong) {
  TestServer s(temp_path("p.db"), kModel);
  struct Case {
    json body;
    std::string says;
  };
  const Case cases[] = {
      {pair_body({{"what", "resid_post"}}), "Unknown 'what' \"resid_post\". It is one of: resid_pre"},
      {pair_body({{"what", "mlp_out"}}), "no mlp_out"},
      {pair_body({{"metric", 3}}), "Field 'metric' must be a string."},
      {pair_body({{"layers", {0, -1}}}), "Field 'layers' must hold whole numbers from 0"},
      {pair_body({{"layers", {7}}}), "layer 7 does not exist"},
      {pair_body({{"layers", json::array()}}), "Field 'layers' is an empty list, which names none"},
      {pair_body({{"positions", json::array()}}), "Field 'positions' is an empty list, which names none"},
      {pair_body({{"temperature", 1}}), "temperature"},
      {pair_body({{"prompts", json::array()}}), "not both"},
      {json{{"prompts", json::array()}}, "Field 'prompts' must be a list of 1 to 1000 objects"},
      {json{{"prompts", {{{"clean", "a"}}}}}, "Missing field 'corrupted'"},
      {json{{"clean", kClean}}, "Missing field 'corrupted'"},
      {pair_body({{"corrupted", " gray whale"}}), "the clean prompt is 31 tokens"},
      {pair_body({{"answer", " violin"}}), "the answer ' violin' is 2 tokens (' viol' 'in')"},
      {pair_body({{"wrong", ""}}), "needs the wrong token"},
  };
  for (const Case& c : cases) {
    auto r = s.post("/api/model/patch", c.body);
    EXPECT_EQ(r.status, 400) << c.body.dump() << "\n" << r.raw;
    ASSERT_TRUE(r.body.contains("error")) << r.raw;
    const std::string message = r.body["error"]["message"];
    EXPECT_NE(message.find(c.says), std::string::npos) << c.body.dump() << "\n" << message;
  }
  EXPECT_EQ(s.post("/api/model/patch", std::string("{not json")).status, 400);
}

TEST(PatchApi, PromptsLongerThanTheServersLimitAre413) {
  TestServer s(temp_path("p.db"), kModel, 8, [](headlab::server::ServerOptions& o) { o.max_tokens = 16; });
  auto r = s.post("/api/model/patch", pair_body());
  EXPECT_EQ(r.status, 413) << r.raw;
  const std::string message = r.body["error"]["message"];
  EXPECT_NE(message.find("the clean prompt: the text is 31 tokens long (with BOS), more than this server's limit (16)"),
            std::string::npos)
      << message;
}

TEST(PatchApi, ABodyNestedTwoHundredThousandDeepIsRefusedAndTheServerGoesOn) {
  TestServer s(temp_path("p.db"), kModel, 8, [](headlab::server::ServerOptions& o) { o.max_body_bytes = 4 << 20; });
  const std::string deep = "{\"clean\": " + std::string(200000, '[') + std::string(200000, ']') + "}";
  auto r = s.post("/api/model/patch", deep);
  EXPECT_EQ(r.status, 400) << r.raw.substr(0, 300);
  EXPECT_EQ(s.post("/api/model/patch", pair_body({{"what", "z_all_pos"}})).status, 200);
}

TEST(PatchApi, SteeringIsTheCliSteeringAndABadOneIsRefusedByIndex) {
  TestServer s(temp_path("p.db"), kModel);
  auto api = s.post("/api/model/patch",
                    pair_body({{"layers", {1}}, {"steer", {{{"layer", 0}, {"coef", 4}, {"plus", " violin"}, {"minus", " arch"}}}}}));
  ASSERT_EQ(api.status, 200) << api.raw.substr(0, 400);
  auto cli = cli_patch("--layers 1 --steer-prompts '0:4: violin: arch'");
  ASSERT_EQ(cli.exit_code, 0) << cli.out;
  EXPECT_EQ(json::parse(cli.out), api.body);
  EXPECT_GE(int(api.body["steer"][0]["rows"]), 1) << "ActAdd: a row per position of the shorter text";

  auto bad = s.post("/api/model/patch",
                    pair_body({{"steer", {{{"layer", 0}, {"coef", 1}, {"vector", {1, 2, 3}}}}}}));
  EXPECT_EQ(bad.status, 400);
  EXPECT_NE(bad.raw.find("Steering 0"), std::string::npos) << bad.raw.substr(0, 400);
  auto unknown = s.post("/api/model/patch", pair_body({{"steer", {{{"layer", 0}, {"coef", 1}, {"vectr", {1}}}}}}));
  EXPECT_EQ(unknown.status, 400) << unknown.raw.substr(0, 400);
}

// "method": "attribution" (research/attribution_patching.h): the CLI's --method attribution number
// for number, said in the answer; the induction head 1.2 still stands out; the pattern's sweep
// has activation patching's axes; an unknown method is refused naming the two.
TEST(PatchApi, AttributionIsTheClisAttributionAndSaysSo) {
  TestServer s(temp_path("p.db"), kModel);
  auto api = s.post("/api/model/patch", pair_body({{"what", "z_all_pos"}, {"metric", "normalized"}, {"method", "attribution"}}));
  ASSERT_EQ(api.status, 200) << api.raw.substr(0, 400);
  auto cli = cli_patch("--what z_all_pos --metric normalized --method attribution");
  ASSERT_EQ(cli.exit_code, 0) << cli.out;
  EXPECT_EQ(json::parse(cli.out), api.body);
  EXPECT_EQ(api.body["method"], "attribution");
  EXPECT_EQ(api.body["cost"]["forwards"], 2);
  EXPECT_GT(double(api.body["values"][1][2]), 0.3) << api.raw.substr(0, 400);
  auto q = s.post("/api/model/patch", pair_body({{"what", "pattern_by_pos"}, {"method", "attribution"}}));
  EXPECT_EQ(q.status, 200) << q.raw.substr(0, 400);
  EXPECT_EQ(q.body["axes"], (json{"layer", "head", "dest_pos"}));
  auto unknown = s.post("/api/model/patch", pair_body({{"method", "gradient"}}));
  EXPECT_EQ(unknown.status, 400);
  EXPECT_NE(unknown.raw.find("Unknown 'method'"), std::string::npos) << unknown.raw;
}

TEST(PatchApi, LossPositionsAreTheClisAndABadRangeIsRefusedByNameInTheErrorEnvelope) {
  TestServer s(temp_path("p.db"), kModel);
  const json range = {{"from", 16}, {"to", 30}};  // the second copy's losses (31 tokens: BOS, 15, 15)
  auto api = s.post("/api/model/patch", pair_body({{"what", "attn_out"}, {"metric", "loss"}, {"loss_positions", range}}));
  ASSERT_EQ(api.status, 200) << api.raw.substr(0, 400);
  auto cli = cli_patch("--what attn_out --metric loss --loss-positions 16:30");
  ASSERT_EQ(cli.exit_code, 0) << cli.out;
  EXPECT_EQ(json::parse(cli.out), api.body);
  EXPECT_EQ(api.body["loss_positions"], range);
  auto open = s.post("/api/model/patch", pair_body({{"metric", "loss"}, {"loss_positions", {{"from", 16}}}}));
  ASSERT_EQ(open.status, 200) << open.raw.substr(0, 400);
  EXPECT_EQ(open.body["loss_positions"], (json{{"from", 16}, {"to", nullptr}}));
  EXPECT_EQ(open.body["clean"], api.body["clean"]) << "16: runs to the end, 30";
  struct Case {
    json body;
    std::string says;
  };
  const Case cases[] = {
      {pair_body({{"loss_positions", range}}), "Field 'loss_positions' says which positions' losses the loss metric "
                                               "averages, and 'metric' is \"logit_diff\""},
      {pair_body({{"metric", "loss"}, {"loss_positions", {{"from", 16}, {"to", 31}}}}),
       "loss positions 16:31 are past the end of the prompt pair: it has 31 tokens"},
      {pair_body({{"metric", "loss"}, {"loss_positions", {{"from", 9}, {"to", 9}}}}), "loss positions 9:9 are empty"},
      {pair_body({{"metric", "loss"}, {"loss_positions", {{"from", -1}}}}), "Field 'loss_positions' must be"},
      {pair_body({{"metric", "loss"}, {"loss_positions", "16:30"}}), "Field 'loss_positions' must be"},
      {pair_body({{"metric", "loss"}, {"loss_positions", {{"from", 1}, {"stop", 3}}}}), "stop"},
  };
  for (const Case& c : cases) {
    auto r = s.post("/api/model/patch", c.body);
    EXPECT_EQ(r.status, 400) << c.body.dump() << "\n" << r.raw;
    ASSERT_TRUE(r.body.contains("error")) << r.raw;
    const std::string message = r.body["error"]["message"];
    EXPECT_NE(message.find(c.says), std::string::npos) << c.body.dump() << "\n" << message;
  }
  // the CLI refuses them too (exit 2; a metric other than loss before the model loads)
  auto cli_bad = headlab::testing::command_run(std::string(HEADLAB_BINARY_DIR) + "/headlab patch --model " + kModel +
                                               " --clean a --corrupted b --loss-positions 3:2 --metric loss 2>&1");
  EXPECT_EQ(cli_bad.exit_code, 2) << cli_bad.out;
  auto cli_metric = headlab::testing::command_run(std::string(HEADLAB_BINARY_DIR) + "/headlab patch --model " + kModel +
                                                  " --clean a --corrupted b --loss-positions 3:5 2>&1");
  EXPECT_EQ(cli_metric.exit_code, 2);
  EXPECT_NE(cli_metric.out.find("add --metric loss"), std::string::npos) << cli_metric.out;
}

// The refusal carries the narrower sweeps that fit (research/patch_narrowing.h), and the server
// takes each one back within its limit: generated sweeps (every kind of what, two metrics, both
// methods, a pair or a batch, short and long prompts; the built-in model is attention-only, so no
// resid_mid, mlp_out or block_every) on a server whose limit they pass.
TEST(PatchApi, EveryNarrowingARefusalOffersIsTakenWithinTheLimit) {
  const double limit = 2.8e7;
  TestServer s(temp_path("p.db"), kModel, 8, [&](headlab::server::ServerOptions& o) { o.max_patch_multiply_adds = limit; });
  const std::string story = " ink crown plum fog violin arch ink crown plum fog";
  const std::string changed = " ink crown plum fog arch violin ink crown plum fog";
  int refused = 0, offered = 0, answered_within = 0;
  for (int copies : {1, 2, 3})
    for (int n : {1, 2, 4})
      for (const char* what : {"resid_pre", "attn_out", "z_by_pos", "pattern_by_pos", "attn_head_by_pos_every", "z_all_pos"})
        for (const char* metric : {"normalized", "logprob"})
          for (const char* method : {"activation", "attribution"}) {
            std::string clean, corrupted;
            for (int i = 0; i < copies; i++) clean += story, corrupted += i + 1 < copies ? story : changed;
            json prompts = json::array();
            for (int i = 0; i < n; i++) prompts.push_back({{"clean", clean}, {"corrupted", corrupted}, {"answer", " viol"}, {"wrong", " ar"}});
            const json body = {{"prompts", prompts}, {"what", what}, {"metric", metric}, {"method", method}};
            const std::string where = body.dump().substr(body.dump().find("\"method\""));
            auto first = s.post("/api/model/patch", body);
            if (first.status == 200) {
              EXPECT_LE(double(first.body["cost"]["multiply_adds"]), limit) << where;
              answered_within++;
              continue;
            }
            ASSERT_EQ(first.status, 413) << first.raw.substr(0, 300);
            refused++;
            const json& e = first.body["error"];
            EXPECT_EQ(e["code"], "too_long");
            EXPECT_EQ(e["limit"], limit);
            EXPECT_GT(double(e["cost"]), limit);
            ASSERT_TRUE(e["narrowings"].is_array()) << first.raw.substr(0, 300);
            for (const json& o : e["narrowings"]) {
              offered++;
              json narrowed = body;
              if (o.contains("pairs")) narrowed["prompts"] = json(std::vector<json>(prompts.begin(), prompts.begin() + int(o["pairs"])));
              for (const char* field : {"layers", "positions", "what"})
                if (o.contains(field)) narrowed[field] = o[field];
              auto again = s.post("/api/model/patch", narrowed);
              ASSERT_EQ(again.status, 200) << o.dump() << " for " << where << ": " << again.raw.substr(0, 300);
              EXPECT_LE(double(again.body["cost"]["multiply_adds"]), limit) << o.dump();
              EXPECT_EQ(again.body["cost"]["multiply_adds"], o["cost"]) << o.dump() << ": the cost the offer gave";
              if (std::string(method) == "attribution") {
                EXPECT_EQ(o.size(), 3u) << o.dump() << ": only fewer pairs";
              }
            }
          }
  EXPECT_GT(refused, 20) << offered << " " << answered_within;
  EXPECT_GT(offered, 30) << refused << " " << answered_within;
  EXPECT_GT(answered_within, 5) << "some sweeps are under the limit";
}

TEST(PatchApi, ARefusalOfWhichNothingFitsOffersAnEmptyList) {
  TestServer s(temp_path("p.db"), kModel, 8, [](headlab::server::ServerOptions& o) { o.max_patch_multiply_adds = 1e3; });
  auto r = s.post("/api/model/patch", pair_body({{"what", "z_by_pos"}}));
  ASSERT_EQ(r.status, 413) << r.raw;
  EXPECT_EQ(r.body["error"]["narrowings"], json::array());
  EXPECT_EQ(r.body["error"]["limit"], 1e3);
  EXPECT_NE(std::string(r.body["error"]["message"]).find("more than this server's limit"), std::string::npos);
}
