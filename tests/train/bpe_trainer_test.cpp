// Tests for train/bpe_trainer.h: what bpe_train learns, saved and loaded back by the
// engine's model::BpeTokenizer, round-trips and encodes as the learned merges say. The
// pre-tokens are the engine's (split_pieces, itself checked against GPT-2's own encoder in
// tests/tokenizer/bpe_tokenizer_test.cpp); here a plain reference of GPT-2's bpe() over the
// learned merges, written in the test, gives the ids the tokenizer must give.
#include "formats/model_files.h"
#include "train/bpe_trainer.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/byte_alphabet.h"

using namespace headlab;
using namespace headlab::train;
namespace fs = std::filesystem;

namespace {

const std::string kText =
    "the cat sat on the mat. the cat sat on the hat. the dog sat on the cat.\n"
    "The cat's hat is the cat's; they'll say we've seen 1990 cats.\n\n  the end";

// GPT-2's bpe() on one pre-token, in the plainest form: bytes to ids, then merge the pair
// of lowest rank everywhere, until no pair has a rank.
std::vector<int> reference_bpe(const BpeVocabulary& v, std::string_view piece) {
  std::vector<int> byte_id(256);
  for (int id = 0; id < 256; ++id) byte_id[static_cast<unsigned char>(v.tokens[id][0])] = id;
  std::vector<int> s;
  for (unsigned char c : piece) s.push_back(byte_id[c]);
  for (;;) {
    int best = std::numeric_limits<int>::max();
    for (std::size_t k = 0; k + 1 < s.size(); ++k)
      for (int r = 0; r < static_cast<int>(v.merges.size()) && r < best; ++r)
        if (v.merges[r].left == s[k] && v.merges[r].right == s[k + 1]) best = r;
    if (best == std::numeric_limits<int>::max()) return s;
    std::vector<int> merged;
    for (std::size_t k = 0; k < s.size(); ++k) {
      if (k + 1 < s.size() && s[k] == v.merges[best].left && s[k + 1] == v.merges[best].right) {
        merged.push_back(v.merges[best].result);
        ++k;
      } else {
        merged.push_back(s[k]);
      }
    }
    s = std::move(merged);
  }
}

std::vector<int> reference_encode(const BpeVocabulary& v, std::string_view text) {
  std::vector<int> ids;
  for (auto [b, e] : model::BpeTokenizer::split_pieces(text)) {
    auto piece = reference_bpe(v, text.substr(b, e - b));
    ids.insert(ids.end(), piece.begin(), piece.end());
  }
  return ids;
}

// A scratch directory of this test's own, removed at the end.
struct ScratchDir {
  fs::path path;
  explicit ScratchDir(const std::string& name) : path(fs::temp_directory_path() / ("headlab_bpe_" + name + "_" + std::to_string(getpid()))) {
    fs::remove_all(path);
  }
  ~ScratchDir() { fs::remove_all(path); }
};

}  // namespace

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
  // each merge makes the token its two parts spell
  for (const auto& m : v->merges) EXPECT_EQ(v->tokens[m.result], v->tokens[m.left] + v->tokens[m.right]);
}

TEST(BpeTrain, StartsFromTheBytesInGpt2sIdOrder) {
  BpeTrainOptions o;
  o.vocab_size = 257;
  auto v = bpe_train({kText}, o);
  ASSERT_TRUE(v);
  ASSERT_EQ(v->tokens.size(), 257u);
  for (int id = 0; id < 256; ++id) EXPECT_EQ(v->tokens[id], std::string(1, static_cast<char>(model::byte_order()[id])));
}

// Every learned token lies inside one pre-token of the engine's exact rule: BPE never
// merges across the pieces the tokenizer will split text into at run time.
TEST(BpeTrain, NeverMergesAcrossTheEnginesPreTokens) {
  // Devanagari letters and digits (the approximate rule the trainer used to have took the
  // digits for letters, so "क१" became one piece), accents, curly quotes, a contraction
  std::string text;
  for (int i = 0; i < 20; ++i)
    text += "\xE0\xA4\x95\xE0\xA5\xA7 caf\xC3\xA9 \xE2\x80\x9Cok\xE2\x80\x9D it's x1 \n\n";
  BpeTrainOptions o;
  o.vocab_size = 400;
  auto v = bpe_train({text}, o);
  ASSERT_TRUE(v);
  EXPECT_GT(v->merges.size(), 10u);
  for (int id = 256; id < v->end_of_text_id(); ++id)
    EXPECT_EQ(model::BpeTokenizer::split_pieces(v->tokens[id]).size(), 1u) << "token '" << v->tokens[id] << "'";
  for (const auto& t : v->tokens) EXPECT_NE(t, "\xE0\xA4\x95\xE0\xA5\xA7");  // "क" + "१": a letter, then a number
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

TEST(BpeTrain, RejectsEmptyTextTinyVocabularyAndInvalidUtf8) {
  BpeTrainOptions o;
  auto empty = bpe_train({""}, o);
  ASSERT_FALSE(empty);
  EXPECT_EQ(empty.error().code, ErrorCode::invalid_argument);
  auto bad = bpe_train({"ok \xff"}, o);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, ErrorCode::invalid_argument);
  EXPECT_NE(bad.error().message.find("UTF-8 (byte 3)"), std::string::npos) << bad.error().message;
  o.vocab_size = 100;
  auto tiny = bpe_train({kText}, o);
  ASSERT_FALSE(tiny);
  EXPECT_EQ(tiny.error().code, ErrorCode::invalid_argument);
}

// Saved by bpe_save, loaded by the engine: the text comes back byte for byte, and the ids
// are the ones the learned merges give (the reference above).
TEST(BpeSave, EngineLoadsWhatWasLearnedAndEncodesAsTheMergesSay) {
  BpeTrainOptions o;
  o.vocab_size = 320;
  auto v = bpe_train({kText}, o);
  ASSERT_TRUE(v);
  ScratchDir dir("engine_loads");
  ASSERT_TRUE(bpe_save(*v, dir.path.string()));
  auto tok = model::model_tokenizer_load(dir.path.string());
  ASSERT_TRUE(tok) << tok.error().message;
  EXPECT_EQ(tok->vocab_size(), static_cast<int>(v->tokens.size()));
  EXPECT_EQ(tok->endoftext_id(), v->end_of_text_id());
  for (int id = 0; id < tok->vocab_size(); ++id) EXPECT_EQ(tok->token_bytes(id), v->tokens[id]) << "id " << id;
  const std::string probe = "the cat sat on the mat, caf\xC3\xA9 \xF0\x9F\x98\x80! they'll  see 1990\n";
  for (const std::string& text : {kText, probe}) {
    auto ids = tok->encode_ids(text);
    ASSERT_TRUE(ids) << ids.error().message;
    EXPECT_EQ(*ids, reference_encode(*v, text));
    auto back = tok->decode(*ids);
    ASSERT_TRUE(back);
    EXPECT_EQ(*back, text);
  }
  EXPECT_EQ(tok->encode_ids(" the cat sat")->size(), 3u);  // frequent words became single tokens
}

TEST(BpeSave, WritesGpt2Files) {
  BpeTrainOptions o;
  o.vocab_size = 300;
  auto v = bpe_train({kText}, o);
  ASSERT_TRUE(v);
  ScratchDir dir("save");
  ASSERT_TRUE(bpe_save(*v, dir.path.string()));
  std::ifstream vf(dir.path / "vocab.json");
  auto vocab = nlohmann::json::parse(vf);
  EXPECT_EQ(vocab.size(), v->tokens.size());
  EXPECT_EQ(vocab["!"], 0);
  EXPECT_EQ(vocab["<|endoftext|>"], v->end_of_text_id());
  EXPECT_EQ(vocab["\xC4\xA0the"], [&] {
    for (int i = 0; i < (int)v->tokens.size(); ++i)
      if (v->tokens[i] == " the") return i;
    return -1;
  }());
  std::ifstream mf(dir.path / "merges.txt");
  std::string first;
  std::getline(mf, first);
  EXPECT_EQ(first, "#version: 0.2");
  int lines = 0;
  for (std::string line; std::getline(mf, line);) ++lines;
  EXPECT_EQ(lines, static_cast<int>(v->merges.size()));
}

TEST(BpeSave, ReportsUnwritableDirectory) {
  BpeTrainOptions o;
  o.vocab_size = 260;
  auto v = bpe_train({kText}, o);
  ASSERT_TRUE(v);
  auto s = bpe_save(*v, "/proc/headlab_cannot_write_here");
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, ErrorCode::io_error);
}

TEST(BpeTokenizerOfVocabulary, RefusesAVocabularyBpeTrainDidNotMake) {
  BpeVocabulary v;
  v.tokens = {"a", "<|endoftext|>"};  // not the 256 bytes
  auto tok = bpe_tokenizer(v);
  ASSERT_FALSE(tok);
  EXPECT_EQ(tok.error().code, ErrorCode::corrupt);
  EXPECT_NE(tok.error().message.find("lacks the token for byte"), std::string::npos);
}

// The built-in model's files (learned by `headlab train-tokenizer`): the engine encodes
// with them as their merges say, on text far from the corpus it was learned from.
TEST(BuiltInTokenizer, EncodesAsItsMergesSay) {
  const std::string dir = std::string(HEADLAB_SOURCE_DIR) + "/models/headlab-tiny";
  auto tok = model::model_tokenizer_load(dir);
  ASSERT_TRUE(tok) << tok.error().message;
  EXPECT_EQ(tok->vocab_size(), 4096);
  EXPECT_EQ(tok->endoftext_id(), 4095);
  // the files back into a vocabulary of bytes and merges of ids, for the reference
  std::ifstream vf(dir + "/vocab.json");
  auto vocab = nlohmann::json::parse(vf);
  BpeVocabulary v;
  v.tokens.resize(vocab.size());
  std::unordered_map<std::string, int> id_of;
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    const int id = it.value().get<int>();
    v.tokens[id] = tok->token_bytes(id);
    id_of[it.key()] = id;
  }
  std::ifstream mf(dir + "/merges.txt");
  std::string line;
  std::getline(mf, line);  // #version
  while (std::getline(mf, line)) {
    const auto sp = line.find(' ');
    const std::string a = line.substr(0, sp), b = line.substr(sp + 1);
    v.merges.push_back({id_of.at(a), id_of.at(b), id_of.at(a + b)});
  }
  const std::string text =
      "ABSURDITY, n. A statement or belief manifestly inconsistent with one's own opinion.\n\n"
      "  The cat sat on the mat -- didn't it? 1,234.5 dollars; caf\xC3\xA9, na\xC3\xAFve, \xE2\x80\x9Cquoted\xE2\x80\x9D "
      "\xF0\x9F\x98\x80 \xE4\xB8\xAD\xE6\x96\x87\ttabs\r\nend";
  auto ids = tok->encode_ids(text);
  ASSERT_TRUE(ids);
  EXPECT_EQ(*ids, reference_encode(v, text));
}
