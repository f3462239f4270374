// POST /api/model/cache and the steering of POST /api/model/intervene against a real server:
// the API answers the very bytes `headlab cache` writes and the numbers `headlab intervene`
// prints (one pipeline, research/), and refuses bad hooks, vectors and oversized caches with
// the one error envelope.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "formats/safetensors.h"
#include "testing/process.h"
#include "testing/random_model.h"
#include "testing/test_server.h"

using headlab::testing::TestServer;
using headlab::testing::temp_path;
using nlohmann::json;

namespace {

std::string cache_model_dir() {
  static const std::string dir = headlab::testing::make_random_model_dir("cache-api-model", {2, 4, 32, 64, 13});
  return dir;
}

std::string slurp_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

httplib::Result post_cache(TestServer& s, const json& body) {
  return s.client().Post("/api/model/cache", body.dump(), "application/json");
}

void expect_envelope(const httplib::Result& r, int status, const std::string& fragment) {
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, status) << r->body;
  json j = json::parse(r->body, nullptr, false);
  ASSERT_TRUE(j.contains("error")) << r->body;
  EXPECT_NE(j["error"]["message"].get<std::string>().find(fragment), std::string::npos) << r->body;
}

json cache_cli_json(const std::string& args) {
  const auto r = headlab::testing::command_run(std::string(HEADLAB_BINARY_DIR) + "/headlab " + args + " 2>/dev/null");
  if (r.exit_code != 0) return json{{"exit", r.exit_code}, {"out", r.out}};
  return json::parse(r.out);
}

}  // namespace

TEST(CacheApi, AnswersTheFileHeadlabCacheWritesByteForByte) {
  TestServer s(temp_path("m.db"), cache_model_dir());
  auto r = post_cache(s, json{{"text", "the cat sat on the mat"}, {"hooks", "blocks.*.attn.hook_pattern,hook_embed"}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(r->get_header_value("Content-Type"), "application/octet-stream");
  auto file = headlab::model::safetensors_parse(reinterpret_cast<const unsigned char*>(r->body.data()), r->body.size(),
                                                "answer");
  ASSERT_TRUE(file) << file.error().message;
  ASSERT_EQ(file->tensors.size(), 3u);
  EXPECT_NE(file->find("hook_embed"), nullptr);
  EXPECT_NE(file->find("blocks.1.attn.hook_pattern"), nullptr);
  EXPECT_EQ(file->metadata.at("prepend_bos"), "true");

  const std::string out = temp_path("cli.safetensors");
  auto cli = headlab::testing::command_run(std::string(HEADLAB_BINARY_DIR) + "/headlab cache --model " + cache_model_dir() +
                                           " --text 'the cat sat on the mat' --hooks 'blocks.*.attn.hook_pattern,hook_embed'"
                                           " --out " + out + " 2>&1");
  ASSERT_EQ(cli.exit_code, 0) << cli.out;
  EXPECT_TRUE(slurp_file(out) == r->body) << "the CLI's file and the API's answer differ";
}

TEST(CacheApi, TakesIdsAsTheyAreAndABatchOfPromptsPaddedToTheLongest) {
  TestServer s(temp_path("m.db"), cache_model_dir());
  auto r = post_cache(s, json{{"ids", {5, 6, 7}}, {"hooks", "blocks.0.hook_resid_pre"}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  auto file = headlab::model::safetensors_parse(reinterpret_cast<const unsigned char*>(r->body.data()), r->body.size(), "a");
  ASSERT_TRUE(file);
  EXPECT_EQ(json::parse(file->metadata.at("tokens")), json({{5, 6, 7}}));
  r = post_cache(s, json{{"prompts", {"the cat", "the cat sat on the mat"}}, {"hooks", "blocks.1.attn.hook_z"}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  file = headlab::model::safetensors_parse(reinterpret_cast<const unsigned char*>(r->body.data()), r->body.size(), "b");
  ASSERT_TRUE(file);
  auto lengths = json::parse(file->metadata.at("lengths"));
  EXPECT_LT(lengths[0].get<int>(), lengths[1].get<int>());
  EXPECT_EQ(file->tensors[0].shape, (std::vector<std::int64_t>{2, lengths[1].get<int>(), 4, 8}));
}

TEST(CacheApi, BadHooksInputsAndOversizedCachesAnswerTheEnvelope) {
  TestServer s(temp_path("m.db"), cache_model_dir(), 8,
               [](headlab::server::ServerOptions& o) { o.max_activation_cache_bytes = 20000; });
  expect_envelope(post_cache(s, json{{"text", "the cat"}, {"hooks", "blocks.0.attn.hook_patern"}}), 400,
                  "Did you mean blocks.0.attn.hook_pattern?");
  expect_envelope(post_cache(s, json{{"text", "the cat"}, {"hooks", "blocks.0.hook_resid_mid"}}), 400, "attention-only");
  expect_envelope(post_cache(s, json{{"text", "the cat"}, {"ids", {1}}, {"hooks", "*"}}), 400, "exactly one");
  expect_envelope(post_cache(s, json{{"ids", {1, 99999999}}, {"hooks", "*"}}), 400, "outside the vocabulary");
  expect_envelope(post_cache(s, json{{"text", "the cat"}}), 400, "hooks");
  expect_envelope(post_cache(s, json{{"text", "the cat sat on the mat and the dog sat on the log"}, {"hooks", "*"}}), 413,
                  "more than the budget");
  std::string long_text;
  for (int i = 0; i < 40; i++) long_text += "the cat ";
  expect_envelope(post_cache(s, json{{"text", long_text}, {"hooks", "hook_embed"}}), 413, "this server's limit");
  expect_envelope(post_cache(s, json{{"prompts", {"the cat", long_text}}, {"hooks", "hook_embed"}}), 413, "Prompt 1: ");
  auto no_truncate = post_cache(s, json{{"text", long_text}, {"hooks", "hook_embed"}});
  ASSERT_TRUE(no_truncate);
  EXPECT_EQ(no_truncate->body.find("truncate"), std::string::npos) << no_truncate->body;  // this route has none
}

TEST(InterveneApi, SteeringGivesTheNumbersOfHeadlabIntervene) {
  TestServer s(temp_path("m.db"), cache_model_dir());
  json vector = json::array();
  for (int i = 0; i < 32; i++) vector.push_back(0.25 * ((i * 7) % 5 - 2));
  const std::string file = temp_path("v.json");
  std::ofstream(file) << vector.dump();
  const std::string text = "the cat sat on the mat";
  auto api = s.post("/api/model/intervene",
                    json{{"text", text}, {"steer", {{{"layer", 1}, {"coef", 3.0}, {"vector", vector}}}}, {"top_k", 5}});
  ASSERT_EQ(api.status, 200) << api.raw;
  EXPECT_NE(api.body["loss_change"], 0.0);
  json cli = cache_cli_json("intervene --model " + cache_model_dir() + " --text '" + text + "' --steer 1:3:" + file + " --format json");
  EXPECT_EQ(cli, api.body);

  api = s.post("/api/model/intervene", json{{"text", text},
                                            {"steer", {{{"layer", 1}, {"coef", 2.0}, {"plus", "the dog"}, {"minus", "the cat"}}}}});
  ASSERT_EQ(api.status, 200) << api.raw;
  cli = cache_cli_json("intervene --model " + cache_model_dir() + " --text '" + text + "' --steer-prompts '1:2:the dog:the cat' --format json");
  EXPECT_EQ(cli, api.body);
}

TEST(InterveneApi, BadSteeringIsRefusedWithTheEnvelope) {
  TestServer s(temp_path("m.db"), cache_model_dir());
  json ok = json::array();
  for (int i = 0; i < 32; i++) ok.push_back(0.1);
  json huge = ok;
  huge[4] = 1e39;
  auto refused = [&](const json& steer, const std::string& fragment) {
    auto r = s.post("/api/model/intervene", json{{"text", "the cat"}, {"steer", steer}});
    EXPECT_EQ(r.status, 400) << r.raw;
    ASSERT_TRUE(r.body.contains("error")) << r.raw;
    EXPECT_NE(r.body["error"]["message"].get<std::string>().find(fragment), std::string::npos) << r.raw;
  };
  refused({{{"layer", 0}, {"coef", 1}, {"vector", huge}}}, "value 4 is infinite");
  refused({{{"layer", 0}, {"coef", 1}, {"vector", {1, 2}}}}, "n_embd");
  refused({{{"layer", 5}, {"coef", 1}, {"vector", ok}}}, "0 to 1");
  refused({{{"layer", 0}, {"coef", 1}, {"vector", ok}, {"plus", "a"}, {"minus", "b"}}}, "either");
  refused({{{"layer", 0}, {"vector", ok}}}, "coef");
  refused({{{"layer", 0}, {"coef", 1}, {"plus", ""}, {"minus", "b"}}}, "empty");
  refused({{{"layer", 0}, {"coef", 1}, {"vector", ok}, {"from", -1}}}, "position");
  refused(json("no"), "steer");
}
