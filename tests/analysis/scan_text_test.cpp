// The one scan pipeline: text in, the same report as the steps by hand; the punctuation
// table; the held-out file and every error scan_text can return.
#include "analysis/scan_text.h"
#include "formats/model_files.h"

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

using namespace headlab;
using namespace headlab::analysis;
namespace fs = std::filesystem;

namespace {

const std::string kTinyDir = std::string(HEADLAB_SOURCE_DIR) + "/models/headlab-tiny";

const model::BpeTokenizer& tiny_tokenizer() {
  static const model::BpeTokenizer tok = [] {
    auto t = model::model_tokenizer_load(kTinyDir);
    if (!t) throw std::runtime_error(t.error().message);
    return std::move(*t);
  }();
  return tok;
}

// A random attention-only model over the built-in tokenizer's vocabulary.
model::Parameters random_params(int vocab_size) {
  model::ModelConfig c;
  c.n_layer = 2;
  c.n_head = 2;
  c.n_embd = 16;
  c.n_ctx = 32;
  c.vocab_size = vocab_size;
  c.mlp = false;
  c.bos_token_id = c.eos_token_id = vocab_size - 1;
  model::Parameters p = model::parameters_allocate(c);
  model::parameters_init_random(p, 3);
  return p;
}

std::string story() {
  std::string s;
  for (int i = 0; i < 8; ++i)
    s += "The miller walked to the river, and the baker followed him. Was the water cold? It was. ";
  return s;
}

std::string fresh_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("headlab-scan-text-" + std::to_string(::getpid()) + "-" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d.string();
}

void expect_same_report(const ScanReport& a, const ScanReport& b) {
  ASSERT_EQ(a.heads.size(), b.heads.size());
  EXPECT_EQ(a.natural_tokens, b.natural_tokens);
  EXPECT_EQ(a.icl.loss_first_copy, b.icl.loss_first_copy);
  EXPECT_EQ(a.icl.loss_second_copy, b.icl.loss_second_copy);
  for (std::size_t i = 0; i < a.heads.size(); ++i) {
    EXPECT_EQ(a.heads[i].name, b.heads[i].name);
    for (const ScoreField& f : score_fields()) {
      EXPECT_EQ((a.heads[i].scores.*f.member).score, (b.heads[i].scores.*f.member).score) << a.heads[i].name << " " << f.name;
      EXPECT_EQ((a.heads[i].scores.*f.member).chance, (b.heads[i].scores.*f.member).chance) << a.heads[i].name << " " << f.name;
    }
  }
}

}  // namespace

TEST(PunctuationTable, MarksPunctuationWithOrWithoutALeadingSpaceButNotWordsOrBos) {
  const model::BpeTokenizer& tok = tiny_tokenizer();
  const int V = tok.vocab_size(), bos = tok.endoftext_id();
  std::vector<bool> table = punctuation_table(tok, V, bos);
  ASSERT_EQ(static_cast<int>(table.size()), V);
  auto id_of = [&](const std::string& piece) {
    auto ids = tok.encode_ids(piece);
    EXPECT_TRUE(ids && ids->size() == 1u) << piece;
    return ids && !ids->empty() ? ids->front() : -1;
  };
  EXPECT_TRUE(table[id_of(",")]);
  EXPECT_TRUE(table[id_of("?")]);
  EXPECT_FALSE(table[id_of("the")]);
  EXPECT_FALSE(table[id_of(" the")]);
  EXPECT_FALSE(table[bos]);
}

TEST(ScanText, GivesTheSameReportAsTokenizingAndScanningTheIdsByHand) {
  const model::BpeTokenizer& tok = tiny_tokenizer();
  model::Parameters params = random_params(tok.vocab_size());
  auto report = scan_text(params, tok, story(), ScanOptions{});
  ASSERT_TRUE(report) << report.error().message;
  auto ids = tok.encode_ids(story());
  ASSERT_TRUE(ids);
  auto probes = scan_probes_build(*ids, punctuation_table(tok, tok.vocab_size(), tok.endoftext_id()),
                                  tok.vocab_size(), tok.endoftext_id(), 32, ScanOptions{});
  ASSERT_TRUE(probes);
  auto by_hand = scan_model(params, *probes);
  ASSERT_TRUE(by_hand);
  expect_same_report(*report, *by_hand);
  auto from_ids = scan_ids(params, *ids, punctuation_table(tok, tok.vocab_size(), tok.endoftext_id()), ScanOptions{});
  ASSERT_TRUE(from_ids);
  expect_same_report(*report, *from_ids);
}

TEST(ScanText, RefusesTextShorterThanAWindow) {
  const model::BpeTokenizer& tok = tiny_tokenizer();
  auto r = scan_text(random_params(tok.vocab_size()), tok, "Too short.", ScanOptions{});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::invalid_argument);
  EXPECT_NE(r.error().message.find("needs at least"), std::string::npos) << r.error().message;
}

TEST(ScanText, RefusesTextThatIsNotUtf8AndSaysItIsTheHeldOutText) {
  const model::BpeTokenizer& tok = tiny_tokenizer();
  auto r = scan_text(random_params(tok.vocab_size()), tok, story() + "\xff\xfe", ScanOptions{});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::invalid_argument);
  EXPECT_NE(r.error().message.find("held-out text"), std::string::npos) << r.error().message;
}

TEST(ScanText, RefusesATokenizerWithMoreTokensThanTheModelsVocabulary) {
  const model::BpeTokenizer& tok = tiny_tokenizer();
  auto r = scan_text(random_params(100), tok, story(), ScanOptions{});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::invalid_argument);
  EXPECT_NE(r.error().message.find("vocab_size"), std::string::npos) << r.error().message;
}

TEST(ScanIds, RefusesAContextTooShortToScan) {
  model::Parameters params = random_params(50);
  params.config.n_ctx = 4;
  auto r = scan_ids(params, std::vector<int>(100, 1), std::vector<bool>(50, false), ScanOptions{});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::invalid_argument);
}

TEST(ScanWords, SplitsPunctuationFromWordsAndKeepsApostrophes) {
  EXPECT_EQ(scan_words("The cat's mat, red.\nYes"),
            (std::vector<std::string>{"The", "cat's", "mat", ",", "red", ".", "Yes"}));
}

TEST(ScanTextConstructed, ScoresTheFiveConstructedHeadsOnTheWordsOfTheText) {
  ScanReport r = scan_text_constructed(story(), ScanOptions{});
  EXPECT_EQ(r.heads.size(), 5u);
  EXPECT_GT(r.natural_tokens, 0);
}

TEST(HeldoutTextRead, ReadsTheModelFoldersHeldOutText) {
  const std::string dir = fresh_dir("found");
  std::ofstream(fs::path(dir) / "heldout.txt") << "Some held-out words.";
  auto text = heldout_text_read(dir);
  ASSERT_TRUE(text) << text.error().message;
  EXPECT_EQ(*text, "Some held-out words.");
  EXPECT_EQ(heldout_path(dir), (fs::path(dir) / "heldout.txt").string());
}

TEST(HeldoutTextRead, NamesTheFolderAndSaysWhatToAddWhenItIsMissing) {
  const std::string dir = fresh_dir("missing");
  auto text = heldout_text_read(dir);
  ASSERT_FALSE(text);
  EXPECT_EQ(text.error().code, ErrorCode::not_found);
  EXPECT_NE(text.error().message.find("has no heldout.txt"), std::string::npos) << text.error().message;
  EXPECT_NE(text.error().message.find(dir), std::string::npos) << text.error().message;
}

