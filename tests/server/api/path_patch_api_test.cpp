// Tests for POST /api/model/path-patch (server/api/handlers/path_patch_handlers, path_patch_codec):
// the CLI's answer number for number, the work limit's 413 with the cost and how to narrow, and
// bad bodies as the one error envelope naming the field.
#include <gtest/gtest.h>

#include <string>

#include "testing/process.h"
#include "testing/test_server.h"

using headlab::testing::TestServer;
using headlab::testing::temp_path;
using nlohmann::json;

namespace {  // names of their own: the unity build puts patch_api_test.cpp's beside these

const std::string kPathModel = std::string(HEADLAB_SOURCE_DIR) + "/models/headlab-tiny";
const std::string kPathClean = " gray whale ink crown plum fog violin arch gray whale ink crown plum fog";
const std::string kPathCorrupted = " gray whale ink crown plum fog arch violin gray whale ink crown plum fog";

json path_pair_body(json extra = json::object()) {
  json b = {{"clean", kPathClean}, {"corrupted", kPathCorrupted}, {"answer", " viol"}, {"wrong", " ar"}};
  b.update(extra);
  return b;
}

// `headlab patch --path` on the same pair as path_pair_body, with `args` added, as JSON.
auto cli_path_patch(const std::string& args) {
  return headlab::testing::command_run(std::string(HEADLAB_BINARY_DIR) + "/headlab patch --path --model " + kPathModel +
                                       " --clean '" + kPathClean + "' --corrupted '" + kPathCorrupted +
                                       "' --answer ' viol' --wrong ' ar' " + args + " --format json 2>/dev/null");
}

}  // namespace

TEST(PathPatchApi, AnswersWhatTheCliPrints) {
  TestServer s(temp_path("p.db"), kPathModel);
  auto api = s.post("/api/model/path-patch", path_pair_body({{"receivers", {"1.2:k", "1.2:v"}}, {"metric", "normalized"}}));
  ASSERT_EQ(api.status, 200) << api.raw.substr(0, 400);
  auto cli = cli_path_patch("--receivers 1.2:k,1.2:v --metric normalized");
  ASSERT_EQ(cli.exit_code, 0) << cli.out;
  EXPECT_EQ(json::parse(cli.out), api.body);
  EXPECT_EQ(api.body["receivers"], (json{"1.2:k", "1.2:v"}));
  EXPECT_EQ(api.body["clean"], 1.0);
  EXPECT_EQ(api.body["layers"], (json{0, 1}));
  for (const json& v : api.body["values"][1]) EXPECT_EQ(v, 1.0) << "layer 1 reaches no layer-1 receiver";
  EXPECT_EQ(api.body["skipped"], 4);
  auto final_grid = s.post("/api/model/path-patch", path_pair_body({{"senders", "1.*"}}));
  ASSERT_EQ(final_grid.status, 200) << final_grid.raw.substr(0, 400);
  EXPECT_EQ(final_grid.body["receivers"], "final");
  EXPECT_EQ(final_grid.body["senders"], (json{"1.0", "1.1", "1.2", "1.3"}));
}

TEST(PathPatchApi, PastTheWorkLimitIsRefusedWithItsCostAndHowToNarrowIt) {
  TestServer s(temp_path("p.db"), kPathModel, 8, [](headlab::server::ServerOptions& o) { o.max_patch_multiply_adds = 1e6; });
  auto big = s.post("/api/model/path-patch", path_pair_body());
  EXPECT_EQ(big.status, 413) << big.raw;
  EXPECT_NE(big.raw.find("multiply-adds"), std::string::npos) << big.raw;
  EXPECT_NE(big.raw.find("fewer senders"), std::string::npos) << big.raw;
}

TEST(PathPatchApi, BadBodiesAreRefusedNamingTheField) {
  TestServer s(temp_path("p.db"), kPathModel);
  struct Case {
    json body;
    std::string says;
  };
  const Case cases[] = {
      {path_pair_body({{"receivers", "1.2"}}), "Field 'receivers'"},
      {path_pair_body({{"receivers", {1, 2}}}), "Field 'receivers' must be a string or a list of strings"},
      {path_pair_body({{"senders", json::array()}}), "Field 'senders' is an empty list: name at least one"},
      {path_pair_body({{"receivers", json::array()}}), "Field 'receivers' is an empty list: name at least one"},
      {path_pair_body({{"senders", "all heads"}}), "Field 'senders'"},
      {path_pair_body({{"senders", "0.9"}}), "sender 0.9"},
      {path_pair_body({{"what", "z_all_pos"}}), "what"},
      {path_pair_body({{"metric", "accuracy"}}), "metric"},
  };
  for (const Case& c : cases) {
    auto r = s.post("/api/model/path-patch", c.body);
    EXPECT_EQ(r.status, 400) << c.body.dump() << "\n" << r.raw;
    EXPECT_NE(r.raw.find(c.says), std::string::npos) << c.body.dump() << "\n" << r.raw;
  }
}

TEST(PathPatchApi, TheLossOverSomePositionsIsTheClisAndABadRangeIsRefusedByName) {
  TestServer s(temp_path("p.db"), kPathModel);
  const json range = {{"from", 8}, {"to", 14}};  // the second copy's losses
  auto api = s.post("/api/model/path-patch", path_pair_body({{"metric", "loss"}, {"loss_positions", range}}));
  ASSERT_EQ(api.status, 200) << api.raw.substr(0, 400);
  EXPECT_EQ(api.body["loss_positions"], range);
  auto cli = cli_path_patch("--metric loss --loss-positions 8:14");
  ASSERT_EQ(cli.exit_code, 0) << cli.out;
  EXPECT_EQ(json::parse(cli.out), api.body);
  auto whole = s.post("/api/model/path-patch", path_pair_body({{"metric", "loss"}}));
  ASSERT_EQ(whole.status, 200) << whole.raw.substr(0, 400);
  EXPECT_NE(whole.body["clean"], api.body["clean"]) << "the range's loss is its own";
  for (const auto& [body, says] : {std::pair{path_pair_body({{"loss_positions", range}}), std::string("'metric' is")},
                                   std::pair{path_pair_body({{"metric", "loss"}, {"loss_positions", {{"from", 8}, {"to", 99}}}}),
                                             std::string("past the end")}}) {
    auto r = s.post("/api/model/path-patch", body);
    EXPECT_EQ(r.status, 400) << body.dump() << "\n" << r.raw;
    EXPECT_NE(r.raw.find(says), std::string::npos) << body.dump() << "\n" << r.raw;
  }
}

// The refusal offers the first senders that reach a receiver and fit; sent back, the server takes
// them within its limit. Generated: the final residual stream or the last layer's heads, every
// sender or some, one to three copies of the story.
TEST(PathPatchApi, TheSendersARefusalOffersAreTakenWithinTheLimitAndNothingFittingOffersNone) {
  const double limit = 2.8e7;
  TestServer s(temp_path("p.db"), kPathModel, 8, [&](headlab::server::ServerOptions& o) { o.max_patch_multiply_adds = limit; });
  const std::string story = " ink crown plum fog violin arch ink crown plum fog";
  const std::string changed = " ink crown plum fog arch violin ink crown plum fog";
  int refused = 0, offered = 0;
  for (int copies : {1, 2, 4})
    for (const json& receivers : {json("final"), json{"1.0:k", "1.1:k", "1.2:k", "1.3:k"}, json{"1.0:q", "1.2:v"}})
      for (const json& senders : {json("all"), json{"0.0", "0.2", "1.1", "1.3"}, json{"0.*"}}) {
        std::string clean, corrupted;
        for (int i = 0; i < copies; i++) clean += story, corrupted += i + 1 < copies ? story : changed;
        json body = {{"clean", clean}, {"corrupted", corrupted}, {"answer", " viol"}, {"metric", "logprob"},
                     {"receivers", receivers}, {"senders", senders}};
        auto first = s.post("/api/model/path-patch", body);
        if (first.status == 200) continue;
        ASSERT_EQ(first.status, 413) << first.raw.substr(0, 300);
        refused++;
        const json& e = first.body["error"];
        EXPECT_EQ(e["limit"], limit);
        ASSERT_TRUE(e["narrowings"].is_array() && e["narrowings"].size() <= 1) << first.raw.substr(0, 300);
        for (const json& o : e["narrowings"]) {
          offered++;
          EXPECT_EQ(o.size(), 3u) << o.dump() << ": label, senders, cost";
          json narrowed = body;
          narrowed["senders"] = o["senders"];
          auto again = s.post("/api/model/path-patch", narrowed);
          ASSERT_EQ(again.status, 200) << o.dump() << ": " << again.raw.substr(0, 300);
          EXPECT_EQ(again.body["cost"]["multiply_adds"], o["cost"]) << o.dump();
          EXPECT_LE(double(again.body["cost"]["multiply_adds"]), limit);
          EXPECT_EQ(again.body["senders"], o["senders"]);
        }
      }
  EXPECT_GT(refused, 5);
  EXPECT_GT(offered, 3);
  TestServer tight(temp_path("q.db"), kPathModel, 8, [](headlab::server::ServerOptions& o) { o.max_patch_multiply_adds = 1e3; });
  auto none = tight.post("/api/model/path-patch", path_pair_body());
  ASSERT_EQ(none.status, 413) << none.raw;
  EXPECT_EQ(none.body["error"]["narrowings"], json::array());
}
