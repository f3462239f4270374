// `headlab run --format json` and POST /api/model/run are adapters over one pipeline
// (analysis/run_text.h) and one codec: for the same model and text they give the same
// answer, number for number.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <sys/wait.h>

#include "testing/random_model.h"
#include "testing/test_server.h"

#include "testing/process.h"

using headlab::testing::TestServer;
using headlab::testing::temp_path;
using nlohmann::json;

namespace {

std::string model_dir() {
  static const std::string dir = headlab::testing::make_random_model_dir("run-cli-api-model", {2, 4, 32, 64, 11});
  return dir;
}

json cli_run(const std::string& args) {
  const auto r = headlab::testing::command_run(std::string(HEADLAB_BINARY_DIR) + "/headlab run --model " + model_dir() + " " + args);
  if (r.exit_code != 0) return json{{"exit", r.exit_code}, {"out", r.out}};
  return json::parse(r.out);
}

}  // namespace

TEST(RunCliAndApi, GiveTheSameAnswerForTheSameText) {
  TestServer s(temp_path("m.db"), model_dir());
  auto api = s.post("/api/model/run", json{{"text", "the cat sat on the mat"}, {"top_k", 3}});
  ASSERT_EQ(api.status, 200) << api.raw;
  json cli = cli_run("--text 'the cat sat on the mat' --format json --top 3");
  ASSERT_TRUE(cli.contains("tokens")) << cli.dump().substr(0, 300);
  EXPECT_EQ(cli, api.body);
  EXPECT_EQ(cli["tokens"][0]["text"], "<|endoftext|>");  // both put BOS first by default
}

TEST(RunCliAndApi, AgreeWithoutBosAndOnOneHead) {
  TestServer s(temp_path("m.db"), model_dir());
  auto api = s.post("/api/model/run", json{{"text", "a dog ran"}, {"bos", false}, {"heads", {{1, 2}}}});
  ASSERT_EQ(api.status, 200) << api.raw;
  json cli = cli_run("--text 'a dog ran' --no-bos --layer 1 --head 2 --format json");
  ASSERT_TRUE(cli.contains("tokens")) << cli.dump().substr(0, 300);
  EXPECT_EQ(cli, api.body);
}
