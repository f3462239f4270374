// Tests for `headlab cache` and `headlab intervene` (src/cli/cache_command.cpp,
// intervene_command.cpp): the binary on the built-in model, as a user runs it.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "formats/safetensors.h"
#include "testing/process.h"

using headlab::testing::headlab_run;

namespace {

const std::string kTinyModel = std::string(HEADLAB_SOURCE_DIR) + "/models/headlab-tiny";

std::string research_tmp(const std::string& name) {
  return std::string(HEADLAB_BINARY_DIR) + "/tmp_cache_cli_" + std::to_string(::getpid()) + "_" + name;
}

}  // namespace

TEST(CacheCommand, WritesTheAskedHooksUnderTheirNamesAndSaysWhatItWrote) {
  const std::string out = research_tmp("a.safetensors");
  auto r = headlab_run("cache --model " + kTinyModel + " --text 'the cat sat' --hooks 'blocks.*.attn.hook_pattern,hook_embed' --out " +
                       out + " --format json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["tensors"].size(), 3u);
  EXPECT_EQ(j["tensors"][0]["name"], "hook_embed");
  EXPECT_EQ(j["tensors"][1]["name"], "blocks.0.attn.hook_pattern");
  const int T = j["T"];
  EXPECT_EQ(j["tensors"][2]["shape"], nlohmann::json({1, 4, T, T}));
  auto file = headlab::model::safetensors_read(out);
  ASSERT_TRUE(file) << file.error().message;
  EXPECT_EQ(file->tensors.size(), 3u);
  EXPECT_EQ(nlohmann::json::parse(file->metadata.at("tokens")), j["tokens"]);
  EXPECT_EQ(file->metadata.at("model"), "headlab-tiny");
  EXPECT_EQ(j["tokens"][0][0], 4095);  // BOS first: GPT-2's rule
  std::remove(out.c_str());

  r = headlab_run("cache --model " + kTinyModel + " --text 'the cat sat' --hooks 'blocks.1.*' --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("blocks.1.attn.hook_z"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("MB"), std::string::npos) << r.out;
  std::remove(out.c_str());
}

TEST(CacheCommand, GivenIdsGetNoBosAndAPromptsFileIsPaddedToTheLongest) {
  const std::string out = research_tmp("b.safetensors"), prompts = research_tmp("prompts.txt");
  auto r = headlab_run("cache --model " + kTinyModel + " --ids 1911,272,266 --hooks hook_embed --out " + out + " --format json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(nlohmann::json::parse(r.out)["tokens"], nlohmann::json({{1911, 272, 266}}));
  std::ofstream(prompts) << "the cat\n{\"clean\": \"the cat sat on the mat\"}\n";
  r = headlab_run("cache --model " + kTinyModel + " --prompts " + prompts + " --hooks 'blocks.0.hook_resid_pre' --out " + out +
                  " --format csv");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto file = headlab::model::safetensors_read(out);
  ASSERT_TRUE(file) << file.error().message;
  auto lengths = nlohmann::json::parse(file->metadata.at("lengths"));
  ASSERT_EQ(lengths.size(), 2u);
  const std::int64_t longest = std::max(lengths[0].get<std::int64_t>(), lengths[1].get<std::int64_t>());
  EXPECT_EQ(file->tensors[0].shape, (std::vector<std::int64_t>{2, longest, 128}));
  EXPECT_NE(r.out.find("blocks.0.hook_resid_pre,2x"), std::string::npos) << r.out;
  std::remove(out.c_str());
  std::remove(prompts.c_str());
}

TEST(CacheCommand, BadHooksAndTooLargeCachesAreUsageErrorsThatSayWhy) {
  const std::string out = research_tmp("c.safetensors");
  auto r = headlab_run("cache --model " + kTinyModel + " --text 'the cat' --hooks blocks.0.attn.hook_patern --out " + out);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("Did you mean blocks.0.attn.hook_pattern?"), std::string::npos) << r.out;
  r = headlab_run("cache --model " + kTinyModel + " --text 'the cat' --hooks 'blocks.*.hook_resid_mid' --out " + out);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("attention-only"), std::string::npos) << r.out;
  std::string long_text;
  for (int i = 0; i < 30; i++) long_text += "the cat ";
  r = headlab_run("cache --model " + kTinyModel + " --text '" + long_text + "' --hooks '*' --max-mb 1 --out " + out);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("more than the budget"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--max-mb"), std::string::npos) << r.out;
  r = headlab_run("cache --model " + kTinyModel + " --text '" + long_text + long_text + "' --hooks hook_embed --out " + out);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("--truncate"), std::string::npos) << r.out;
  r = headlab_run("cache --model " + kTinyModel + " --text 'a' --ids 1 --hooks '*' --out " + out);
  EXPECT_EQ(r.exit_code, 2);
  r = headlab_run("cache --model " + kTinyModel + " --text 'a' --hooks '*' --out /nonexistent-dir/x.safetensors");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("headlab: error:"), std::string::npos) << r.out;
}

TEST(InterveneCommand, PrintsTheLossChangeAndBothPredictionsWithTheApisJson) {
  auto r = headlab_run("intervene --model " + kTinyModel + " --text 'the cat sat on the mat. the cat' --ablate 1.2 --format json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  const double change = j["intervened"]["loss"].get<double>() - j["baseline"]["loss"].get<double>();
  EXPECT_NEAR(j["loss_change"].get<double>(), change, 2e-5);
  EXPECT_NE(change, 0.0);
  r = headlab_run("intervene --model " + kTinyModel + " --text 'the cat sat on the mat. the cat' --ablate 1.2");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("Loss (mean next-token cross-entropy)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("intervened"), std::string::npos) << r.out;
}

TEST(InterveneCommand, AZeroSteeringVectorChangesNothingAndActAddChangesTheLoss) {
  const std::string zero = research_tmp("zero.json");
  {
    std::ofstream f(zero);
    f << "[";
    for (int i = 0; i < 128; i++) f << (i ? ", " : "") << "0";
    f << "]";
  }
  auto r = headlab_run("intervene --model " + kTinyModel + " --text 'the cat sat on the mat' --steer 1:5:" + zero + " --format json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["loss_change"], 0.0);
  EXPECT_EQ(j["baseline"], j["intervened"]);
  r = headlab_run("intervene --model " + kTinyModel + " --text 'the cat sat on the mat' --steer-prompts '1:4:the dog:the cat' --format csv");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out.rfind("run,loss,rank,id,token,prob,logit\n", 0), 0u) << r.out;
  std::remove(zero.c_str());
}

TEST(InterveneCommand, BadSteeringAndHeadsAreRefusedByNameNeverACrash) {
  const std::string nan = research_tmp("nan.json"), short_file = research_tmp("short.f32");
  {
    std::ofstream f(nan);
    f << "[NaN";
    for (int i = 1; i < 128; i++) f << ", 0";
    f << "]";
  }
  std::ofstream(short_file, std::ios::binary) << "abcd";
  const std::string text = " --model " + kTinyModel + " --text 'the cat sat'";
  const std::vector<std::string> bads = {"--steer 1:2:" + nan, "--steer 1:2:" + short_file, "--steer 1:inf:" + short_file,
                                         "--steer 9:2:" + short_file, "--steer 1:2", "--steer 1:2:/nonexistent.f32",
                                         "--steer-prompts '1:2:only one text'", "--steer-prompts 7:2:a:b", "--ablate 1",
                                         "--ablate 1.9", "--ablate 1.2:max", "--block 1.2", "--replace 0.0:random", ""};
  for (const std::string& bad : bads) {
    auto r = headlab_run("intervene" + text + " " + bad);
    EXPECT_TRUE(r.exit_code == 1 || r.exit_code == 2) << bad << ": " << r.out;
    EXPECT_NE(r.out.find("headlab: error:"), std::string::npos) << bad << ": " << r.out;
  }
  std::remove(nan.c_str());
  std::remove(short_file.c_str());
}

TEST(RunCommand, SteersWithTheSameOptionsAsIntervene) {
  const std::string zero = research_tmp("run_zero.json"), ones = research_tmp("run_v.json");
  {
    std::ofstream z(zero), o(ones);
    z << "[";
    o << "[";
    for (int i = 0; i < 128; i++) {
      z << (i ? ", " : "") << "0";
      o << (i ? ", " : "") << (i % 3 == 0 ? "0.9" : "-0.4");  // not constant: LayerNorm removes a constant
    }
    z << "]";
    o << "]";
  }
  const std::string run = "run --model " + kTinyModel + " --text 'the cat sat on the mat' --format json --layer 1 --head 2";
  auto plain = headlab_run(run);
  ASSERT_EQ(plain.exit_code, 0) << plain.out;
  auto same = headlab_run(run + " --steer 1:3:" + zero);
  ASSERT_EQ(same.exit_code, 0) << same.out;
  EXPECT_EQ(same.out, plain.out);
  auto steered = headlab_run(run + " --steer 1:3:" + ones);
  ASSERT_EQ(steered.exit_code, 0) << steered.out;
  auto a = nlohmann::json::parse(plain.out), b = nlohmann::json::parse(steered.out);
  EXPECT_NE(a["loss"], b["loss"]);
  EXPECT_NE(a["heads"][0]["pattern"], b["heads"][0]["pattern"]);  // layer 1's pattern reads the steered resid_pre
  // the loss of intervene's steered run is run's
  auto iv = headlab_run("intervene --model " + kTinyModel + " --text 'the cat sat on the mat' --format json --steer 1:3:" + ones);
  ASSERT_EQ(iv.exit_code, 0) << iv.out;
  EXPECT_EQ(nlohmann::json::parse(iv.out)["intervened"]["loss"], b["loss"]);
  auto bad = headlab_run(run + " --steer 1:3");
  EXPECT_EQ(bad.exit_code, 2) << bad.out;
  std::remove(zero.c_str());
  std::remove(ones.c_str());
}

TEST(CacheCommand, SteersWithTheSameOptionsAsRunKeepingTheSteeredResidPre) {
  const std::string zero = research_tmp("cache_zero.json"), ones = research_tmp("cache_v.json");
  std::vector<float> v;
  {
    std::ofstream z(zero), o(ones);
    z << "[";
    o << "[";
    for (int i = 0; i < 128; i++) {
      v.push_back(i % 3 == 0 ? 0.9f : -0.4f);
      z << (i ? ", " : "") << "0";
      o << (i ? ", " : "") << (i % 3 == 0 ? "0.9" : "-0.4");
    }
    z << "]";
    o << "]";
  }
  const std::string out = research_tmp("steer.safetensors");
  const std::string cache = "cache --model " + kTinyModel + " --text 'the cat sat on the mat' --hooks 'blocks.*.hook_resid_pre' --out " + out;
  auto values = [&](const std::string& name) {
    auto f = headlab::model::safetensors_read(out);
    EXPECT_TRUE(f) << f.error().message;
    const auto* t = f->find(name);
    std::vector<float> w(t->numel());
    EXPECT_TRUE(headlab::model::safetensors_to_f32(*f, *t, w.data()));
    return w;
  };
  ASSERT_EQ(headlab_run(cache).exit_code, 0);
  const std::vector<float> plain0 = values("blocks.0.hook_resid_pre"), plain1 = values("blocks.1.hook_resid_pre");
  ASSERT_EQ(headlab_run(cache + " --steer 1:3:" + zero).exit_code, 0);
  EXPECT_EQ(values("blocks.1.hook_resid_pre"), plain1);
  auto r = headlab_run(cache + " --steer 1:3:" + ones + " --steer-from 2");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(values("blocks.0.hook_resid_pre"), plain0);  // before the steering
  const std::vector<float> steered1 = values("blocks.1.hook_resid_pre");
  ASSERT_EQ(steered1.size(), plain1.size());
  for (std::size_t i = 0; i < plain1.size(); i++)
    ASSERT_EQ(steered1[i], i < 2 * 128 ? plain1[i] : plain1[i] + 3.0f * v[i % 128]) << i;
  r = headlab_run(cache + " --steer-prompts '1:4:the dog:the cat'");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(values("blocks.1.hook_resid_pre"), plain1);
  r = headlab_run(cache + " --steer 1:3");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("--steer 1:3: expected L:COEF:FILE"), std::string::npos) << r.out;
  std::remove(zero.c_str());
  std::remove(ones.c_str());
  std::remove(out.c_str());
}

TEST(CacheCommand, EveryFamilysEveryHookFromAFolderOrAGgufFile) {
  const std::string fixtures = std::string(HEADLAB_SOURCE_DIR) + "/tests/fixtures/";
  for (const std::string& model : {fixtures + "model/families/pythia", fixtures + "model/families/llama",
                                   fixtures + "model/families/mistral_window", fixtures + "model/families/qwen3",
                                   fixtures + "model/families/gemma2", fixtures + "model/families/gemma3",
                                   fixtures + "gguf/llama_random.q4_k_m.gguf", fixtures + "gguf/gemma3_random.q8_0.gguf"}) {
    SCOPED_TRACE(model);
    const std::string out = research_tmp("family.safetensors");
    auto r = headlab_run("cache --model " + model + " --ids 1,2,3,4,5 --hooks '*' --format json --out " + out);
    ASSERT_EQ(r.exit_code, 0) << r.out;
    auto j = nlohmann::json::parse(r.out.substr(r.out.find('{')));
    auto file = headlab::model::safetensors_read(out);
    ASSERT_TRUE(file) << file.error().message;
    EXPECT_EQ(file->tensors.size(), j["tensors"].size());
    EXPECT_GT(file->tensors.size(), 20u);
    for (const auto& t : j["tensors"]) EXPECT_EQ(t["shape"][0], 1) << t["name"];
    auto steer = headlab_run("intervene --model " + model + " --ids 1,2,3,4,5 --ablate 0.0 --format json");
    ASSERT_EQ(steer.exit_code, 0) << steer.out;
    std::remove(out.c_str());
  }
}
