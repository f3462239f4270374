#include "train/bpe_trainer.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "model/bpe_tokenizer.h"

using namespace headlab;
using namespace headlab::train;

namespace {
std::vector<std::string> pieces(std::string_view text) {
  std::vector<std::string> out;
  for (auto p : pretokenize(text)) out.emplace_back(p);
  return out;
}
const std::string kText =
    "the cat sat on the mat. the cat sat on the hat. the dog sat on the cat.\n"
    "The cat's hat is the cat's; they'll say we've seen 1990 cats.\n\n  the end";
}  // namespace

TEST(BpePretokenize, FollowsGpt2Rule) {
  EXPECT_EQ(pieces("Hello world"), (std::vector<std::string>{"Hello", " world"}));
  EXPECT_EQ(pieces("don't we'll"), (std::vector<std::string>{"don", "'t", " we", "'ll"}));
  EXPECT_EQ(pieces("in 1990, ok"), (std::vector<std::string>{"in", " 1990", ",", " ok"}));
  // a run of spaces leaves its last one to the next word
  EXPECT_EQ(pieces("a   b"), (std::vector<std::string>{"a", "  ", " b"}));
  EXPECT_EQ(pieces("a\n\nThe"), (std::vector<std::string>{"a", "\n", "\n", "The"}));
  EXPECT_EQ(pieces("end  "), (std::vector<std::string>{"end", "  "}));
  EXPECT_EQ(pieces("caf\xC3\xA9 ok"), (std::vector<std::string>{"caf\xC3\xA9", " ok"}));
}

TEST(BpePretokenize, PiecesCoverTheTextExactly) {
  std::string joined;
  for (auto p : pretokenize(kText)) joined += p;
  EXPECT_EQ(joined, kText);
}

TEST(ByteToUnicode, MatchesGpt2Table) {
  EXPECT_EQ(byte_to_unicode('a'), "a");
  EXPECT_EQ(byte_to_unicode(' '), "\xC4\xA0");   // Ġ
  EXPECT_EQ(byte_to_unicode('\n'), "\xC4\x8A");  // Ċ
  EXPECT_EQ(byte_id_order()[0], '!');
  EXPECT_EQ(byte_id_order()[188], 0);  // GPT-2's vocab.json: "\u0100" is id 188
}

TEST(BpeTrain, LearnsWholeFrequentWords) {
  BpeTrainOptions o;
  o.vocab_size = 300;
  auto v = bpe_train({kText}, o);
  ASSERT_TRUE(v);
  EXPECT_LE(static_cast<int>(v->tokens.size()), 300);
  EXPECT_EQ(v->tokens.back(), "<|endoftext|>");
  bool has_the = false, has_cat = false;
  for (const auto& t : v->tokens) {
    has_the |= t == " the";
    has_cat |= t == " cat";
  }
  EXPECT_TRUE(has_the);
  EXPECT_TRUE(has_cat);
  // the most frequent pair comes first: " t" + "he" or similar pieces of " the"
  const auto& m0 = v->merges[0];
  EXPECT_EQ(v->tokens[m0.result], v->tokens[m0.left] + v->tokens[m0.right]);
}

TEST(BpeTrain, IsDeterministic) {
  BpeTrainOptions o;
  o.vocab_size = 280;
  auto a = bpe_train({kText}, o);
  auto b = bpe_train({kText}, o);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->tokens, b->tokens);
}

TEST(BpeTrain, StopsWhenNoPairRepeats) {
  BpeTrainOptions o;
  o.vocab_size = 5000;
  auto v = bpe_train({"abcdefg"}, o);  // every pair seen once: below min_frequency 2
  ASSERT_TRUE(v);
  EXPECT_EQ(v->tokens.size(), 257u);
}

TEST(BpeTrain, RejectsEmptyTextAndTinyVocabulary) {
  BpeTrainOptions o;
  auto empty = bpe_train({""}, o);
  ASSERT_FALSE(empty);
  EXPECT_EQ(empty.error().code, ErrorCode::invalid_argument);
  o.vocab_size = 100;
  auto tiny = bpe_train({kText}, o);
  ASSERT_FALSE(tiny);
  EXPECT_EQ(tiny.error().code, ErrorCode::invalid_argument);
}

TEST(BpeEncoder, RoundTripsAndUsesTheMerges) {
  BpeTrainOptions o;
  o.vocab_size = 320;
  auto v = bpe_train({kText}, o);
  ASSERT_TRUE(v);
  BpeEncoder enc(*v);
  const std::string probe = "the cat sat on the mat, caf\xC3\xA9 \xF0\x9F\x98\x80!";
  std::vector<int> ids = enc.encode(probe);
  std::string back;
  for (int id : ids) back += v->tokens[id];
  EXPECT_EQ(back, probe);
  EXPECT_EQ(enc.encode(" the cat sat").size(), 3u);  // frequent words became single tokens
}

TEST(BpeSave, WritesGpt2Files) {
  BpeTrainOptions o;
  o.vocab_size = 300;
  auto v = bpe_train({kText}, o);
  ASSERT_TRUE(v);
  auto dir = std::filesystem::temp_directory_path() / "headlab_bpe_save_test";
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(bpe_save(*v, dir.string()));
  std::ifstream vf(dir / "vocab.json");
  auto vocab = nlohmann::json::parse(vf);
  EXPECT_EQ(vocab.size(), v->tokens.size());
  EXPECT_EQ(vocab["!"], 0);
  EXPECT_EQ(vocab["<|endoftext|>"], v->end_of_text_id());
  EXPECT_EQ(vocab["\xC4\xA0the"], [&] {
    for (int i = 0; i < (int)v->tokens.size(); ++i)
      if (v->tokens[i] == " the") return i;
    return -1;
  }());
  std::ifstream mf(dir / "merges.txt");
  std::string first;
  std::getline(mf, first);
  EXPECT_EQ(first, "#version: 0.2");
  int lines = 0;
  for (std::string line; std::getline(mf, line);) ++lines;
  EXPECT_EQ(lines, static_cast<int>(v->merges.size()));
  std::filesystem::remove_all(dir);
}

TEST(BpeSave, ReportsUnwritableDirectory) {
  BpeVocabulary v;
  v.tokens = {"a", "<|endoftext|>"};
  auto s = bpe_save(v, "/proc/headlab_cannot_write_here");
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, ErrorCode::io_error);
}

// The files headlab trains load in the engine's GPT-2 tokenizer, which then splits text
// into exactly the ids the trainer's encoder gave (the model sees what it was trained on).
TEST(BpeSave, EngineTokenizerEncodesLikeTheTrainer) {
  const std::string dir = std::string(HEADLAB_SOURCE_DIR) + "/models/headlab-tiny";
  auto vocab = bpe_load(dir);
  ASSERT_TRUE(vocab) << vocab.error().message;
  EXPECT_EQ(vocab->tokens.size(), 4096u);
  auto engine = headlab::model::BpeTokenizer::load(dir);
  ASSERT_TRUE(engine) << engine.error().message;
  EXPECT_EQ(engine->vocab_size(), 4096);
  EXPECT_EQ(engine->endoftext_id(), 4095);
  BpeEncoder ours(*vocab);
  const std::string text =
      "ABSURDITY, n. A statement or belief manifestly inconsistent with one's own opinion.\n\n"
      "  The cat sat on the mat -- didn't it? 1,234.5 dollars; caf\xC3\xA9, na\xC3\xAFve, \xE2\x80\x9Cquoted\xE2\x80\x9D "
      "\xF0\x9F\x98\x80 \xE4\xB8\xAD\xE6\x96\x87\ttabs\r\nend";
  auto ids = engine->encode_ids(text);
  ASSERT_TRUE(ids);
  EXPECT_EQ(ours.encode(text), *ids);
}
