// Tests for direct logit attribution (research/attribution.h): the parts add up to the logit
// difference on every family, the heads and biases add up to the attention output, and bad
// requests are refused by name.
#include <gtest/gtest.h>

#include <cmath>

#include "formats/model_files.h"
#include "research/attribution.h"
#include "research/text_measures.h"
#include "testing/model_fixtures.h"

using namespace headlab;
using namespace headlab::model;
using headlab::testing::load_fixture;

namespace {

const char* kDlaModels[] = {"gpt2_tiny",      "attn_only",       "families/pythia", "families/llama",
                         "families/llama3", "families/mistral", "families/mistral_window", "families/qwen2",
                         "families/qwen3",  "families/gemma2",  "families/gemma3"};

std::vector<int> dla_ids(const Parameters& p, int T) {
  std::vector<int> ids(std::size_t(T), 0);
  for (int t = 0; t < T; t++) ids[std::size_t(t)] = (7 * t + 3) % p.config.vocab_size;
  return ids;
}

void expect_parts_add_up(const Parameters& p, const std::vector<int>& ids, int answer, int wrong, int position) {
  Workspace ws;
  research::AttributionRequest rq;
  rq.answer = answer, rq.wrong = wrong, rq.position = position;
  auto a = research::direct_logit_attribution(p, ids, rq, ws);
  ASSERT_TRUE(a) << a.error().message;
  double sum = 0, scale = 0;
  for (const research::AttributionPart& part : a->parts) sum += part.value, scale += std::fabs(part.value);
  EXPECT_NEAR(sum, a->sum, 1e-4 * (1 + scale));
  // the parts add up to ln_final(resid) . d (no unembedding bias in any family: b_U's difference is 0)
  EXPECT_NEAR(a->sum, a->logit_diff_uncapped, 1e-4 * (1 + scale));
  // and, without Gemma 2's soft-cap (its own test below), to the model's own logit difference
  if (p.config.final_softcap == 0) {
    EXPECT_NEAR(a->sum, a->logit_diff, 1e-4 * (1 + scale));
  }
}

}  // namespace

TEST(DirectLogitAttribution, ThePartsAddUpToTheLogitDifferenceOnEveryFamily) {
  for (const char* name : kDlaModels) {
    SCOPED_TRACE(name);
    Parameters p = load_fixture(name, "model.safetensors");
    const std::vector<int> ids = dla_ids(p, 7);
    expect_parts_add_up(p, ids, 5, 9, -1);
    expect_parts_add_up(p, ids, 11, -1, 3);  // one token's logit, an earlier position
  }
}

TEST(DirectLogitAttribution, ThePartsAddUpOnTheBuiltInModel) {
  auto p = model_load(std::string(HEADLAB_SOURCE_DIR) + "/models/headlab-tiny");
  ASSERT_TRUE(p) << p.error().message;
  std::vector<int> ids = {4095, 812, 1999, 77, 3021, 812, 1999};
  expect_parts_add_up(*p, ids, 77, 3021, -1);
}

TEST(DirectLogitAttribution, TheGemma2SoftCapIsTheOnlyDifferenceFromTheModelsLogits) {
  Parameters p = load_fixture("families/gemma2", "model.safetensors");
  ASSERT_GT(p.config.final_softcap, 0.0f);
  Workspace ws;
  research::AttributionRequest rq;
  rq.answer = 5;  // one logit: cap * tanh(uncapped / cap) is the model's
  auto a = research::direct_logit_attribution(p, dla_ids(p, 5), rq, ws);
  ASSERT_TRUE(a) << a.error().message;
  const double cap = p.config.final_softcap;
  EXPECT_NEAR(a->logit_diff, cap * std::tanh(a->sum / cap), 1e-4);
}

TEST(DirectLogitAttribution, ComponentsFollowTransformerLensOrderAndNames) {
  Parameters gpt2 = load_fixture("gpt2_tiny", "model.safetensors");
  Workspace ws;
  research::AttributionRequest rq;
  rq.answer = 1, rq.wrong = 2;
  auto a = research::direct_logit_attribution(gpt2, dla_ids(gpt2, 4), rq, ws);
  ASSERT_TRUE(a);
  std::vector<std::string> labels;
  for (auto& part : a->parts) labels.push_back(part.label);
  EXPECT_EQ(labels, (std::vector<std::string>{"embed", "pos_embed", "L0H0", "L0H1", "0_attn_bias", "0_mlp_out", "L1H0",
                                              "L1H1", "1_attn_bias", "1_mlp_out", "ln_final.b"}));
  // Gemma: the post-attention norm makes attn_out the part; RMSNorm has no final bias
  Parameters gemma = load_fixture("families/gemma2", "model.safetensors");
  a = research::direct_logit_attribution(gemma, dla_ids(gemma, 4), rq, ws);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->parts[1].label, "0_attn_out");
  EXPECT_EQ(a->parts.back().label, std::to_string(gemma.config.n_layer - 1) + "_mlp_out");
}

TEST(DirectLogitAttribution, BadRequestsAreRefusedByName) {
  Parameters p = load_fixture("gpt2_tiny", "model.safetensors");
  Workspace ws;
  const std::vector<int> ids = {1, 2, 3};
  auto refuse = [&](int answer, int wrong, int pos, const std::string& says) {
    research::AttributionRequest rq;
    rq.answer = answer, rq.wrong = wrong, rq.position = pos;
    auto a = research::direct_logit_attribution(p, ids, rq, ws);
    ASSERT_FALSE(a);
    EXPECT_EQ(a.error().code, ErrorCode::invalid_argument);
    EXPECT_NE(a.error().message.find(says), std::string::npos) << a.error().message;
  };
  refuse(64, 1, -1, "answer token 64 is outside the vocabulary");
  refuse(-1, 1, -1, "answer token -1");
  refuse(1, 64, -1, "wrong token 64");
  refuse(1, 1, -1, "the same token");
  refuse(1, 2, 3, "position 3 is outside the input (positions 0..2, or -1..-3 from the end)");
  refuse(1, 2, -4, "position -4 is outside the input");
  research::AttributionRequest rq;
  // a negative position counts from the end, as Python's indices (every negative was the last)
  rq.answer = 1, rq.wrong = 2, rq.position = -2;
  auto second_last = research::direct_logit_attribution(p, ids, rq, ws);
  ASSERT_TRUE(second_last) << second_last.error().message;
  EXPECT_EQ(second_last->position, 1);
  rq = {};
  rq.answer = 1;
  EXPECT_FALSE(research::direct_logit_attribution(p, std::vector<int>{}, rq, ws));
}

TEST(DirectLogitAttributionBatch, EachPromptIsReadAtItsOwnLastPositionAndThePartsAreAveraged) {
  auto p = model_load(std::string(HEADLAB_SOURCE_DIR) + "/models/headlab-tiny");
  ASSERT_TRUE(p) << p.error().message;
  auto tok = model_tokenizer_load(std::string(HEADLAB_SOURCE_DIR) + "/models/headlab-tiny");
  ASSERT_TRUE(tok) << tok.error().message;
  research::AttributionBatchRequest rq;
  rq.prompts = {{"the old man sat by the river. the old man sat", "", " by", " the", 1},
                {"the river", "", "#77", "", 2},  // shorter: no padding, its own last position
                {"a house by the sea", "", "", "", 3}};
  rq.answer = " the";  // for the line without one
  Workspace ws;
  auto b = research::direct_logit_attribution_batch(*p, &*tok, rq, ws);
  ASSERT_TRUE(b) << b.error().message;
  ASSERT_EQ(b->each.size(), 3u);
  double mean_diff = 0;
  for (int k = 0; k < 3; k++) {
    research::AttributionTextRequest one;
    one.prompt.text = rq.prompts[k].clean;
    one.answer = rq.prompts[k].answer.empty() ? rq.answer : rq.prompts[k].answer;
    one.wrong = rq.prompts[k].answer.empty() ? rq.wrong : rq.prompts[k].wrong;
    auto a = research::direct_logit_attribution_text(*p, &*tok, one, ws);
    ASSERT_TRUE(a) << a.error().message;
    EXPECT_EQ(b->each[k].attribution.position, int(a->input.tokens.size()) - 1);
    EXPECT_EQ(b->each[k].attribution.logit_diff, a->attribution.logit_diff);
    mean_diff += a->attribution.logit_diff / 3;
  }
  EXPECT_NEAR(b->mean_logit_diff, mean_diff, 1e-5);
  double sum = 0;
  for (double v : b->mean) sum += v;
  EXPECT_NEAR(sum, b->mean_logit_diff_uncapped, 1e-4);
  rq.answer = "";
  auto bad = research::direct_logit_attribution_batch(*p, &*tok, rq, ws);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("prompt 3 (line 3): no answer"), std::string::npos) << bad.error().message;
}
