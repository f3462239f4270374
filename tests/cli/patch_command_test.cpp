// Tests for `headlab patch` (src/cli/patch_command.cpp): the binary on the built-in model
// (models/headlab-tiny, attention-only, an induction head at 1.2), as a user runs it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "testing/process.h"

using headlab::testing::CommandResult;
using headlab::testing::headlab_run;

namespace {

const std::string kModel = std::string(HEADLAB_SOURCE_DIR) + "/models/headlab-tiny";
// The second copy ends at " fog": the clean first copy continues " viol", the corrupted one " ar".
const std::string kClean = "' gray whale ink crown plum fog violin arch gray whale ink crown plum fog'";
const std::string kCorrupted = "' gray whale ink crown plum fog arch violin gray whale ink crown plum fog'";
const std::string kPair = " --clean " + kClean + " --corrupted " + kCorrupted + " --answer ' viol' --wrong ' ar'";

CommandResult patch(const std::string& args) { return headlab_run("patch --model " + kModel + " " + args); }
// Standard output alone, for the JSON and CSV a test parses: a sweep slower than a second (a
// loaded machine) also prints its progress on stderr, which patch()'s 2>&1 would mix in.
CommandResult patch_stdout(const std::string& args) {
  return headlab::testing::command_run(std::string(HEADLAB_BINARY_DIR) + "/headlab patch --model " + kModel + " " + args +
                                       " 2>/dev/null");
}

}  // namespace

TEST(PatchCommand, JsonHasTransformerLensAxesAndTheInductionTokenRestoresTheAnswer) {
  CommandResult r = patch_stdout(kPair + " --what resid_pre --format json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["what"], "resid_pre");
  EXPECT_EQ(j["metric"], "logit_diff");
  EXPECT_EQ(j["direction"], "denoising");
  EXPECT_EQ(j["axes"], (nlohmann::json{"layer", "pos"}));
  ASSERT_EQ(j["values"].size(), 2u);
  ASSERT_EQ(j["values"][0].size(), j["tokens"].size());
  const double clean = j["clean"], corrupted = j["corrupted"];
  EXPECT_GT(clean, 0.0);
  EXPECT_LT(corrupted, 0.0);
  // position 14 (the first copy's " viol" | " ar") carries the answer at both layers; position 0 nothing
  EXPECT_EQ(j["tokens"][14]["text"], " viol");
  EXPECT_GT(double(j["values"][1][14]), 0.9 * clean);
  EXPECT_EQ(double(j["values"][0][0]), corrupted);
}

TEST(PatchCommand, TableShowsLayersByPositionsWithBothRunsTokens) {
  CommandResult r = patch(kPair + " --positions 13-15");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("Patching resid_pre (denoising"), std::string::npos) << r.out;
  auto line = [&](const std::string& start) {
    const auto at = r.out.find("\n" + start);
    return at == std::string::npos ? std::string() : r.out.substr(at + 1, r.out.find('\n', at + 1) - at - 1);
  };
  auto words = [](const std::string& s) {
    std::istringstream in(s);
    std::vector<std::string> w;
    for (std::string x; in >> x;) w.push_back(x);
    return w;
  };
  EXPECT_EQ(words(line("pos")), (std::vector<std::string>{"pos", "13", "14", "15"})) << r.out;
  EXPECT_EQ(words(line("clean")), (std::vector<std::string>{"clean", "og", "viol", "in"})) << r.out;
  EXPECT_EQ(words(line("corrupted")), (std::vector<std::string>{"corrupted", "ar", "ch"})) << r.out;
  EXPECT_EQ(words(line("layer 1")).size(), 5u) << r.out;
}

TEST(PatchCommand, CsvHasOneRowPerCellWithItsToken) {
  CommandResult r = patch_stdout(kPair + " --what z_by_pos --layers 1 --positions 30 --metric normalized --format csv");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out.rfind("layer,pos,head,token,value\n", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("1,30,2,\"og\","), std::string::npos) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 5) << r.out;  // the header and 4 heads
}

TEST(PatchCommand, APromptsFileIsABatchAveragedOverItsPairs) {
  const std::string path = std::string(HEADLAB_BINARY_DIR) + "/patch_prompts_" + std::to_string(::getpid()) + ".jsonl";
  {
    std::ofstream f(path);
    f << R"({"clean": " gray whale ink crown plum fog violin arch gray whale ink crown plum fog", )"
      << R"("corrupted": " gray whale ink crown plum fog arch violin gray whale ink crown plum fog", "answer": " viol", "wrong": " ar"})"
      << "\n"
      << R"({"clean": " gray whale ink crown plum fog violin arch gray whale ink crown plum fog", )"
      << R"("corrupted": " gray whale ink crown plum fog arch violin gray whale ink crown plum fog", "answer": " viol", "wrong": " ar"})"
      << "\n";
  }
  CommandResult two = patch_stdout("--prompts " + path + " --what z_all_pos --format json");
  CommandResult one = patch_stdout(kPair + " --what z_all_pos --format json");
  std::filesystem::remove(path);
  ASSERT_EQ(two.exit_code, 0) << two.out;
  ASSERT_EQ(one.exit_code, 0) << one.out;
  auto a = nlohmann::json::parse(two.out), b = nlohmann::json::parse(one.out);
  EXPECT_EQ(a["pairs"], 2);
  EXPECT_EQ(a["values"], b["values"]) << "the mean of two equal pairs is each";
}

TEST(PatchCommand, BadInputIsAUsageErrorThatSaysWhy) {
  struct Case {
    std::string args, says;
  };
  const Case cases[] = {
      {" --clean ' gray whale' --corrupted ' gray whale ink' --answer ' viol' --wrong ' ar'",
       "the clean prompt is 6 tokens"},
      {" --clean " + kClean + " --corrupted " + kCorrupted + " --answer ' violin' --wrong ' ar'",
       "the answer ' violin' is 2 tokens (' viol' 'in')"},
      {kPair + " --what resid_post", "--what: \"resid_post\" is not one of resid_pre, resid_mid"},
      {kPair + " --what resid_mid", "attention-only, so there is no resid_mid"},
      {kPair + " --what mlp_out", "no mlp_out"},
      {kPair + " --metric accuracy", "--metric: \"accuracy\" is not one of"},
      {kPair + " --layers 2", "layer 2 does not exist"},
      {kPair + " --layers 1-x", "--layers: \"1-x\" is not a list"},
      {kPair + " --positions 99", "position 99 is outside the prompts: they have positions 0 to 30"},
      {" --clean " + kClean, "give --corrupted TEXT too"},
      {"", "give one prompt pair"},
      {kPair + " --prompts x.jsonl", "give one prompt pair"},
      {" --clean " + kClean + " --corrupted " + kClean + " --answer ' viol' --wrong ' ar' --metric normalized",
       "the corrupted prompts do not change the answer"},
  };
  for (const Case& c : cases) {
    CommandResult r = patch(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.out;
    EXPECT_NE(r.out.find("headlab: error: "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(c.says), std::string::npos) << c.args << "\n" << r.out;
  }
}

TEST(PatchCommand, IdsAndIdAnswersReproduceThePyTorchReference) {
  // tests/fixtures/research/headlab_tiny: the induction prompt as ids, TL's loop in float64
  const std::string dir = std::string(HEADLAB_SOURCE_DIR) + "/tests/fixtures/research/headlab_tiny";
  std::ifstream pf(dir + "/prompts.json"), ef(dir + "/expected.json");
  if (!pf || !ef) GTEST_SKIP() << dir << " is not here";
  const auto prompts = nlohmann::json::parse(pf), expected = nlohmann::json::parse(ef);
  auto ids = [](const nlohmann::json& a) {
    std::string s;
    for (int id : a) s += (s.empty() ? "" : " ") + std::to_string(id);
    return s;
  };
  CommandResult r = patch_stdout("--clean-ids '" + ids(prompts["clean"]) + "' --corrupted-ids '" + ids(prompts["corrupted"]) +
                          "' --answer '#" + std::to_string(int(prompts["answer"])) + "' --wrong '#" +
                          std::to_string(int(prompts["wrong"])) + "' --what resid_pre --format json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  const auto& want = expected["patch"]["resid_pre"];
  ASSERT_EQ(j["values"].size(), want.size());
  for (std::size_t l = 0; l < want.size(); l++)
    for (std::size_t p = 0; p < want[l].size(); p++)
      EXPECT_NEAR(double(j["values"][l][p]), double(want[l][p]), 1e-4 * std::max(1.0, std::fabs(double(want[l][p]))))
          << "layer " << l << ", position " << p;
  EXPECT_EQ(j["tokens"][0]["id"], 4095) << "the ids are used as given";
  EXPECT_EQ(patch("--clean-ids '1 2' --corrupted-ids '1 x' --answer '#3' --wrong '#4'").exit_code, 2);
  CommandResult far = patch("--clean-ids '1 2' --corrupted-ids '1 3' --answer '#99999' --wrong '#4'");
  EXPECT_EQ(far.exit_code, 2);
  EXPECT_NE(far.out.find("the answer #99999 is outside the vocabulary [0, 4096)"), std::string::npos) << far.out;
}

TEST(PatchCommand, HelpTeachesByExample) {
  CommandResult r = headlab_run("patch --help");
  ASSERT_EQ(r.exit_code, 0);
  for (const char* says : {"Examples:", "--what", "denoising", "(layer, pos)", "KV heads", "normalized", "--prompts"})
    EXPECT_NE(r.out.find(says), std::string::npos) << says;
}

TEST(PatchCommand, SteeringChangesEveryRunAndTheOutputSaysSo) {
  // ActAdd " violin" - " arch" at layer 0 pushes every run toward the clean answer
  CommandResult plain = patch_stdout(kPair + " --what resid_pre --layers 1 --format json");
  CommandResult steered =
      patch_stdout(kPair + " --what resid_pre --layers 1 --format json --steer-prompts '0:4: violin: arch'");
  ASSERT_EQ(plain.exit_code, 0) << plain.out;
  ASSERT_EQ(steered.exit_code, 0) << steered.out;
  auto a = nlohmann::json::parse(plain.out), b = nlohmann::json::parse(steered.out);
  EXPECT_FALSE(a.contains("steer"));
  ASSERT_EQ(b["steer"].size(), 1u);
  EXPECT_EQ(b["steer"][0]["layer"], 0);
  EXPECT_EQ(b["steer"][0]["coef"], 4.0);
  EXPECT_NE(double(a["corrupted"]), double(b["corrupted"])) << "the corrupted run is steered too";
  EXPECT_NE(a["values"], b["values"]);
  CommandResult table = patch(kPair + " --what resid_pre --layers 1 --steer-prompts '0:4: violin: arch'");
  ASSERT_EQ(table.exit_code, 0) << table.out;
  EXPECT_NE(table.out.find("Every run steered: 4 x ActAdd's"), std::string::npos) << table.out;
}

TEST(PatchCommand, ABadSteeringIsAUsageErrorThatSaysWhy) {
  CommandResult layer = patch(kPair + " --steer-prompts '7:1: a: b'");
  EXPECT_EQ(layer.exit_code, 2) << layer.out;
  EXPECT_NE(layer.out.find("layer"), std::string::npos) << layer.out;
  CommandResult form = patch(kPair + " --steer 'x'");
  EXPECT_EQ(form.exit_code, 2) << form.out;
  EXPECT_NE(form.out.find("--steer"), std::string::npos) << form.out;
}

// ---- path patching: headlab patch --path ----

namespace {

// The built-in model's fixture pair (tests/fixtures/research/headlab_tiny) as --clean-ids ... options.
std::string fixture_pair_options(nlohmann::json& expected) {
  const std::string dir = std::string(HEADLAB_SOURCE_DIR) + "/tests/fixtures/research/headlab_tiny";
  std::ifstream pf(dir + "/prompts.json"), ef(dir + "/expected.json");
  if (!pf || !ef) return "";
  const auto prompts = nlohmann::json::parse(pf);
  expected = nlohmann::json::parse(ef);
  auto ids = [](const nlohmann::json& a) {
    std::string s;
    for (int id : a) s += (s.empty() ? "" : " ") + std::to_string(id);
    return s;
  };
  return "--clean-ids '" + ids(prompts["clean"]) + "' --corrupted-ids '" + ids(prompts["corrupted"]) + "' --answer '#" +
         std::to_string(int(prompts["answer"])) + "' --wrong '#" + std::to_string(int(prompts["wrong"])) + "'";
}

}  // namespace

TEST(PatchCommand, PathPatchingIntoTheLogitsAndIntoTheInductionHeadsKeysIsThePyTorchReference) {
  nlohmann::json expected;
  const std::string pair = fixture_pair_options(expected);
  if (pair.empty()) GTEST_SKIP() << "no headlab_tiny fixture";
  const auto& want = expected["path_patch"];
  std::string receivers;
  for (const auto& r : want["receivers"]) receivers += (receivers.empty() ? "" : ",") + r.get<std::string>();
  for (const std::string grid : {"final", "heads"}) {
    CommandResult r =
        patch_stdout(pair + " --path --format json" + (grid == "final" ? std::string() : " --receivers " + receivers));
    ASSERT_EQ(r.exit_code, 0) << r.out;
    auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["kind"], "path_patch");
    EXPECT_EQ(j["direction"], "noising");
    EXPECT_EQ(j["axes"], (nlohmann::json{"layer", "head"}));
    EXPECT_EQ(j["senders"], "all");
    ASSERT_EQ(j["values"].size(), want[grid].size());
    for (std::size_t l = 0; l < want[grid].size(); l++)
      for (std::size_t h = 0; h < want[grid][l].size(); h++)
        EXPECT_NEAR(double(j["values"][l][h]), double(want[grid][l][h]), 3e-5 * std::max(1.0, std::fabs(double(want[grid][l][h]))))
            << grid << " sender " << l << "." << h;
  }
}

TEST(PatchCommand, PathTableNamesTheReceiversAndOnlyTheLayersOfTheSendersAsked) {
  CommandResult r = patch(kPair + " --path --senders 1.* --metric normalized");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  for (const char* says : {"Path patching each sender head into the final residual stream", "Noising (ARENA's)",
                           "Metric normalized: clean 1.000, corrupted 0.000", "layer 1"})
    EXPECT_NE(r.out.find(says), std::string::npos) << says << "\n" << r.out;
  EXPECT_EQ(r.out.find("layer 0"), std::string::npos) << r.out;
  CommandResult into = patch(kPair + " --path --senders 0.3 --receivers 1.2:k,1.2:q --denoising");
  ASSERT_EQ(into.exit_code, 0) << into.out;
  EXPECT_NE(into.out.find("the inputs of 1.2:k, 1.2:q"), std::string::npos) << into.out;
  EXPECT_NE(into.out.find("Denoising"), std::string::npos) << into.out;
  EXPECT_NE(into.out.find("      -"), std::string::npos) << "heads 0.0-0.2 were not asked for\n" << into.out;
  CommandResult csv = patch_stdout(kPair + " --path --senders 0.3,1.2 --format csv");
  ASSERT_EQ(csv.exit_code, 0);
  EXPECT_EQ(csv.out.rfind("layer,head,value\n0,3,", 0), 0u) << csv.out;
  EXPECT_NE(csv.out.find("\n1,2,"), std::string::npos) << csv.out;
}

TEST(PatchCommand, BadPathPatchingInputIsAUsageErrorThatSaysWhy) {
  struct Case {
    std::string args, says;
  };
  const Case cases[] = {
      {kPair + " --path --what z_all_pos", "activation patching's: leave them out"},
      {kPair + " --receivers 1.2:k", "path patching's: add --path"},
      {kPair + " --path --receivers 1.9:k", "head 9 does not exist"},
      {kPair + " --path --receivers 1.2", "LAYER.HEAD:q"},
      {kPair + " --path --senders 3.1", "sender 3.1: layer 3 does not exist"},
      {kPair + " --path --noising --denoising", "not both"},
  };
  for (const Case& c : cases) {
    CommandResult r = patch(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.out;
    EXPECT_NE(r.out.find(c.says), std::string::npos) << c.args << "\n" << r.out;
  }
  CommandResult help = headlab_run("patch --help");
  for (const char* says : {"--path", "--receivers", "ARENA", "appendix B", "frozen"})
    EXPECT_NE(help.out.find(says), std::string::npos) << says;
}

// --method attribution on the reference pair as ids: the PyTorch autograd reference
// (expected.json's "attribution_patch"), activation patching's checks, and what only the
// activation method does (--path).
TEST(PatchCommand, AttributionMethodReproducesTheAutogradReferenceAndRefusesWhatItCannotDo) {
  const std::string dir = std::string(HEADLAB_SOURCE_DIR) + "/tests/fixtures/research/headlab_tiny";
  std::ifstream pf(dir + "/prompts.json"), ef(dir + "/expected.json");
  ASSERT_TRUE(pf && ef) << dir;
  const auto prompts = nlohmann::json::parse(pf), expected = nlohmann::json::parse(ef);
  auto ids = [](const nlohmann::json& a) {
    std::string s;
    for (int id : a) s += (s.empty() ? "" : " ") + std::to_string(id);
    return s;
  };
  const std::string pair = "--clean-ids '" + ids(prompts["clean"]) + "' --corrupted-ids '" + ids(prompts["corrupted"]) +
                           "' --answer '#" + std::to_string(int(prompts["answer"])) + "' --wrong '#" +
                           std::to_string(int(prompts["wrong"])) + "'";
  CommandResult r = patch_stdout(pair + " --method attribution --what z_by_pos --format json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["method"], "attribution");
  const auto& want = expected["attribution_patch"]["z_by_pos"];
  ASSERT_EQ(j["values"].size(), want.size());
  for (std::size_t l = 0; l < want.size(); l++)
    for (std::size_t p = 0; p < want[l].size(); p++)
      for (std::size_t h = 0; h < want[l][p].size(); h++)
        EXPECT_NEAR(double(j["values"][l][p][h]), double(want[l][p][h]),
                    1e-4 * std::max(1.0, std::fabs(double(want[l][p][h]))));
  CommandResult q = patch(pair + " --method attribution --what pattern_all_pos --layers 9");
  EXPECT_EQ(q.exit_code, 2);
  EXPECT_NE(q.out.find("layer 9"), std::string::npos) << q.out;
  CommandResult path = patch(pair + " --method attribution --path");
  EXPECT_EQ(path.exit_code, 2);
  EXPECT_NE(path.out.find("--path"), std::string::npos) << path.out;
  CommandResult table = patch(pair + " --method attribution --what resid_pre --positions 6");
  EXPECT_EQ(table.exit_code, 0) << table.out;
  EXPECT_NE(table.out.find("Attribution patching (each value a first-order estimate"), std::string::npos) << table.out;
}
