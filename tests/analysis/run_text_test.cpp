// Tests for analysis/run_text.h on the committed built-in model (models/headlab-tiny): the
// BOS rule, the length limit, and a run's views and next-token outcome.
#include "analysis/run_text.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "formats/hf/checkpoint.h"
#include "formats/model_files.h"

using namespace headlab;
using namespace headlab::analysis;

namespace {

const std::string kModel = std::string(HEADLAB_SOURCE_DIR) + "/models/headlab-tiny";

struct BuiltIn {
  model::Parameters params;
  model::BpeTokenizer tokenizer;
};

const BuiltIn& built_in() {
  static const BuiltIn m = [] {
    auto p = model::model_load(kModel);
    auto t = model::model_tokenizer_load(kModel);
    if (!p || !t) throw std::runtime_error("cannot load " + kModel);
    return BuiltIn{std::move(*p), std::move(*t)};
  }();
  return m;
}

std::string words(int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += " the";
  return s;
}

}  // namespace

TEST(RunInput, PutsTheBosTokenFirstByDefault) {
  const BuiltIn& m = built_in();
  auto in = run_input_from_text(m.tokenizer, m.params.config, "the mat", RunInputOptions{});
  ASSERT_TRUE(in) << in.error().message;
  ASSERT_EQ(in->tokens.size(), 3u);
  EXPECT_EQ(in->tokens[0].id, m.params.config.bos_token_id);
  EXPECT_EQ(in->tokens[0].text, "<|endoftext|>");
  EXPECT_EQ(in->tokens[1].text, "the");
  EXPECT_FALSE(in->truncated);
}

TEST(RunInput, LeavesBosOutWhenAsked) {
  const BuiltIn& m = built_in();
  RunInputOptions o;
  o.bos = false;
  auto in = run_input_from_text(m.tokenizer, m.params.config, "the mat", o);
  ASSERT_TRUE(in);
  EXPECT_EQ(in->tokens.size(), 2u);
  EXPECT_EQ(in->tokens[0].text, "the");
}

// The default follows the family (TransformerLens's default_prepend_bos); the caller overrides.
TEST(RunInput, BosDefaultIsTheFamilysOffForGptNeoxAndQwenOnForTheOthers) {
  model::ModelConfig c = built_in().params.config;
  for (const char* family : {"gpt_neox", "qwen2", "qwen3"}) {
    c.family = family;
    auto in = run_input_from_ids(nullptr, c, {1, 2}, RunInputOptions{});
    ASSERT_TRUE(in) << in.error().message;
    EXPECT_EQ(in->ids(), (std::vector<int>{1, 2})) << family;
    RunInputOptions on;
    on.bos = true;
    auto with = run_input_from_ids(nullptr, c, {1, 2}, on);
    ASSERT_TRUE(with);
    EXPECT_EQ(with->ids(), (std::vector<int>{c.bos_token_id, 1, 2})) << family;
  }
  for (const char* family : {"gpt2", "llama", "mistral", "gemma2", "gemma3"}) {
    c.family = family;
    auto in = run_input_from_ids(nullptr, c, {1, 2}, RunInputOptions{});
    ASSERT_TRUE(in) << in.error().message;
    EXPECT_EQ(in->ids(), (std::vector<int>{c.bos_token_id, 1, 2})) << family;
  }
}

TEST(RunInput, RefusesAnIdOutsideTheVocabularyNamingIt) {
  const BuiltIn& m = built_in();
  const int V = m.params.config.vocab_size;
  for (int bad : {V, -1}) {
    auto in = run_input_from_ids(&m.tokenizer, m.params.config, {1, bad}, RunInputOptions{});
    ASSERT_FALSE(in) << bad;
    EXPECT_EQ(in.error().code, ErrorCode::invalid_argument);
    EXPECT_NE(in.error().message.find("token id " + std::to_string(bad) + " is outside the vocabulary [0, " +
                                      std::to_string(V) + ")"),
              std::string::npos)
        << in.error().message;
  }
}

TEST(RunInput, RefusesALongerTextNamingTheLimitAndTheWayToTruncate) {
  const BuiltIn& m = built_in();
  RunInputOptions o;
  o.max_tokens = 8;
  o.truncate_hint = "pass --truncate";
  auto in = run_input_from_text(m.tokenizer, m.params.config, words(10), o);
  ASSERT_FALSE(in);
  EXPECT_EQ(in.error().code, ErrorCode::too_long);
  EXPECT_NE(in.error().message.find("more than the model's n_ctx (8); pass --truncate to keep the last 8"),
            std::string::npos)
      << in.error().message;
}

TEST(RunInput, TruncatingKeepsBosAndTheLastTokens) {
  const BuiltIn& m = built_in();
  RunInputOptions o;
  o.max_tokens = 8;
  o.truncate = true;
  auto in = run_input_from_ids(&m.tokenizer, m.params.config, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, o);
  ASSERT_TRUE(in);
  EXPECT_TRUE(in->truncated);
  EXPECT_EQ(in->ids(), (std::vector<int>{m.params.config.bos_token_id, 4, 5, 6, 7, 8, 9, 10}));
}

TEST(RunInput, RefusesAnEmptyText) {
  const BuiltIn& m = built_in();
  auto in = run_input_from_text(m.tokenizer, m.params.config, "", RunInputOptions{});
  ASSERT_FALSE(in);
  EXPECT_EQ(in.error().code, ErrorCode::invalid_argument);
}

TEST(RunModel, GivesTheChosenHeadsViewsAndTheForwardsLoss) {
  const BuiltIn& m = built_in();
  auto in = run_input_from_text(m.tokenizer, m.params.config, "the cat sat on the mat", RunInputOptions{});
  ASSERT_TRUE(in);
  const std::vector<int> ids = in->ids();
  const int T = static_cast<int>(ids.size());
  RunRequest rq;
  rq.heads = {{1, 2}, {0, 3}};
  rq.views = {true, true, true, true};
  rq.top_k = 4;
  model::Workspace ws;
  auto r = run_model(m.params, &m.tokenizer, ids, rq, ws);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->heads.size(), 2u);
  EXPECT_EQ(r->heads[0].layer, 1);
  EXPECT_EQ(r->heads[0].head, 2);
  const std::size_t P = model::ActivationRecord::packed_size(T);
  EXPECT_EQ(r->heads[1].pattern.size(), P);
  EXPECT_EQ(r->heads[1].value_weighted.size(), P);
  EXPECT_EQ(r->heads[1].scores.size(), P);
  EXPECT_EQ(r->rollout.size(), P);
  ASSERT_EQ(r->outcome.top_next.size(), std::size_t(T));
  EXPECT_EQ(r->outcome.top_next[0].size(), 4u);
  ASSERT_EQ(r->outcome.token_loss.size(), std::size_t(T - 1));
  // the same loss as the forward's own
  model::ForwardOptions opt;
  opt.loss = true;
  model::ForwardOutput out;
  ASSERT_TRUE(model::forward(m.params, ids, opt, out, ws));
  EXPECT_NEAR(r->outcome.loss, out.loss, 1e-5);
  EXPECT_TRUE(r->logits.empty());
}

TEST(RunModel, CutsEachViewWithTheCallersKeep) {
  const BuiltIn& m = built_in();
  const std::vector<int> ids = {4095, 5, 6, 7};
  RunRequest rq;
  rq.heads = {{0, 0}};
  rq.keep = [](const float* packed) { return std::vector<float>(packed + 1, packed + 3); };  // row 1
  model::Workspace ws;
  auto r = run_model(m.params, nullptr, ids, rq, ws);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->heads[0].pattern.size(), 2u);
  EXPECT_NEAR(r->heads[0].pattern[0] + r->heads[0].pattern[1], 1.0, 1e-5);
  EXPECT_EQ(r->outcome.top_next[0][0].text, "");  // no tokenizer: no texts
}

TEST(RunModel, PredictsOnlyFromTheFirstPositionAsked) {
  const BuiltIn& m = built_in();
  const std::vector<int> ids = {4095, 5, 6, 7};
  RunRequest rq;
  rq.top_k = 2;
  rq.top_next_from = 3;
  model::Workspace ws;
  auto r = run_model(m.params, &m.tokenizer, ids, rq, ws);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->outcome.top_next.size(), 4u);
  EXPECT_TRUE(r->outcome.top_next[2].empty());
  EXPECT_EQ(r->outcome.top_next[3].size(), 2u);
  EXPECT_EQ(r->outcome.token_loss.size(), 3u);  // the losses stay for every position
}

TEST(RunModel, RefusesAHeadTheModelDoesNotHave) {
  const BuiltIn& m = built_in();
  RunRequest rq;
  rq.heads = {{0, 4}};
  model::Workspace ws;
  auto r = run_model(m.params, nullptr, std::vector<int>{1, 2}, rq, ws);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "head 4 does not exist: each layer has heads 0 to 3");
}
