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

// Real tokenizers (Llama 3, Qwen 3, Llama 2, Gemma 3) written as GGUF metadata and read back:
// gguf_tokenizer_export_test.cpp, against llama.cpp's own reading of the same files.

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
