// Tests for formats/weights_cache.h through the one door (model_load with LoadOptions::cache):
// a mapped cache gives the very numbers a load from the files gives, on every family; a changed
// source, a truncated or foreign cache are rebuilt with a note; a folder where no cache can be
// written still loads, with a note; a truncated model file is a clear error, never a crash.
#include "formats/weights_cache.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "formats/model_files.h"
#include "model/forward.h"
#include "testing/model_fixtures.h"

using namespace headlab::model;
using headlab::ErrorCode;
using headlab::testing::fixture_dir;

namespace fs = std::filesystem;

namespace {

// Every family fixture (HF folders), and GGUF files of quantized types (widened to f32 by
// --dtype f32: --dtype auto keeps their blocks and writes no cache).
const char* kFamilies[] = {"families/pythia", "families/llama",          "families/mistral", "families/qwen2",
                           "families/llama3", "families/mistral_window", "families/qwen3",   "families/gemma2",
                           "families/gemma3"};
const char* kGgufFiles[] = {"gpt2_random.q8_0.gguf", "llama_random.q4_k_m.gguf", "gemma3_random.q8_0.gguf"};

// A fresh copy of a fixture in the build tree: the cache is written beside the model, and
// never into the source tree. A file gets a folder of its own, so the cache a previous run left
// beside it goes too.
std::string copy_fixture(const std::string& from, const std::string& name) {
  const fs::path base = fs::path(HEADLAB_BINARY_DIR) / "weights_cache_test";
  if (fs::is_directory(from)) {
    fs::remove_all(base / name);
    fs::create_directories(base);
    fs::copy(from, base / name, fs::copy_options::recursive);
    return (base / name).string();
  }
  fs::remove_all(base / (name + ".d"));
  fs::create_directories(base / (name + ".d"));
  fs::copy_file(from, base / (name + ".d") / name);
  return (base / (name + ".d") / name).string();
}

// What a cache's tests load with: the cache on whatever the model's size.
LoadOptions cached(DtypeChoice dtype = DtypeChoice::keep) {
  return {.dtype = dtype, .cache = true, .cache_min_bytes = 0};
}

std::vector<float> logits_of(const Parameters& p) {
  std::vector<int> ids;
  for (int t = 0; t < 12; t++) ids.push_back((t * 7 + 3) % p.config.vocab_size);
  ForwardOptions opt;
  opt.record.pattern = true;
  ForwardOutput out;
  Workspace ws;
  EXPECT_TRUE(forward(p, ids, opt, out, ws));
  return out.logits;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

std::string notes_text(const Parameters& p) {
  std::string s;
  for (const std::string& n : p.notes) s += n + "\n";
  return s;
}

}  // namespace

TEST(WeightsCache, AMappedLoadGivesBitIdenticalLogitsToALoadFromTheFilesOnEveryFamily) {
  std::vector<std::pair<std::string, DtypeChoice>> models;
  for (const char* f : kFamilies) models.push_back({copy_fixture(fixture_dir(f), fs::path(f).filename().string()), DtypeChoice::keep});
  for (const char* f : kGgufFiles)
    models.push_back({copy_fixture(std::string(HEADLAB_SOURCE_DIR) + "/tests/fixtures/gguf/" + f, f), DtypeChoice::f32});
  // a BF16 matrix kept as bf16, and an F32 file rounded to bf16 and to f16 by --dtype
  models.push_back({copy_fixture(fixture_dir("families/llama"), "llama_dtype"), DtypeChoice::bf16});
  models.push_back({copy_fixture(fixture_dir("families/qwen2"), "qwen2_dtype"), DtypeChoice::f16});
  for (const auto& [path, dtype] : models) {
    SCOPED_TRACE(path);
    auto files = model_load(path, {.dtype = dtype});
    ASSERT_TRUE(files) << files.error().message;
    auto first = model_load(path, cached(dtype));  // reads the files and writes the cache
    ASSERT_TRUE(first) << first.error().message;
    EXPECT_NE(notes_text(*first).find("kept the packed weights in " + weights_cache_path(path, dtype)), std::string::npos)
        << notes_text(*first);
    ASSERT_TRUE(fs::exists(weights_cache_path(path, dtype)));
    auto mapped = model_load(path, cached(dtype));  // maps it
    ASSERT_TRUE(mapped) << mapped.error().message;
    EXPECT_TRUE(mapped->notes.empty()) << notes_text(*mapped);
    EXPECT_EQ(mapped->rounded, files->rounded);
    EXPECT_TRUE(parameters_to_rows(*mapped) == parameters_to_rows(*files));
    for (int i = 0; i < kNumParameterTensors; i++) EXPECT_EQ(parameters_matrix_type(*mapped, i), parameters_matrix_type(*files, i));
    EXPECT_TRUE(same_bits(logits_of(*mapped), logits_of(*files)));
  }
}

TEST(WeightsCache, ComputeBf16IsAppliedToAMappedModelAsToALoadedOne) {
  const std::string dir = copy_fixture(fixture_dir("families/llama"), "llama_compute");
  LoadOptions o = cached(DtypeChoice::bf16);
  o.compute = ComputeChoice::bf16;
  ASSERT_TRUE(model_load(dir, o));
  auto mapped = model_load(dir, o);
  ASSERT_TRUE(mapped) << mapped.error().message;
  EXPECT_TRUE(parameters_rounds_inputs(*mapped));
  auto files = model_load(dir, {.dtype = DtypeChoice::bf16, .compute = ComputeChoice::bf16});
  ASSERT_TRUE(files);
  EXPECT_TRUE(same_bits(logits_of(*mapped), logits_of(*files)));
}

TEST(WeightsCache, EachDtypeHasItsOwnCache) {
  const std::string dir = copy_fixture(fixture_dir("families/mistral"), "mistral_dtypes");
  ASSERT_TRUE(model_load(dir, cached(DtypeChoice::keep)));
  auto bf16 = model_load(dir, cached(DtypeChoice::bf16));
  ASSERT_TRUE(bf16);
  EXPECT_NE(notes_text(*bf16).find("kept the packed weights"), std::string::npos) << notes_text(*bf16);
  EXPECT_TRUE(fs::exists(weights_cache_path(dir, DtypeChoice::keep)));
  EXPECT_TRUE(fs::exists(weights_cache_path(dir, DtypeChoice::bf16)));
  EXPECT_EQ(parameters_matrix_type(*bf16, 4), WeightType::bf16);
}

TEST(WeightsCache, AChangedConfigIsSeenAsStaleAndTheCacheIsRebuilt) {
  const std::string dir = copy_fixture(fixture_dir("families/qwen2"), "qwen2_stale_config");
  ASSERT_TRUE(model_load(dir, cached()));
  // the same keys with another rms_norm_eps: the same size, so only the header hash and the time tell
  std::string text;
  {
    std::ifstream in(dir + "/config.json");
    text.assign(std::istreambuf_iterator<char>(in), {});
  }
  const auto at = text.find("1e-06");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 5, "2e-06");
  std::ofstream(dir + "/config.json") << text;
  auto rebuilt = model_load(dir, cached());
  ASSERT_TRUE(rebuilt) << rebuilt.error().message;
  EXPECT_NE(notes_text(*rebuilt).find("rebuilt the weights cache"), std::string::npos) << notes_text(*rebuilt);
  EXPECT_NE(notes_text(*rebuilt).find("stale: config.json"), std::string::npos) << notes_text(*rebuilt);
  EXPECT_FLOAT_EQ(rebuilt->config.layer_norm_eps, 2e-6f);
  auto again = model_load(dir, cached());
  ASSERT_TRUE(again);
  EXPECT_TRUE(again->notes.empty()) << notes_text(*again);
  EXPECT_FLOAT_EQ(again->config.layer_norm_eps, 2e-6f);
}

TEST(WeightsCache, ChangedWeightsOfTheSameSizeAreSeenByTheirTimeAndTheNewWeightsAreServed) {
  const std::string dir = copy_fixture(fixture_dir("families/llama"), "llama_stale_weights");
  auto before = model_load(dir, cached());
  ASSERT_TRUE(before);
  // another file of the same shapes, size and header layout (the BF16 variant is smaller, so
  // flip bytes of a weight in place), written a little later
  const std::string st = dir + "/model.safetensors";
  const auto old_time = fs::last_write_time(st);
  {
    std::fstream f(st, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-64, std::ios::end);
    const float v[4] = {0.5f, -0.25f, 0.125f, 0.75f};
    f.write(reinterpret_cast<const char*>(v), sizeof v);
  }
  fs::last_write_time(st, old_time + std::chrono::seconds(2));
  auto after = model_load(dir, cached());
  ASSERT_TRUE(after) << after.error().message;
  EXPECT_NE(notes_text(*after).find("stale: model.safetensors was modified"), std::string::npos) << notes_text(*after);
  auto files = model_load(dir, {});
  ASSERT_TRUE(files);
  EXPECT_TRUE(parameters_to_rows(*after) == parameters_to_rows(*files));
  EXPECT_FALSE(parameters_to_rows(*after) == parameters_to_rows(*before));
}

TEST(WeightsCache, ATruncatedCacheIsRebuiltNotACrash) {
  const std::string dir = copy_fixture(fixture_dir("families/gemma2"), "gemma2_truncated_cache");
  ASSERT_TRUE(model_load(dir, cached()));
  const std::string cache = weights_cache_path(dir, DtypeChoice::keep);
  const auto size = fs::file_size(cache);
  for (std::uintmax_t keep : {size - 1, size / 2, std::uintmax_t(20), std::uintmax_t(3), std::uintmax_t(0)}) {
    SCOPED_TRACE(keep);
    fs::resize_file(cache, keep);
    auto p = model_load(dir, cached());
    ASSERT_TRUE(p) << p.error().message;
    EXPECT_NE(notes_text(*p).find("rebuilt the weights cache"), std::string::npos) << notes_text(*p);
    EXPECT_EQ(fs::file_size(cache), size);
    auto files = model_load(dir, {});
    EXPECT_TRUE(same_bits(logits_of(*p), logits_of(*files)));
  }
  fs::resize_file(cache, size - 4096);
  auto p = model_load(dir, cached());
  ASSERT_TRUE(p);
  EXPECT_NE(notes_text(*p).find("truncated or extended"), std::string::npos) << notes_text(*p);
}

TEST(WeightsCache, AFileThatIsNotACacheIsReplaced) {
  const std::string dir = copy_fixture(fixture_dir("families/pythia"), "pythia_foreign_cache");
  std::ofstream(weights_cache_path(dir, DtypeChoice::keep)) << "HLWCACHE\x05\0\0\0\0\0\0\0{\"a\"";
  auto p = model_load(dir, cached());
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_NE(notes_text(*p).find("rebuilt the weights cache"), std::string::npos) << notes_text(*p);
  auto again = model_load(dir, cached());
  ASSERT_TRUE(again);
  EXPECT_TRUE(again->notes.empty()) << notes_text(*again);
}

TEST(WeightsCache, ACacheThatCannotBeWrittenFallsBackToTheFilesWithANote) {
  const std::string dir = copy_fixture(fixture_dir("families/mistral"), "mistral_unwritable");
  // a directory where the cache would go: rename cannot put a file there, even as root
  fs::create_directories(weights_cache_path(dir, DtypeChoice::keep) + "/in-the-way");
  auto p = model_load(dir, cached());
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_NE(notes_text(*p).find("could not be rebuilt"), std::string::npos) << notes_text(*p);
  EXPECT_NE(notes_text(*p).find("so this load read the model's files"), std::string::npos) << notes_text(*p);
  EXPECT_TRUE(same_bits(logits_of(*p), logits_of(*model_load(dir, {}))));
  for (const auto& e : fs::directory_iterator(dir))
    EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << "left behind: " << e.path();
}

TEST(WeightsCache, AReadOnlyFolderFallsBackToTheFilesWithANote) {
  if (::geteuid() == 0) GTEST_SKIP() << "root writes into a read-only folder; the test above covers the fallback";
  const std::string dir = copy_fixture(fixture_dir("families/qwen3"), "qwen3_read_only");
  fs::permissions(dir, fs::perms::owner_write | fs::perms::group_write | fs::perms::others_write, fs::perm_options::remove);
  auto p = model_load(dir, cached());
  fs::permissions(dir, fs::perms::owner_write, fs::perm_options::add);
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_NE(notes_text(*p).find("could not be written"), std::string::npos) << notes_text(*p);
}

TEST(WeightsCache, ATruncatedModelFileIsAClearErrorWithOrWithoutACache) {
  const std::string dir = copy_fixture(fixture_dir("families/llama3"), "llama3_truncated");
  ASSERT_TRUE(model_load(dir, cached()));
  const std::string st = dir + "/model.safetensors";
  const auto size = fs::file_size(st);
  for (std::uintmax_t keep : {size - 1, size / 2, std::uintmax_t(100), std::uintmax_t(4)}) {
    SCOPED_TRACE(keep);
    fs::resize_file(st, keep);
    for (bool cache : {true, false}) {
      auto p = model_load(dir, cache ? cached() : LoadOptions{});
      ASSERT_FALSE(p);
      EXPECT_EQ(p.error().code, ErrorCode::corrupt);
      EXPECT_NE(p.error().message.find(st), std::string::npos) << p.error().message;
    }
  }
}

TEST(WeightsCache, ATruncatedGgufFileIsAClearErrorWithOrWithoutACache) {
  const std::string file = copy_fixture(std::string(HEADLAB_SOURCE_DIR) + "/tests/fixtures/gguf/qwen3_random.q8_0.gguf",
                                        "qwen3_truncated.gguf");
  ASSERT_TRUE(model_load(file, cached(DtypeChoice::f32)));  // widened: a cache is written
  const auto size = fs::file_size(file);
  for (std::uintmax_t keep : {size - 1, size / 2, std::uintmax_t(100)}) {
    SCOPED_TRACE(keep);
    fs::resize_file(file, keep);
    for (bool cache : {true, false}) {
      auto p = model_load(file, cache ? cached(DtypeChoice::f32) : LoadOptions{});
      ASSERT_FALSE(p);
      EXPECT_EQ(p.error().code, ErrorCode::corrupt);
      EXPECT_NE(p.error().message.find(file), std::string::npos) << p.error().message;
    }
  }
}

TEST(WeightsCache, AQuantizedGgufKeptAsItsBlocksWritesNoCache) {
  // the blocks are copied as the file has them, as fast as a cache would map them
  const std::string file = copy_fixture(std::string(HEADLAB_SOURCE_DIR) + "/tests/fixtures/gguf/llama_random.q4_k_m.gguf",
                                        "llama_blocks.gguf");
  auto p = model_load(file, cached());
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_TRUE(parameters_quantized(*p));
  EXPECT_TRUE(p->notes.empty()) << notes_text(*p);
  EXPECT_FALSE(fs::exists(weights_cache_path(file, DtypeChoice::keep)));
}

TEST(WeightsCache, SmallModelsAndTrainingLoadsWriteNoCache) {
  const std::string dir = copy_fixture(fixture_dir("families/qwen2"), "qwen2_small");
  auto p = model_load(dir, {.cache = true});  // the default threshold: 256 MB
  ASSERT_TRUE(p);
  EXPECT_TRUE(p->notes.empty());
  auto rows = model_load(dir, {.rows = true, .cache = true, .cache_min_bytes = 0});
  ASSERT_TRUE(rows);
  EXPECT_EQ(rows->packed, nullptr);
  EXPECT_FALSE(fs::exists(weights_cache_path(dir, DtypeChoice::keep)));
}

TEST(WeightsCache, TheCacheLivesInsideAFolderAndBesideAFile) {
  EXPECT_EQ(weights_cache_path(HEADLAB_SOURCE_DIR, DtypeChoice::keep),
            (fs::path(HEADLAB_SOURCE_DIR) / "headlab-weights.auto.cache").string());
  EXPECT_EQ(weights_cache_path("/x/model.gguf", DtypeChoice::bf16), "/x/model.gguf.headlab-weights.bf16.cache");
}

TEST(WeightsCache, AHeaderOfWrongTypesOrOffsetsIsReplacedNotACrash) {
  const std::string dir = copy_fixture(fixture_dir("families/qwen3"), "qwen3_bad_header");
  ASSERT_TRUE(model_load(dir, cached()));
  const std::string cache = weights_cache_path(dir, DtypeChoice::keep);
  std::string bytes;
  {
    std::ifstream in(cache, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  std::uint64_t n = 0;
  std::memcpy(&n, bytes.data() + 8, 8);
  const std::string header = bytes.substr(16, n);
  // the cache with another header: its length in the 8 bytes before it, the vectors and the
  // panels where they were (the header's page has room)
  auto write_with_header = [&](const std::string& h) {
    ASSERT_LT(16 + h.size(), 4096u);
    std::string file = bytes;
    const std::uint64_t m = h.size();
    std::memcpy(file.data() + 8, &m, 8);
    file.replace(16, h.size(), h);
    std::ofstream(cache, std::ios::binary | std::ios::trunc) << file;
  };
  auto replace_value = [&](const std::string& key, const std::string& value) {
    const auto at = header.find("\"" + key + "\":");
    EXPECT_NE(at, std::string::npos) << key;
    const auto begin = at + key.size() + 3;
    const auto end = header.find_first_of(",}", begin);
    return header.substr(0, begin) + value + header.substr(end);
  };
  const std::vector<std::string> damaged = {
      replace_value("format", "\"1\""),           replace_value("dtype", "7"),
      replace_value("panel", "\"x\""),            replace_value("sources", "7"),
      replace_value("block_offset", "18446744073709547520"), replace_value("vectors_offset", "18446744073709547520"),
      replace_value("block_bytes", "-3"),         replace_value("file_bytes", "0"),
      replace_value("vectors", "1e30"),           "[1, 2]", "null"};
  for (const std::string& h : damaged) {
    SCOPED_TRACE(h);
    write_with_header(h);
    auto p = model_load(dir, cached());
    ASSERT_TRUE(p) << p.error().message;
    EXPECT_NE(notes_text(*p).find("rebuilt the weights cache"), std::string::npos) << notes_text(*p);
  }
}
