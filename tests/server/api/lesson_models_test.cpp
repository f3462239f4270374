// The three lesson models of "Encoding word order and RoPE" (models/headlab-nopos, -learned,
// -rope) meet the figures models/README.md states, as GET /api/positions/models gives them to
// the lesson page (the scanner on each model's heldout.txt, at the trained context):
//   learned and rotary   a previous-token head >= 0.6 and an induction head >= 0.6
//   no positions         its previous-token head gives the token before at least twice an even
//                        spread's weight at queries 8-31 (it learns where it is from the mask)
// and they were trained alike: train_log.json's options differ only in the positions.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "testing/test_server.h"

using headlab::testing::TestServer;
using headlab::testing::temp_path;
using nlohmann::json;

namespace {

const std::string kModels = std::string(HEADLAB_SOURCE_DIR) + "/models";

json lesson_models() {
  static const json models = [] {
    TestServer s(temp_path("lesson-models.db"), kModels + "/headlab-tiny", 8,
                 [](headlab::server::ServerOptions& o) { o.models_dir = kModels; });
    auto r = s.get("/api/positions/models");
    EXPECT_EQ(r.status, 200) << r.raw;
    return r.body["models"];
  }();
  return models;
}

json model(const std::string& positions) {
  for (const json& m : lesson_models())
    if (m["positions"] == positions) {
      EXPECT_TRUE(m["available"].get<bool>()) << m;
      std::printf("%s: previous-token %d.%d %.3f (even %.3f), induction %d.%d %.3f; by position %s\n",
                  m["name"].get<std::string>().c_str(), m["previous_token"]["layer"].get<int>(),
                  m["previous_token"]["head"].get<int>(), m["previous_token"]["score"].get<double>(),
                  m["previous_token"]["chance"].get<double>(), m["induction"]["layer"].get<int>(),
                  m["induction"]["head"].get<int>(), m["induction"]["score"].get<double>(),
                  m["previous_by_position"].dump().c_str());
      return m;
    }
  ADD_FAILURE() << "no " << positions << " model in " << lesson_models();
  return json::object();
}

json train_options(const std::string& name) {
  std::ifstream f(kModels + "/" + name + "/train_log.json");
  json j = json::parse(f, nullptr, false);
  EXPECT_TRUE(j.is_object()) << name << "/train_log.json";
  return j.is_object() ? j["options"] : json::object();
}

}  // namespace

TEST(LessonModels, EachFolderHoldsThePositionsItIsNamedForTrainedOn64Tokens) {
  for (const char* p : {"none", "learned", "rotary"}) {
    const json m = model(p);
    EXPECT_EQ(m["config_positions"], p);
    EXPECT_EQ(m["trained_context"], 64);
    EXPECT_EQ(m["n_layer"], 2);
  }
}

TEST(LessonModels, WereTrainedOnTheSameDataWithTheSameBudgetAndDifferOnlyInPositions) {
  json learned = train_options("headlab-learned");
  for (const char* name : {"headlab-nopos", "headlab-rope"}) {
    json other = train_options(name);
    for (auto* o : {&learned, &other}) o->erase("positions"), o->erase("config"), o->erase("rope_theta"), o->erase("rotary_fraction");
    EXPECT_EQ(other, learned) << name << " differs from headlab-learned: " << json::diff(learned, other);
  }
  EXPECT_GE(learned["steps"].get<int>(), 1000);
}

TEST(LessonModels, LearnedPositionsGrowAPreviousTokenHeadAndAnInductionHead) {
  const json m = model("learned");
  EXPECT_GE(m["previous_token"]["score"].get<double>(), 0.6);
  EXPECT_EQ(m["previous_token"]["layer"], 0) << "the head an induction head reads sits below it";
  EXPECT_GE(m["induction"]["score"].get<double>(), 0.6);
}

TEST(LessonModels, RotaryPositionsGrowAPreviousTokenHeadAndAnInductionHead) {
  const json m = model("rotary");
  EXPECT_GE(m["previous_token"]["score"].get<double>(), 0.6);
  EXPECT_GE(m["induction"]["score"].get<double>(), 0.6);
}

TEST(LessonModels, WithoutPositionsTheTokenBeforeGetsTwiceAnEvenSpreadAtQueries8To31) {
  const json m = model("none");
  const json& bands = m["previous_by_position"];
  ASSERT_GE(bands.size(), 2u) << m;
  const json& mid = bands[1];
  ASSERT_EQ(mid["from"], 8);
  ASSERT_EQ(mid["to"], 32);
  EXPECT_GE(mid["share"].get<double>(), 2.0 * mid["chance"].get<double>()) << mid;
}
