// `headlab lens`, `attribute` and `compose` run as a user would run them on the built-in model:
// their tables, CSV and JSON, --help that teaches by example, and bad input answered with
// "headlab: error:" and exit 2 (what was typed) or 1 (the model's files), never a crash.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "testing/process.h"

using headlab::testing::headlab_run;

namespace {

const std::string kTiny = std::string(HEADLAB_SOURCE_DIR) + "/models/headlab-tiny";
const std::string kRepeat = "--ids '4095 812 1999 77 3021 540 2210 1403 96 812 1999 77 3021 540 2210 1403'";
// Standard output alone: a run slower than a second also prints its progress on stderr, which
// headlab_run's 2>&1 would mix into the table, CSV or JSON.
headlab::testing::CommandResult headlab_stdout(const std::string& args) {
  return headlab::testing::command_run(std::string(HEADLAB_BINARY_DIR) + "/headlab " + args + " 2>/dev/null");
}

void expect_has(const std::string& text, const std::string& part) {
  EXPECT_NE(text.find(part), std::string::npos) << "missing \"" << part << "\" in:\n" << text.substr(0, 3000);
}

}  // namespace

TEST(LensCommand, TheTableShowsEveryLayerAndTheAnswersRankFallingToZero) {
  auto r = headlab_run("lens --model " + kTiny + " " + kRepeat + " --answer '#96' --top 3");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  expect_has(r.out, "0_pre");
  expect_has(r.out, "1_pre");
  expect_has(r.out, "final_post  H");
  expect_has(r.out, "KL  0.000  rank     0");
}

TEST(LensCommand, CsvHasOneRowPerLayerAndPosition) {
  auto r = headlab_stdout("lens --model " + kTiny + " " + kRepeat + " --answer '#96' --format csv");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  expect_has(r.out, "layer,label,pos,input_token,top1_id,top1_text,top1_prob,entropy,kl_final,answer0_id");
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1 + 3 * 16);
}

TEST(AttributeCommand, TheTableListsTheHeadsAndThePartsAddUpToTheModelsDifference) {
  auto r = headlab_run("attribute --model " + kTiny + " " + kRepeat + " --answer '#96' --wrong '#1403'");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  expect_has(r.out, "L1H2");
  expect_has(r.out, "1_attn_bias");
  expect_has(r.out, "sum of parts");
  auto j = headlab_stdout("attribute --model " + kTiny + " " + kRepeat + " --answer '#96' --format json");
  ASSERT_EQ(j.exit_code, 0) << j.out;
  auto a = nlohmann::json::parse(j.out);
  EXPECT_EQ(a["metric"], "logit");
  EXPECT_NEAR(a["sum"].get<double>(), a["logit_diff"].get<double>(), 1e-4);
}

TEST(AttributeCommand, ABatchFileIsAveragedAndABadLineIsNamed) {
  const std::string file = std::string(HEADLAB_BINARY_DIR) + "/tmp_lens_cli_prompts.jsonl";
  {
    std::ofstream f(file);
    f << R"({"clean": "the old man sat by the river. the old man sat", "answer": " by", "wrong": " the"})" << "\n"
      << "a house by the sea\n";
  }
  auto r = headlab_run("attribute --model " + kTiny + " --prompts " + file + " --answer ' the'");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  expect_has(r.out, "over 2 prompts");
  expect_has(r.out, "Per prompt");
  auto c = headlab_stdout("attribute --model " + kTiny + " --prompts " + file + " --answer ' the' --format csv");
  expect_has(c.out, "prompt,label,kind,layer,head,value\n1,embed,embed,,,");
  expect_has(c.out, "\nmean,ln_final.b,ln_final_bias,,,");
  auto bad = headlab_run("attribute --model " + kTiny + " --prompts " + file);
  EXPECT_EQ(bad.exit_code, 2);
  expect_has(bad.out, "prompt 2 (line 2): no answer");
}

TEST(ComposeCommand, ThePreviousTokenHeadLeadsTheKCompositionIntoTheInductionHead) {
  auto r = headlab_run("compose --model " + kTiny + " --kind k --top 1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  expect_has(r.out, "raw weights");
  expect_has(r.out, "Random baseline: 0.0");
  expect_has(r.out, "0.3 -> 1.2");
  auto c = headlab_stdout("compose --model " + kTiny + " --kind v --fold-ln --format csv");
  ASSERT_EQ(c.exit_code, 0) << c.out;
  expect_has(c.out, "kind,sender_layer,sender_head,receiver_layer,receiver_head,score,baseline_mean,weights\nv,0,0,1,0,");
  expect_has(c.out, ",fold_ln\n");
  EXPECT_EQ(std::count(c.out.begin(), c.out.end(), '\n'), 1 + 16);
  auto cp = headlab_run("compose --model " + kTiny + " --kind k --copying --top 1");
  ASSERT_EQ(cp.exit_code, 0) << cp.out;
  expect_has(cp.out, "Every head's OV copying score");
  expect_has(cp.out, "    1   0.986  1.000  1.000  0.714");  // the reference's 0.986, 0.9995, 0.9998, 0.714
  auto ov = headlab_run("compose --model " + kTiny + " --kind k --ov-circuit 1.2 --top 2");
  ASSERT_EQ(ov.exit_code, 0) << ov.out;
  expect_has(ov.out, "Head 1.2's circuits");
  expect_has(ov.out, "copying score");
}

// Every family the engine runs, as a Hugging Face folder (with its tokenizer) and as GGUF files
// (quantised too): the lens, the attribution and the composition run, and the parts add up.
TEST(ResearchCommands, RunOnEveryFamilyFolderAndGgufFile) {
  const std::string dir = std::string(HEADLAB_SOURCE_DIR) + "/tests/fixtures/gguf/";
  for (const char* m : {"gpt2_random", "pythia_random", "llama3_random", "mistral_random", "qwen2_random", "qwen3_random",
                        "gemma2_random", "gemma3_random", "gpt2_random.q8_0.gguf", "llama_random.q4_k_m.gguf",
                        "gemma2_random.q8_0.gguf", "qwen3_random.q8_0.gguf"}) {
    SCOPED_TRACE(m);
    const std::string model = " --model " + dir + m;
    auto lens = headlab_stdout("lens" + model + " --text 'the cat sat' --top 2 --format json");
    ASSERT_EQ(lens.exit_code, 0) << lens.out.substr(0, 500);
    auto l = nlohmann::json::parse(lens.out);
    EXPECT_EQ(l["values"].back().back()["kl_final"], 0.0);
    auto attr = headlab_stdout("attribute" + model + " --ids '1 2 3 4 5' --answer '#6' --wrong '#7' --format json");
    ASSERT_EQ(attr.exit_code, 0) << attr.out.substr(0, 500);
    auto a = nlohmann::json::parse(attr.out);
    double sum = 0;
    for (const auto& v : a["values"]) sum += v.get<double>();
    EXPECT_NEAR(sum, a["logit_diff_uncapped"].get<double>(), 1e-4 * (1 + std::fabs(sum)));
    auto comp = headlab_stdout("compose" + model + " --kind all --ov-circuit 0.0 --top 1 --format json");
    ASSERT_EQ(comp.exit_code, 0) << comp.out.substr(0, 500);
    auto c = nlohmann::json::parse(comp.out);
    EXPECT_EQ(c["what"], "composition");
    EXPECT_LE(std::fabs(c["circuit"]["copying_score"].get<double>()), 1.0);
  }
}

TEST(ResearchCommands, HelpTeachesByExample) {
  for (const char* verb : {"lens", "attribute", "compose"}) {
    auto r = headlab_run(std::string(verb) + " --help");
    EXPECT_EQ(r.exit_code, 0);
    expect_has(r.out, "Examples:");
    expect_has(r.out, std::string("headlab ") + verb + " --model");
  }
  auto all = headlab_run("--help");
  expect_has(all.out, "lens");
  expect_has(all.out, "compose");
}

TEST(ResearchCommands, BadInputIsAnErrorNeverACrash) {
  const std::string empty = std::string(HEADLAB_BINARY_DIR) + "/tmp_lens_cli_empty_dir";
  std::filesystem::create_directories(empty);
  struct Case {
    std::string args;
    int exit;
    std::string says;
  };
  const Case cases[] = {
      {"lens --model " + kTiny, 2, "give exactly one of --text and --ids"},
      {"lens --model " + kTiny + " --text hi --ids 1", 2, "give exactly one of --text and --ids"},
      {"lens --model " + kTiny + " --ids 'one two'", 2, "is not a token id"},
      {"lens --model " + kTiny + " --ids '1 99999'", 2, "outside the vocabulary"},
      {"lens --model " + kTiny + " --text 'the cat' --answer ' the cat sat'", 2, "an answer must be one token"},
      {"lens --model " + kTiny + " --text 'the cat' --answer '#5000'", 2, "outside the vocabulary"},
      {"lens --model " + kTiny + " --text 'the cat' --pos 9", 2, "--pos 9 is outside the input"},
      {"lens --model " + empty + " --text hi", 1, "config.json"},
      {"attribute --model " + kTiny + " --text 'the cat'", 2, "--answer is required"},
      {"attribute --model " + kTiny + " --prompts /nonexistent.jsonl", 1, "/nonexistent.jsonl"},
      {"attribute --model " + kTiny + " --text 'the cat' --answer ' the' --wrong ' the'", 2, "same token"},
      {"attribute --model " + kTiny + " --text 'the cat' --answer ' the' --pos 30", 2, "position 30 is outside the input"},
      {"compose --model " + kTiny + " --ov-circuit 1", 2, "--ov-circuit must name a head as LAYER.HEAD"},
      {"compose --model " + kTiny + " --ov-circuit 2.0", 2, "layer 2"},
      {"compose --model " + kTiny + " --kind z", 2, "--kind"},
      {"compose --model " + kTiny + " --threshold 2", 2, "--threshold"},
      {"compose --model " + empty, 1, "config.json"},
  };
  for (const Case& c : cases) {
    auto r = headlab_run(c.args);
    EXPECT_EQ(r.exit_code, c.exit) << c.args << "\n" << r.out;
    expect_has(r.out, "headlab: error:");
    expect_has(r.out, c.says);
  }
}
