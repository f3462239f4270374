// One scan: `headlab scan --format json` run as a user runs it and GET /api/model/scan
// give the same numbers for every head of the built-in model on its held-out text, and
// both say the same thing when a model folder has no held-out text.
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "testing/random_model.h"
#include "testing/test_server.h"

#include "testing/process.h"

using headlab::testing::TestServer;
using headlab::testing::temp_path;
using nlohmann::json;

namespace {

const std::string kTinyDir = std::string(HEADLAB_SOURCE_DIR) + "/models/headlab-tiny";

using CliRun = headlab::testing::CommandResult;

// `headlab ARGS`, its standard output alone (the JSON the tests parse).
CliRun run_headlab(const std::string& args) {
  return headlab::testing::command_run(std::string(HEADLAB_BINARY_DIR "/headlab ") + args);
}

const json* head_named(const json& report, const std::string& name) {
  for (const json& h : report["heads"])
    if (h["name"] == name) return &h;
  return nullptr;
}

// The largest |a - b| over every score and chance of every head (nulls must match).
double max_difference(const json& a, const json& b, std::string& where) {
  double worst = 0.0;
  for (const json& ha : a["heads"]) {
    const std::string name = ha["name"];
    const json* hb = head_named(b, name);
    if (!hb) {
      ADD_FAILURE() << "the API has no head " << name;
      continue;
    }
    for (const char* part : {"scores", "chance"})
      for (const auto& [key, va] : ha[part].items()) {
        const json& vb = (*hb)[part][key];
        EXPECT_EQ(va.is_null(), vb.is_null()) << name << " " << part << "." << key;
        if (va.is_null() || vb.is_null()) continue;
        const double d = std::abs(va.get<double>() - vb.get<double>());
        if (d > worst) worst = d, where = name + " " + part + "." + key;
      }
  }
  return worst;
}

}  // namespace

TEST(ScanCommand, GivesTheSameNumbersAsTheApiForEveryHeadOfTheBuiltInModel) {
  const CliRun cli = run_headlab("scan --model " + kTinyDir + " --format json");
  ASSERT_EQ(cli.exit_code, 0) << cli.out;
  const json from_cli = json::parse(cli.out, nullptr, false);
  ASSERT_TRUE(from_cli.is_object() && from_cli.contains("heads")) << cli.out.substr(0, 400);

  TestServer server(temp_path("scan.db"), kTinyDir);
  auto api = server.get("/api/model/scan");
  ASSERT_EQ(api.status, 200) << api.raw.substr(0, 400);
  const json& from_api = api.body;

  ASSERT_EQ(from_cli["heads"].size(), from_api["heads"].size());
  EXPECT_EQ(from_cli["probes"], from_api["probes"]);
  std::string where;
  const double diff = max_difference(from_cli, from_api, where);
  std::printf("%zu heads: largest difference between the CLI and the API %.3g%s\n", from_cli["heads"].size(), diff,
              where.empty() ? "" : (" (" + where + ")").c_str());
  EXPECT_EQ(diff, 0.0) << where;
  // the same labels in the same order, and the same in-context learning losses
  for (std::size_t i = 0; i < from_cli["heads"].size(); ++i) {
    EXPECT_EQ(from_cli["heads"][i]["name"], from_api["heads"][i]["name"]);
    EXPECT_EQ(from_cli["heads"][i]["labels"], from_api["heads"][i]["labels"]);
  }
  EXPECT_EQ(from_cli["in_context_learning"], from_api["in_context_learning"]);
}

TEST(ScanCommand, SaysTheModelFolderHasNoHeldOutTextAsTheApiDoes) {
  const std::string dir = headlab::testing::make_random_model_dir("scan-no-heldout", {2, 2, 16, 64, 5});
  const CliRun cli = run_headlab("scan --model " + dir + " 2>&1");
  EXPECT_EQ(cli.exit_code, 2) << cli.out;
  EXPECT_NE(cli.out.find("has no heldout.txt"), std::string::npos) << cli.out;
  EXPECT_NE(cli.out.find("--text-file"), std::string::npos) << cli.out;

  TestServer server(temp_path("scan.db"), dir);
  auto api = server.get("/api/model/scan");
  EXPECT_EQ(api.status, 404) << api.raw;
  EXPECT_EQ(api.body["error"]["code"], "not_found");
  EXPECT_NE(api.body["error"]["message"].get<std::string>().find("has no heldout.txt"), std::string::npos) << api.raw;
}

TEST(ScanCommand, ScansTheConstructedHeadsOnAGivenTextFile) {
  const CliRun cli = run_headlab("scan --constructed --text-file " + kTinyDir + "/heldout.txt --format csv");
  ASSERT_EQ(cli.exit_code, 0) << cli.out;
  EXPECT_EQ(std::count(cli.out.begin(), cli.out.end(), '\n'), 6);  // the header and five heads
}

TEST(ScanCommand, PrintsItsProgressToStderrWithProgressAndNothingWhenStderrIsNotATerminal) {
  // stderr alone on the pipe, stdout dropped: what a log of the command would hold
  const std::string base = std::string(HEADLAB_BINARY_DIR "/headlab ") + "scan --model " + kTinyDir + " --format csv";
  auto with = headlab::testing::command_run(base + " --progress 2>&1 >/dev/null");
  ASSERT_EQ(with.exit_code, 0) << with.out;
  for (const char* stage : {"scan: natural text 0/4", "scan: repeated random", "scan: three copies", "scan: OV circuits",
                            "scan: copying scores"})
    EXPECT_NE(with.out.find(stage), std::string::npos) << stage << " in:\n" << with.out;
  EXPECT_EQ(with.out.find('\r'), std::string::npos) << "no terminal redraws in a log";
  auto without = headlab::testing::command_run(base + " 2>&1 >/dev/null");
  ASSERT_EQ(without.exit_code, 0) << without.out;
  EXPECT_EQ(without.out.find("scan:"), std::string::npos) << without.out;
}
