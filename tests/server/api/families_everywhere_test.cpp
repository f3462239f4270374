// Every family runs everywhere (issue 14's "done when"): for each family's random model
// (tests/fixtures/gguf/<name>_random, made by tools/reference/make_llama_fixtures.py), as the
// Hugging Face folder and as the GGUF file `headlab export` writes from it, `headlab run`,
// `headlab scan` and the server's model routes that the explorer and lesson 2 use answer with
// the model's shapes (every query head, GQA's KV-head count, each layer's window) and no
// server error; lesson 2's checks answer a wrong answer in numbers from the random model.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "formats/hf/checkpoint.h"
#include "formats/model_files.h"
#include "testing/process.h"
#include "testing/test_server.h"

using headlab::testing::TestServer;
using headlab::testing::temp_path;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

struct Family {
  const char* family;       // config.json's model_type
  const char* dir;          // under tests/fixtures/gguf/
  const char* gguf_family;  // the family a GGUF file reads back as (Mistral is llama.cpp's llama)
};

const Family kFamilies[] = {
    {"gpt2", "gpt2_random", "gpt2"},       {"gpt_neox", "pythia_random", "gpt_neox"},
    {"llama", "llama3_random", "llama"},   {"mistral", "mistral_random", "llama"},
    {"qwen2", "qwen2_random", "qwen2"},    {"qwen3", "qwen3_random", "qwen3"},
    {"gemma2", "gemma2_random", "gemma2"}, {"gemma3", "gemma3_random", "gemma3"},
};

// The scanner's held-out text (heldout.txt beside the model), a few plain sentences.
constexpr const char* kHeldout =
    "The committee met on a grey morning to read the report. Nobody had read it before the meeting, so the "
    "chair read it aloud, page by page, while the others took notes. When the chair reached the section on "
    "the budget, the treasurer stood up and said that the numbers were wrong. The room went quiet. The chair "
    "asked him to explain, and he did, slowly, with a pencil and the back of an envelope. By noon the report "
    "had been sent back to its authors with a short letter asking for the numbers to be checked again.\n";

constexpr const char* kText = "the hat, the hat in";  // 10 tokens with BOS: GPT-2's fixture has n_ctx 16

// The model as the test serves it: the fixture folder copied with a heldout.txt, or the GGUF
// file headlab exports from that folder, with heldout.txt beside it. Made once per process.
std::string model_path(const Family& f, bool gguf) {
  static std::map<std::string, std::string> made;
  const std::string key = std::string(f.dir) + (gguf ? ".gguf" : "");
  if (auto it = made.find(key); it != made.end()) return it->second;
  const fs::path folder = fs::path(temp_path("folder")).parent_path() / f.dir;
  fs::create_directories(folder);
  for (const auto& e : fs::directory_iterator(fs::path(HEADLAB_SOURCE_DIR) / "tests/fixtures/gguf" / f.dir))
    fs::copy_file(e.path(), folder / e.path().filename(), fs::copy_options::overwrite_existing);
  std::ofstream(folder / "heldout.txt") << kHeldout;
  std::string path = folder.string();
  if (gguf) {
    path = (folder / "model.gguf").string();
    auto r = headlab::testing::headlab_run("export --gguf " + path + " --model " + folder.string());
    EXPECT_EQ(r.exit_code, 0) << r.out;
  }
  return made[key] = path;
}

struct Case {
  const Family* family;
  bool gguf;
};

std::string case_name(const ::testing::TestParamInfo<Case>& i) {
  return std::string(i.param.family->family) + (i.param.gguf ? "_gguf" : "_folder");
}

std::vector<Case> all_cases() {
  std::vector<Case> out;
  for (const Family& f : kFamilies)
    for (bool gguf : {false, true}) out.push_back({&f, gguf});
  return out;
}

class FamiliesEverywhere : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    path = model_path(*GetParam().family, GetParam().gguf);
    auto p = headlab::model::model_load(path);
    ASSERT_TRUE(p) << p.error().message;
    config = p->config;
  }
  std::string path;
  headlab::model::ModelConfig config;
};

// Each head's pattern rows: row q holds keys 0..q, each summing to 1.
void expect_causal_rows(const json& pattern, int T, const std::string& what) {
  ASSERT_EQ(int(pattern.size()), T) << what;
  for (int q = 0; q < T; q++) {
    ASSERT_EQ(int(pattern[q].size()), q + 1) << what << " row " << q;
    double sum = 0;
    for (const auto& x : pattern[q]) sum += x.get<double>();
    EXPECT_NEAR(sum, 1.0, 1e-4) << what << " row " << q;
  }
}

}  // namespace

TEST_P(FamiliesEverywhere, TheCliRunsAndScansTheModel) {
  auto run = headlab::testing::command_run(std::string(HEADLAB_BINARY_DIR) + "/headlab run --model " + path +
                                           " --text '" + kText + "' --format json --top 3");
  ASSERT_EQ(run.exit_code, 0) << run.out.substr(0, 400);
  const json r = json::parse(run.out);
  const int T = int(r["tokens"].size());
  EXPECT_GT(T, 6);
  EXPECT_EQ(r["n_layer"], config.n_layer);
  EXPECT_EQ(r["n_head"], config.n_head);
  ASSERT_EQ(int(r["heads"].size()), config.n_layer * config.n_head);  // one pattern per query head, GQA too
  for (const auto& h : r["heads"]) expect_causal_rows(h["pattern"], T, "head " + h["layer"].dump() + "." + h["head"].dump());
  EXPECT_TRUE(std::isfinite(r["loss"].get<double>()));

  auto scan = headlab::testing::command_run(std::string(HEADLAB_BINARY_DIR) + "/headlab scan --model " + path +
                                            " --format json --windows 2 --probes 2");
  ASSERT_EQ(scan.exit_code, 0) << scan.out.substr(0, 400);
  const json s = json::parse(scan.out);
  EXPECT_EQ(int(s["heads"].size()), config.n_layer * config.n_head);
}

TEST_P(FamiliesEverywhere, TheServersModelRoutesAnswerWithTheModelsShapes) {
  TestServer s(temp_path("families.db"), path);
  auto info = s.get("/api/model");
  ASSERT_EQ(info.status, 200) << info.raw;
  const json& c = info.body["config"];
  EXPECT_EQ(c["family"], GetParam().gguf ? GetParam().family->gguf_family : GetParam().family->family);
  EXPECT_EQ(c["n_layer"], config.n_layer);
  EXPECT_EQ(c["n_head"], config.n_head);
  EXPECT_EQ(c["block"]["n_kv_head"], config.kv_heads());  // query head h reads KV head h / (NH / NKV)
  EXPECT_EQ(c["block"]["head_size"], config.head_size());
  ASSERT_EQ(int(c["block"]["window"].size()), config.n_layer);
  for (int l = 0; l < config.n_layer; l++) EXPECT_EQ(c["block"]["window"][l], config.window_of(l));

  auto run = s.post("/api/model/run", json{{"text", kText}, {"top_k", 3}, {"views", {"pattern", "value_weighted", "scores"}}});
  ASSERT_EQ(run.status, 200) << run.raw.substr(0, 400);
  const int T = int(run.body["tokens"].size());
  ASSERT_EQ(int(run.body["heads"].size()), config.n_layer * config.n_head);
  for (const auto& h : run.body["heads"]) {
    expect_causal_rows(h["pattern"], T, "pattern");
    expect_causal_rows(h["value_weighted"], T, "value_weighted");
    EXPECT_EQ(int(h["scores"].size()), T);
  }
  EXPECT_EQ(int(run.body["top_next"].size()), T);
  EXPECT_EQ(int(run.body["top_next"][0].size()), 3);

  auto scan = s.get("/api/model/scan");
  ASSERT_EQ(scan.status, 200) << scan.raw.substr(0, 400);
  EXPECT_EQ(int(scan.body["heads"].size()), config.n_layer * config.n_head);

  const int L = config.n_layer, NH = config.n_head;
  auto intervene = s.post("/api/model/intervene", json{{"text", kText},
                                                       {"ablate", {{{"layer", L - 1}, {"head", NH - 1}, {"kind", "mean"}}}},
                                                       {"block", {{{"layer", 0}, {"head", -1}, {"key", 1}}}},
                                                       {"replace", {{{"layer", 0}, {"head", 0}, {"kind", "uniform"}}}},
                                                       {"top_k", 2}});
  ASSERT_EQ(intervene.status, 200) << intervene.raw.substr(0, 400);
  EXPECT_NE(intervene.body["baseline"]["loss"], intervene.body["intervened"]["loss"]);

  auto scores = s.post("/api/model/query-scores", json{{"text", kText}, {"layer", L - 1}, {"head", NH - 1}, {"query", 2}});
  ASSERT_EQ(scores.status, 200) << scores.raw.substr(0, 400);
  EXPECT_EQ(int(scores.body["scores"].size()), T);
  EXPECT_EQ(s.post("/api/model/query-scores", json{{"text", kText}, {"layer", 0}, {"head", NH}, {"query", 2}}).status, 400);
}

TEST_P(FamiliesEverywhere, LessonTwoChecksAWrongAnswerInTheModelsNumbers) {
  TestServer s(temp_path("families.db"), path);
  auto check = [&](const std::string& challenge, json answer) {
    return s.post("/api/lessons/trained-heads/check",
                  json{{"learner", "families-learner-1"}, {"challenge", challenge}, {"answer", std::move(answer)}});
  };
  auto quiz = check("pattern-quiz", {{"choice", "diagonal"}});
  ASSERT_EQ(quiz.status, 200) << quiz.raw;
  EXPECT_EQ(quiz.body["correct"], false);
  // the explanation names this model's head that draws the diagonal most, from its scan
  EXPECT_NE(quiz.raw.find("In this model, the head that draws it most is"), std::string::npos) << quiz.raw;

  auto induction = check("find-induction", {{"layer", 0}, {"head", 0}, {"text", "a hat in the"}});
  ASSERT_EQ(induction.status, 200) << induction.raw;
  EXPECT_EQ(induction.body["correct"], false);
  EXPECT_NE(induction.raw.find("repeats no span"), std::string::npos) << induction.raw;

  // the challenge is about a repeated text: four tokens in repeated spans at least
  auto ablation = check("ablation-matters", {{"layer", 0}, {"head", config.n_head - 1}, {"text", "a b a b a b"}});
  ASSERT_EQ(ablation.status, 200) << ablation.raw;
  EXPECT_NE(ablation.raw.find("nats"), std::string::npos) << ablation.raw;

  auto sink = check("find-sink", {{"layer", config.n_layer - 1}, {"head", 0}, {"text", kText}, {"choice", "sink"}});
  ASSERT_EQ(sink.status, 200) << sink.raw;
  EXPECT_NE(sink.body["explanation"].get<std::string>().find("attention to the first token"), std::string::npos) << sink.raw;
}

INSTANTIATE_TEST_SUITE_P(Families, FamiliesEverywhere, ::testing::ValuesIn(all_cases()), case_name);

// The CLI and the API put BOS first by the same rule (TransformerLens's default_prepend_bos: off
// for GPT-NeoX and Qwen 2/3), and both honour an explicit choice.
TEST_P(FamiliesEverywhere, TheCliAndTheApiPutBosFirstByTheFamilysRule) {
  auto cli = headlab::testing::command_run(std::string(HEADLAB_BINARY_DIR) + "/headlab run --model " + path +
                                           " --text '" + kText + "' --format json --top 1");
  ASSERT_EQ(cli.exit_code, 0) << cli.out.substr(0, 400);
  const json c = json::parse(cli.out);
  TestServer s(temp_path("families.db"), path);
  auto api = s.post("/api/model/run", json{{"text", kText}, {"top_k", 1}, {"heads", json::array({{0, 0}})}});
  ASSERT_EQ(api.status, 200) << api.raw.substr(0, 400);
  std::vector<int> cli_ids, api_ids;
  for (const auto& t : c["tokens"]) cli_ids.push_back(t["id"]);
  for (const auto& t : api.body["tokens"]) api_ids.push_back(t["id"]);
  EXPECT_EQ(cli_ids, api_ids) << "the same tokens by default";
  ASSERT_FALSE(api_ids.empty());
  EXPECT_EQ(api_ids.front() == config.bos_token_id, config.default_prepend_bos())
      << "family " << config.family << ": BOS first " << (config.default_prepend_bos() ? "by default" : "never by default");
  auto with = s.post("/api/model/run", json{{"text", kText}, {"top_k", 1}, {"bos", true}, {"heads", json::array({{0, 0}})}});
  ASSERT_EQ(with.status, 200);
  EXPECT_EQ(with.body["tokens"][0]["id"], config.bos_token_id);
}
