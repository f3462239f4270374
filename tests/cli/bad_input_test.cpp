// Every subcommand of `headlab`, fed a directory, an empty file and a lying file wherever it
// reads one, ends on the one error path: "headlab: error: <message>" and exit 1 or 2, never
// an abort (134), a bad_alloc or an uncaught throw. One table; each row runs the binary as a
// child process. The lying models are models/headlab-tiny with a config.json that claims
// other sizes; they run under `ulimit -v` so that allocating what they claim would fail.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "testing/process.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using headlab::testing::CommandResult;

// Runs `headlab ARGS` under a virtual-memory cap of `limit_kb` (0: none) and a 60 s timeout.
CommandResult run_headlab(const std::string& args, long limit_kb) {
  std::string cmd = "timeout 60 " + std::string(HEADLAB_BINARY_DIR) + "/headlab " + args + " 2>&1";
  if (limit_kb > 0) cmd = "ulimit -v " + std::to_string(limit_kb) + "; " + cmd;
  return headlab::testing::command_run(cmd);
}

const fs::path kTiny = fs::path(HEADLAB_SOURCE_DIR) / "models/headlab-tiny";

// models/headlab-tiny's config.json with `changes` applied.
json tiny_config(const json& changes = json::object()) {
  std::ifstream in(kTiny / "config.json");
  json c = json::parse(in);
  c.update(changes);
  return c;
}

// models/headlab-tiny's files in `dir`, with `config` as its config.json.
void write_model(const fs::path& dir, const json& config) {
  fs::create_directories(dir);
  for (const char* f : {"vocab.json", "merges.txt", "model.safetensors", "heldout.txt"})
    fs::copy_file(kTiny / f, dir / f, fs::copy_options::overwrite_existing);
  std::ofstream(dir / "config.json") << config.dump(2);
}

// An attention-only, tied model of L = 24, C = 4096 whose model.safetensors is a sparse file:
// a true header and F16 zeros the disk never stores. Loading it needs about 3 GB with its
// matrices kept as F16 (--dtype auto), 6 GB as float32.
void write_big_model(const fs::path& dir) {
  fs::create_directories(dir);
  for (const char* f : {"vocab.json", "merges.txt", "heldout.txt"})
    fs::copy_file(kTiny / f, dir / f, fs::copy_options::overwrite_existing);
  json c = tiny_config();
  const std::int64_t L = 24, C = 4096, V = c["vocab_size"], maxT = c["n_positions"];
  c["n_layer"] = L;
  c["n_embd"] = C;
  c["tie_word_embeddings"] = true;
  std::ofstream(dir / "config.json") << c.dump(2);
  json header = json::object();
  std::uint64_t at = 0;
  auto add = [&](const std::string& name, std::vector<std::int64_t> shape) {
    std::uint64_t n = 2;
    for (auto d : shape) n *= std::uint64_t(d);
    header[name] = {{"dtype", "F16"}, {"shape", shape}, {"data_offsets", {at, at + n}}};
    at += n;
  };
  add("wte.weight", {V, C});
  add("wpe.weight", {maxT, C});
  for (int l = 0; l < L; l++) {
    const std::string h = "h." + std::to_string(l) + ".";
    add(h + "ln_1.weight", {C});
    add(h + "ln_1.bias", {C});
    add(h + "attn.c_attn.weight", {C, 3 * C});
    add(h + "attn.c_attn.bias", {3 * C});
    add(h + "attn.c_proj.weight", {C, C});
    add(h + "attn.c_proj.bias", {C});
  }
  add("ln_f.weight", {C});
  add("ln_f.bias", {C});
  std::string text = header.dump();
  while ((8 + text.size()) % 8 != 0) text += ' ';
  const fs::path file = dir / "model.safetensors";
  {
    std::ofstream out(file, std::ios::binary);
    for (int i = 0; i < 8; i++) out.put(static_cast<char>((std::uint64_t(text.size()) >> (8 * i)) & 0xff));
    out << text;
  }
  fs::resize_file(file, 8 + text.size() + at);
}

// models/headlab-tiny with one weight of wte set to 1e6: a float32 checkpoint that --dtype f16
// cannot hold (IEEE half reaches 65504).
void write_f16_overflow_model(const fs::path& dir) {
  write_model(dir, tiny_config());
  std::fstream f(dir / "model.safetensors", std::ios::in | std::ios::out | std::ios::binary);
  unsigned char len[8];
  f.read(reinterpret_cast<char*>(len), 8);
  std::uint64_t n = 0;
  for (int i = 0; i < 8; i++) n |= std::uint64_t(len[i]) << (8 * i);
  std::string header(n, ' ');
  f.read(header.data(), static_cast<std::streamsize>(n));
  const json h = json::parse(header);
  const std::string wte = h.contains("transformer.wte.weight") ? "transformer.wte.weight" : "wte.weight";
  const std::uint64_t at = 8 + n + h[wte]["data_offsets"][0].get<std::uint64_t>();
  const float big = 1e6f;
  f.seekp(static_cast<std::streamoff>(at));
  f.write(reinterpret_cast<const char*>(&big), 4);
}

// A family fixture of tests/fixtures/model/families (config.json and model.safetensors, no
// tokenizer) in `dir`, with `key` taken out of its config.json.
void write_family_without(const fs::path& dir, const std::string& family, const std::string& key) {
  const fs::path src = fs::path(HEADLAB_SOURCE_DIR) / "tests/fixtures/model/families" / family;
  fs::create_directories(dir);
  fs::copy_file(src / "model.safetensors", dir / "model.safetensors", fs::copy_options::overwrite_existing);
  std::ifstream in(src / "config.json");
  json c = json::parse(in);
  c.erase(key);
  std::ofstream(dir / "config.json") << c.dump(2);
}

// The fixtures, made once per test process in a folder of its own and removed at exit.
struct Fixtures {
  fs::path root = fs::path(HEADLAB_BINARY_DIR) / ("tmp_cli_bad_input_" + std::to_string(::getpid()));
  Fixtures() {
    fs::remove_all(root);
    fs::create_directories(root / "dir");
    std::ofstream(root / "empty");
    std::ofstream(root / "lying") << "\x89PNG\r\n\x1a\n not text \xff\xfe, not JSON {";
    write_model(root / "good", tiny_config());
    fs::create_directories(root / "corpus");
    fs::copy_file(kTiny / "heldout.txt", root / "corpus/a.txt");
    json c = tiny_config();
    write_model(root / "huge", tiny_config({{"n_layer", 1024}, {"n_embd", 65536}}));
    write_model(root / "vocab-lie", tiny_config({{"vocab_size", 4194304}}));
    write_model(root / "positions-lie", tiny_config({{"n_positions", 1048576}, {"n_ctx", 1048576}}));
    write_model(root / "layers-lie", tiny_config({{"n_layer", 3}}));
    write_model(root / "empty-config", c);
    std::ofstream(root / "empty-config/config.json");
    write_model(root / "empty-weights", c);
    std::ofstream(root / "empty-weights/model.safetensors");
    write_model(root / "lying-weights", c);
    fs::copy_file(root / "lying", root / "lying-weights/model.safetensors", fs::copy_options::overwrite_existing);
    write_model(root / "dir-weights", c);
    fs::remove(root / "dir-weights/model.safetensors");
    fs::create_directories(root / "dir-weights/model.safetensors");
    write_model(root / "empty-vocab", c);
    std::ofstream(root / "empty-vocab/vocab.json");
    std::ofstream(root / "huge.json") << tiny_config({{"n_layer", 1024}, {"n_embd", 65536}}).dump();
    // hostile files (issue 24): nesting that overflowed a recursive walk, a FIFO whose open
    // blocked for ever, a device that never ends, a model_type of the wrong type
    write_model(root / "deep-config", c);
    std::ofstream(root / "deep-config/config.json") << "{\"a\": " << std::string(100000, '[') << std::string(100000, ']') << "}";
    write_model(root / "fifo-config", c);
    fs::remove(root / "fifo-config/config.json");
    ::mkfifo((root / "fifo-config/config.json").c_str(), 0600);
    write_model(root / "zero-config", c);
    fs::remove(root / "zero-config/config.json");
    fs::create_symlink("/dev/zero", root / "zero-config/config.json");
    write_model(root / "fifo-weights", c);
    fs::remove(root / "fifo-weights/model.safetensors");
    ::mkfifo((root / "fifo-weights/model.safetensors").c_str(), 0600);
    ::mkfifo((root / "fifo.gguf").c_str(), 0600);
    write_model(root / "number-type", tiny_config({{"model_type", 42}}));
    fs::create_directories(root / "deep-tokenizer");
    {
      std::ofstream t(root / "deep-tokenizer/tokenizer.json");
      t << "{\"normalizer\": ";
      for (int i = 0; i < 20000; i++) t << "{\"type\": \"Sequence\", \"normalizers\": [";
      t << "null";
      for (int i = 0; i < 20000; i++) t << "]}";
      t << "}";
    }
    // config.json without a key the family needs (issue 25): the message names that key
    write_family_without(root / "no-model-type", "qwen3", "model_type");
    write_family_without(root / "no-head-dim", "qwen3", "head_dim");
    write_big_model(root / "big");
    write_f16_overflow_model(root / "f16-overflow");
  }
  ~Fixtures() {
    std::error_code ec;
    fs::remove_all(root, ec);
  }
};

const Fixtures& fixtures() {
  static Fixtures f;
  return f;
}

struct Row {
  std::string args;     // after `headlab`; {F} is the fixtures folder
  int exit_code;        // 1 or 2
  std::string message;  // a part of the error message
  long limit_kb = 0;    // ulimit -v for the child; 0: none
};

// 2 GB: more than headlab needs to start and to load models/headlab-tiny, less than any
// lying model below claims, and less than "big" needs.
constexpr long kCap = 2L << 20;

// AddressSanitizer reserves terabytes of address space for its shadow at start, so a
// sanitized binary cannot start under any `ulimit -v`. There the capped rows run without
// the cap (the shapes are refused before any allocation, cap or not), except those whose
// claim is the out-of-memory message itself: without a cap those models simply load.
// (g++ says so by __SANITIZE_ADDRESS__, clang by __has_feature(address_sanitizer))
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif
bool needs_the_cap(const Row& row) { return row.message.find("GB of memory") != std::string::npos; }

const std::string kServe = " --port 0 --db {F}/serve.db --web /nonexistent";
const std::string kTrain = " --out {F}/train-out --steps 1 --quiet";

const std::vector<Row> kRows = {
    // heads reads no file; it writes --save-svg
    {"heads --query -1", 2, "--query: must be a whole number of 0 or more, got -1"},
    {"heads --query 99999999999", 2, "from 0 to 2147483647"},
    {"heads --query 10", 2, "--query 10 is out of range"},
    {"heads --save-svg {F}/dir", 1, "{F}/dir: cannot open for writing"},
    // run --model
    {"run --model {F}/dir --text hi", 1, "missing config.json"},
    {"run --model {F}/empty --text hi", 1, "not a directory"},
    {"run --model {F}/empty-config --text hi", 1, "config.json: not valid JSON"},
    {"run --model {F}/empty-weights --text hi", 1, "less than the 8-byte header length"},
    {"run --model {F}/lying-weights --text hi", 1, "model.safetensors: header length"},
    {"run --model {F}/dir-weights --text hi", 1, "model.safetensors: cannot read: it is a directory"},
    {"run --model {F}/empty-vocab --text hi", 1, "vocab.json"},
    {"run --model {F}/huge --text hi", 1, "config.json's n_embd is 65536 but the weights have 128 channels", kCap},
    {"run --model {F}/vocab-lie --text hi", 1, "config.json's vocab_size is 4194304 but the weights hold 4096 tokens", kCap},
    {"run --model {F}/positions-lie --text hi", 1, "config.json's n_positions is 1048576 but the weights hold 128", kCap},
    {"run --model {F}/layers-lie --text hi", 1, "config.json's n_layer is 3 but the weights hold 2 layers", kCap},
    {"run --model {F}/big --text hi", 1, "GB of memory (1628512256 weights; its matrices as f16, the rest as float32", kCap},
    {"run --model {F}/big --text hi --dtype f32", 1, "GB of memory (1628512256 weights as float32", kCap},
    {"run --model {F}/good --text hi --dtype q8", 2, "--dtype: q8 not in {auto,f32,bf16,f16}"},
    {"run --model {F}/good --text hi --dtype F32", 2, "--dtype: F32 not in {auto,f32,bf16,f16}"},
    {"run --model {F}/good --text hi --bos --no-bos", 2, "--bos and --no-bos contradict each other"},
    {"run --model {F}/good --text hi --out -", 2, "--out -: headlab writes to the screen when --out is left out"},
    {"run --model {F}/good --text hi --out {F}/no-such-folder/x.txt", 1, "cannot open for writing: No such file or directory"},
    {"lens --model {F}/good --ids '1,,2'", 2, "--ids: an id is missing after the comma at character 2"},
    {"run --model {F}/good --ids '1,,2'", 2, "--ids: an id is missing after the comma at character 2"},
    {"patch --model {F}/good --clean-ids '1,2,' --corrupted-ids '1 2 3'", 2, "--clean-ids: an id is missing after the comma"},
    {"scan --model {F}/good --seed -1", 2, "--seed: must be a whole number from 0 to 18446744073709551615, got -1"},
    {"scan --model {F}/good --seed 99999999999999999999", 2, "--seed: must be a whole number from 0 to 18446744073709551615"},
    {"lens --model {F}/good --text hi --no-bos --bos", 2, "--bos and --no-bos contradict each other"},
    {"run --model {F}/good --text hi --compute bf8", 2, "--compute: bf8 not in {f32,bf16,q8}"},
    {"run --model {F}/f16-overflow --text hi --dtype f16", 1, "holds 1000000.000000, which f16 cannot hold"},
    {"run --model {F}/good --text hi --out {F}/dir", 1, "cannot open for writing"},
    {"run --model {F}/good --text hi --layer -1", 2, "--layer: must be a whole number of 0 or more"},
    // what the user typed, not the model's files (issue 25): usage errors, exit 2
    {"run --model {F}/good --text hi --logits", 2, "--logits needs --format json"},
    {"run --model {F}/good --text hi --no-predictions", 2, "--no-predictions needs --format json and no --logits"},
    {"run --model {F}/good --ids '1 4096'", 2, "token id 4096 is outside the vocabulary [0, 4096)"},
    {"run --model {F}/good --text \"$(head -c 2000 {F}/good/heldout.txt)\"", 2,
     "(with BOS), more than the model's n_ctx (128); pass --truncate"},
    // a path that names nothing, a config.json without model_type or head_dim: each named
    {"run --model {F}/no-such-model --text hi", 1, "{F}/no-such-model: no such file or directory"},
    {"run --model {F}/no-model-type --ids 1", 1, "config.json: no \"model_type\": without it the config is read as GPT-2's"},
    {"run --model {F}/no-head-dim --ids 1", 1,
     "config.json gives no head_dim, so a head is n_embd / n_head = 16 wide, but the weights hold heads of 32"},
    // scan --model, --text-file
    {"scan --model {F}/good --text-file {F}/dir", 1, "cannot read: it is a directory"},
    {"scan --model {F}/good --text-file {F}/empty", 2, "the natural text has 0 tokens"},
    {"scan --model {F}/good --text-file {F}/lying", 1, "is not valid UTF-8 text"},
    {"scan --model {F}/good --probes 2147483647", 2, "--probes: must be a whole number from 1 to 1024"},
    {"scan --model {F}/good --windows 100000", 2, "--windows: must be a whole number from 1 to 1024"},
    {"scan --model {F}/good --window-length 2", 2, "a window of 2 tokens is too short to scan"},
    {"scan --model {F}/good --window-length 100000", 2, "window length: 100000 is not from 5 to the model's context"},
    {"scan --model {F}/empty-weights", 1, "less than the 8-byte header length"},
    {"scan --model {F}/huge", 1, "config.json's n_embd is 65536", kCap},
    {"scan --model {F}/big", 1, "GB of memory (1628512256 weights; its matrices as f16", kCap},
    {"scan --model {F}/good --dtype int8", 2, "--dtype: int8 not in {auto,f32,bf16,f16}"},
    {"scan --model {F}/good --compute f16", 2, "--compute: f16 not in {f32,bf16,q8}"},
    {"scan --model {F}/good --windows 0", 2, "--windows: must be a whole number of 1 or more, got 0"},
    // info --model (headers only: a lying size is refused by its tensor, nothing is allocated)
    {"info --model {F}/dir", 1, "missing config.json"},
    {"info --model {F}/empty", 1, "not a directory"},
    {"info --model {F}/no-such-model", 1, "{F}/no-such-model: no such file or directory"},
    {"info --model {F}/no-model-type", 1, "no \"model_type\""},
    {"info --model {F}/no-head-dim", 1, "(add \"head_dim\": 32)"},
    {"info --model {F}/empty-config", 1, "config.json: not valid JSON"},
    {"info --model {F}/empty-weights", 1, "less than the 8-byte header length"},
    {"info --model {F}/lying-weights", 1, "model.safetensors: header length"},
    {"info --model {F}/huge", 1, "config.json's n_embd is 65536 but the weights have 128 channels", kCap},
    {"info --model {F}/good --dtype half", 2, "--dtype: half not in {auto,f32,bf16,f16}"},
    // hostile files: bounded parsers, only regular files (each under the 60 s timeout: a hang fails)
    {"info --model {F}/deep-config", 1, "config.json: JSON nested deeper than 64 levels"},
    {"run --model {F}/deep-config --text hi", 1, "config.json: JSON nested deeper than 64 levels"},
    {"info --model {F}/fifo-config", 1, "config.json: cannot read: it is a FIFO"},
    {"run --model {F}/fifo-config --text hi", 1, "config.json: cannot read: it is a FIFO"},
    {"info --model {F}/zero-config", 1, "config.json: cannot read: it is a device"},
    {"run --model {F}/fifo-weights --text hi", 1, "model.safetensors: cannot read: it is a FIFO"},
    {"run --model {F}/fifo.gguf --text hi", 1, "fifo.gguf: cannot read: it is a FIFO"},
    {"info --model {F}/number-type", 1, "\"model_type\" is number, not a string"},
    {"tokenize --model {F}/deep-tokenizer --text hi", 1, "JSON nested deeper than 64 levels"},
    // tokenize --model, --file (an empty file is an empty text: 0 tokens, not an error)
    {"tokenize --model {F}/good --file {F}/dir", 1, "{F}/dir: cannot read: it is a directory"},
    {"tokenize --model {F}/good --file {F}/lying", 1, "not valid UTF-8"},
    {"tokenize --model {F}/good --text \"$(printf 'a\\377\\376b')\"", 2, "not valid UTF-8 (byte 1)"},
    {"tokenize --model {F}/dir --text hi", 1, "no tokenizer"},
    {"tokenize --model {F}/empty --text hi", 1, "no tokenizer"},
    {"tokenize --model {F}/good --text hi --lines", 2, "--lines works with --format ids only (the table shows"},
    {"tokenize --model {F}/good --text hi --lines --format json", 2, "--lines works with --format ids only"},
    {"tokenize --model {F}/empty-vocab --text hi", 1, "vocab.json"},
    // train --config, --tokenizer, --corpus, --heldout, --out, --plot
    {"train --config {F}/dir --tokenizer {F}/good --corpus {F}/corpus" + kTrain, 1, "cannot read: it is a directory"},
    {"train --config {F}/empty --tokenizer {F}/good --corpus {F}/corpus" + kTrain, 1, "not valid JSON"},
    {"train --config {F}/lying --tokenizer {F}/good --corpus {F}/corpus" + kTrain, 1, "not valid JSON"},
    {"train --config {F}/huge.json --tokenizer {F}/good --corpus {F}/corpus" + kTrain, 1, "lower --batch, the context or the model size", kCap},
    {"train --config {F}/good/config.json --tokenizer {F}/dir --corpus {F}/corpus" + kTrain, 1, "vocab.json"},
    {"train --config {F}/good/config.json --tokenizer {F}/empty --corpus {F}/corpus" + kTrain, 1, "vocab.json"},
    {"train --config {F}/good/config.json --tokenizer {F}/empty-vocab --corpus {F}/corpus" + kTrain, 1, "vocab.json"},
    {"train --config {F}/good/config.json --tokenizer {F}/good --corpus {F}/dir" + kTrain, 2, "holds no .txt file"},
    {"train --config {F}/good/config.json --tokenizer {F}/good --corpus {F}/empty" + kTrain, 2, "the corpus is empty"},
    {"train --config {F}/good/config.json --tokenizer {F}/good --corpus {F}/lying" + kTrain, 2, "not valid UTF-8 text"},
    {"train --config {F}/good/config.json --tokenizer {F}/good --corpus {F}/corpus --heldout {F}/dir" + kTrain, 2,
     "holds no .txt file"},
    {"train --config {F}/good/config.json --tokenizer {F}/good --corpus {F}/corpus --heldout {F}/empty" + kTrain, 2,
     "the held-out text is empty"},
    {"train --config {F}/good/config.json --tokenizer {F}/good --corpus {F}/corpus --heldout {F}/lying" + kTrain, 2,
     "not valid UTF-8 text"},
    {"train --config {F}/good/config.json --tokenizer {F}/good --corpus {F}/corpus --steps 1 --quiet --out {F}/empty", 1,
     "cannot create the directory"},
    {"train --config {F}/good/config.json --tokenizer {F}/good --corpus {F}/corpus --steps -1 --out {F}/train-out", 2,
     "--steps must be at least 1"},
    {"train --plot {F}/dir", 1, "cannot read: it is a directory"},
    {"train --plot {F}/empty", 1, "is empty"},
    {"train --plot {F}/lying", 1, "is not a training log"},
    // train-tokenizer --corpus, --out
    {"train-tokenizer --corpus {F}/dir --out {F}/tok-out", 1, "holds no .txt file"},
    {"train-tokenizer --corpus {F}/empty --out {F}/tok-out", 1, "the corpus is empty"},
    {"train-tokenizer --corpus {F}/lying --out {F}/tok-out", 1, "not valid UTF-8 text"},
    {"train-tokenizer --corpus {F}/corpus --out {F}/empty --vocab-size 300", 1, "cannot create the directory"},
    {"train-tokenizer --corpus {F}/corpus --out {F}/tok-out --min-frequency 0", 2, "must be a whole number of 1 or more"},
    // a folder that holds a model: replaced only with --force (train's own rows: --out {F}/good below)
    {"train-tokenizer --corpus {F}/corpus --out {F}/good --vocab-size 300", 2, "--out {F}/good already holds a tokenizer (vocab.json)"},
    {"train --config {F}/good/config.json --tokenizer {F}/good --corpus {F}/corpus --out {F}/good --steps 1 --quiet", 2,
     "--out {F}/good already holds a model (model.safetensors): give a new folder, --resume to continue its run, or --force"},
    {"train --config {F}/good/config.json --tokenizer {F}/good --corpus {F}/corpus --seed -1" + kTrain, 2,
     "--seed: must be a whole number from 0 to 18446744073709551615, got -1"},
    {"train --config {F}/good/config.json --tokenizer {F}/good --corpus {F}/corpus --context 4" + kTrain, 2,
     "--context 4 is not from 5 to the config's n_ctx"},
    {"serve --max-patch-multiply-adds nan" + kServe, 2, "--max-patch-multiply-adds: must be a number above 0 and at most 1e30, got nan"},
    {"serve --client-model-seconds nan" + kServe, 2, "--client-model-seconds: must be a number from 0 to 3600, got nan"},
    {"serve --model ''" + kServe, 2, "--model is empty"},
    {"serve --no-model --model {F}/good" + kServe, 2, "--model and --no-model contradict each other"},
    {"serve --models-dir {F}/no-such-folder" + kServe, 2, "--models-dir {F}/no-such-folder is not a folder"},
    {"serve --allow-origin notanorigin" + kServe, 2, "--allow-origin notanorigin is not an origin"},
    {"serve --allow-origin http://10.0.0.5:5173/lessons" + kServe, 2, "is not an origin"},
    {"serve --no-model --host 192.0.2.1" + kServe, 1, "192.0.2.1 is not an address of this machine"},
    {"class create Period3 --url 10.0.0.5:8080 --db {F}/class-url.db", 2, "--url 10.0.0.5:8080 is not a web address"},
    {"train --plot-out {F}/curve.svg --config {F}/good/config.json --tokenizer {F}/good --corpus {F}/corpus" + kTrain, 2,
     "--plot-out names the SVG of --plot"},
    {"train --plot {F}/corpus/a.txt --steps 3", 2, "--steps is a training option; --plot only redraws a log"},
    {"train --config {F}/good/config.json --tokenizer {F}/good --corpus {F}/corpus --text-from-step 5" + kTrain, 2,
     "--text-from-step keeps the corpus out until that step, but no synthetic windows"},
    {"class create Period3 --passphrase-file {F}/fifo.gguf --db {F}/class-fifo.db", 1, "it is a FIFO"},
    {"info --model {F}/empty-config", 1, "config.json: not valid JSON: parse error at line 1"},
    // serve --model (it refuses to start rather than serve without the model it was given)
    {"serve --model {F}/dir" + kServe, 1, "missing config.json"},
    {"serve --model {F}/empty" + kServe, 1, "not a directory"},
    {"serve --model {F}/no-such-model" + kServe, 1, "{F}/no-such-model: no such file or directory"},
    {"serve --model {F}/empty-config" + kServe, 1, "not valid JSON"},
    {"serve --model {F}/lying-weights" + kServe, 1, "model.safetensors: header length"},
    {"serve --model {F}/huge" + kServe, 1, "config.json's n_embd is 65536", kCap},
    {"serve --model {F}/big" + kServe, 1, "GB of memory (1628512256 weights; its matrices as f16", kCap},
    {"serve --model {F}/good --dtype fp16" + kServe, 2, "--dtype: fp16 not in {auto,f32,bf16,f16}"},
    {"serve --model {F}/good --compute fp32" + kServe, 2, "--compute: fp32 not in {auto,f32,bf16,q8}"},
    {"serve --model {F}/good --compute bf16" + kServe, 1, "keeps none: add --dtype bf16"},
    // patch: activation patching (cli/patch_command.cpp)
    {"patch --model {F}/dir --clean a --corrupted b --answer x --wrong y", 1, "missing config.json"},
    {"patch --model {F}/good --prompts {F}/empty", 2, "the file holds no prompt"},
    {"patch --model {F}/good --clean a --corrupted b --answer x --wrong y --layers ''", 2, "--layers: is empty, which names no layer"},
    {"patch --model {F}/good --prompts {F}/lying", 2, "pair 1 (line 1): no corrupted prompt"},
    {"patch --model {F}/good --clean a --corrupted b --answer x --wrong y --what nope", 2, "\"nope\" is not one of resid_pre"},
    // lens, attribute, compose: the research toolbox's readings of a model (cli/lens_command.cpp, ...)
    {"lens --model {F}/dir --text hi", 1, "missing config.json"},
    {"lens --model {F}/lying-weights --text hi", 1, "model.safetensors: header length"},
    {"lens --model {F}/good --text hi --out {F}/dir", 1, "cannot open for writing"},
    {"lens --model {F}/good --ids 99999999", 2, "outside the vocabulary"},
    {"attribute --model {F}/empty-weights --text hi --answer '#1'", 1, "less than the 8-byte header length"},
    {"attribute --model {F}/good --text hi --answer '#1' --prompts {F}/lying", 2, "leave out --text"},
    {"attribute --model {F}/good --prompts {F}/dir --answer '#1'", 1, "directory"},
    {"attribute --model {F}/good --prompts {F}/empty --answer '#1'", 2, "no prompt"},
    {"compose --model {F}/empty-config", 1, "config.json: not valid JSON"},
    {"compose --model {F}/good --ov-circuit 9.9", 2, "layer 9"},
    {"compose --model {F}/good --threshold nan", 2, "--threshold: must be a number from 0 to 1, got nan"},
    // export --model, --gguf (issue 14; {F}/good is attention-only, which llama.cpp cannot run)
    {"export --gguf {F}/out.gguf --model {F}/empty", 1, "not a directory"},
    {"export --gguf {F}/out.gguf --model {F}/fifo.gguf", 2, "{F}/fifo.gguf is a GGUF file already: export writes one from"},
    {"export --gguf {F}/out.gguf --model {F}/lying-weights", 1, "model.safetensors: header length"},
    {"export --gguf {F}/out.gguf --model {F}/good", 1, "an attention-only model has no llama.cpp architecture"},
    {"export --gguf {F}/out.gguf --model {F}/good --dtype q4", 2, "--dtype: q4 not in {f32,f16,bf16}"},
    // feedback list --db (an empty file is an empty SQLite database)
    {"feedback list --db {F}/dir", 1, "Cannot open the feedback database"},
    {"feedback list --db {F}/lying", 1, "file is not a database"},
    {"feedback list --db {F}/empty --limit 0", 2, "--limit"},
    // class: its database (never written here: the fixtures stay as they are)
    {"class create Period --db {F}/dir", 1, "Cannot open the class database"},
    {"class show ABCDEF --db {F}/lying", 1, "file is not a database"},
    {"class show ABCDEF --db {F}/empty --format xml", 2, "--format"},
    {"class delete ABCDEF --db {F}/no-such.db --yes", 1, "No database at"},
    {"class create Period --db {F}/dir --passphrase-file {F}/no-such-file", 1, "Cannot read the passphrase file"},
    // cache and intervene: the research toolbox's model, files and options
    {"cache --model {F}/lying-weights --text hi --hooks '*' --out {F}/c.safetensors", 1, "model.safetensors: header length"},
    {"cache --model {F}/good --text hi --hooks '*' --out {F}/dir", 1, "cannot open for writing"},
    {"cache --model {F}/good --prompts {F}/lying --hooks '*' --out {F}/c.safetensors", 2, "line 1"},
    {"cache --model {F}/good --prompts {F}/dir --hooks '*' --out {F}/c.safetensors", 1, "directory"},
    {"cache --model {F}/good --text hi --hooks 'hook_nothing' --out {F}/c.safetensors", 2, "is not a hook name"},
    {"cache --model {F}/good --ids 99999999 --hooks '*' --out {F}/c.safetensors", 2, "outside the vocabulary"},
    {"intervene --model {F}/good --text hi --steer 0:1:{F}/lying", 2, "bytes; a steering vector is"},
    {"intervene --model {F}/good --text hi --steer 0:1:{F}/dir", 1, "directory"},
    {"intervene --model {F}/good --text hi --steer 0:1:{F}/empty", 2, "bytes; a steering vector is"},
    {"intervene --model {F}/dir --text hi --ablate 0.0", 1, "missing config.json"},
};

std::string expand(std::string s, const std::string& root) {
  for (std::size_t at; (at = s.find("{F}")) != std::string::npos;) s.replace(at, 3, root);
  return s;
}

}  // namespace

// The rows in kShards interleaved shards, each its own ctest entry: run whole, the table took
// 100 s under ASan, often last, with one core idle beside it.
constexpr int kShards = 6;
class CliBadInputRows : public ::testing::TestWithParam<int> {};

TEST_P(CliBadInputRows, EveryRowEndsOnTheErrorPathWithExitOneOrTwo) {
  const std::string root = fixtures().root.string();
  for (std::size_t i = std::size_t(GetParam()); i < kRows.size(); i += kShards) {
    const Row& row = kRows[i];
    const std::string args = expand(row.args, root);
    SCOPED_TRACE("headlab " + args);
    if (kSanitized && row.limit_kb > 0 && needs_the_cap(row)) continue;
    CommandResult r = run_headlab(args, kSanitized ? 0 : row.limit_kb);
    EXPECT_EQ(r.exit_code, row.exit_code) << r.out;
    EXPECT_NE(r.out.find("headlab: error: "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(expand(row.message, root)), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("terminate called"), std::string::npos) << r.out;
  }
}
INSTANTIATE_TEST_SUITE_P(Shard, CliBadInputRows, ::testing::Range(0, kShards));

// Every subcommand `headlab --help` lists has rows above.
TEST(CliBadInput, TheTableCoversEverySubcommand) {
  CommandResult help = run_headlab("--help", 0);
  ASSERT_EQ(help.exit_code, 0) << help.out;
  const std::size_t list = help.out.find("Subcommands:");
  ASSERT_NE(list, std::string::npos) << help.out;
  std::vector<std::string> listed;
  std::size_t at = help.out.find('\n', list);
  while (at != std::string::npos && at + 1 < help.out.size()) {
    const std::size_t end = help.out.find('\n', at + 1);
    std::string line = help.out.substr(at + 1, end == std::string::npos ? std::string::npos : end - at - 1);
    at = end;
    const std::size_t first = line.find_first_not_of(' ');
    if (first == std::string::npos || first == 0) continue;
    listed.push_back(line.substr(first, line.find(' ', first) - first));
  }
  ASSERT_FALSE(listed.empty()) << help.out;
  for (const std::string& sub : listed) {
    bool covered = false;
    for (const Row& row : kRows) covered |= row.args.compare(0, sub.size() + 1, sub + " ") == 0;
    EXPECT_TRUE(covered) << "no row feeds `headlab " << sub << "` bad input";
  }
}

// No subcommand writes over what it reads (cli/output_guard.h): an output that is one of the
// model's files, the text file, a symlink to a model file, or another output is refused with
// exit 2 before anything runs, and every input keeps its bytes. A fresh path is still written.
TEST(CliOutputs, AnOutputThatIsOneOfTheInputsIsRefusedAndEveryInputKeepsItsBytes) {
  const fs::path dir = fs::path(HEADLAB_BINARY_DIR) / ("tmp_output_guard_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const fs::path m = dir / "tiny";
  write_model(m, tiny_config());
  std::ofstream(dir / "text.txt") << "the cat sat on the mat and the dog sat on the log";
  fs::create_symlink(m / "vocab.json", dir / "link.json");
  auto bytes = [](const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  std::vector<std::pair<fs::path, std::string>> before;
  for (const fs::path& p : {m / "config.json", m / "model.safetensors", m / "vocab.json", dir / "text.txt"}) before.push_back({p, bytes(p)});
  const std::string M = m.string(), D = dir.string();
  const std::vector<std::pair<std::string, std::string>> rows = {
      {"export --model " + M + " --gguf " + M + "/model.safetensors", "--gguf " + M + "/model.safetensors is the file that --model reads"},
      {"cache --model " + M + " --text hi --hooks hook_embed --out " + M + "/model.safetensors", "that --model reads"},
      {"run --model " + M + " --text hi --out " + M + "/config.json", "that --model reads"},
      {"scan --model " + M + " --text-file " + D + "/text.txt --out " + D + "/text.txt", "the file that --text-file reads"},
      {"run --model " + M + " --text hi --out " + D + "/link.json", M + "/vocab.json, a file that --model reads"},
      {"run --model " + M + " --text hi --layer 0 --head 0 --out " + D + "/same --save-svg " + D + "/same", "both write"},
  };
  for (const auto& [args, says] : rows) {
    SCOPED_TRACE("headlab " + args);
    CommandResult r = run_headlab(args, 0);
    EXPECT_EQ(r.exit_code, 2) << r.out;
    EXPECT_NE(r.out.find(says), std::string::npos) << r.out;
    if (says != "both write") EXPECT_NE(r.out.find("Write to another path"), std::string::npos) << r.out;
  }
  for (const auto& [p, b] : before) EXPECT_EQ(bytes(p), b) << p << " was changed";
  EXPECT_FALSE(fs::exists(dir / "same"));
  CommandResult fresh = run_headlab("run --model " + M + " --text hi --out " + D + "/fresh.txt", 0);
  EXPECT_EQ(fresh.exit_code, 0) << fresh.out;
  EXPECT_GT(fs::file_size(dir / "fresh.txt"), 0u);
  // an output written before is written again; a text that happens to name the folder is a text
  CommandResult again = run_headlab("run --model " + M + " --text " + D + " --out " + D + "/fresh.txt", 0);
  EXPECT_EQ(again.exit_code, 0) << again.out;
  fs::remove_all(dir);
}

// Output the system refuses (a full disk: /dev/full) is an error with exit 1 for every command
// that prints, not a silent exit 0 (heads, tokenize and info said nothing).
TEST(CliOutputs, AStandardOutputThatCannotBeWrittenIsAnError) {
  const std::string tiny = kTiny.string();
  for (const std::string& args : {std::string("heads"), "tokenize --model " + tiny + " --text hi", "info --model " + tiny,
                                 "run --model " + tiny + " --text hi"}) {
    SCOPED_TRACE("headlab " + args);
    CommandResult r = headlab::testing::command_run("timeout 60 " + std::string(HEADLAB_BINARY_DIR) + "/headlab " + args +
                                                    " 2>&1 >/dev/full");
    EXPECT_EQ(r.exit_code, 1) << r.out;
    EXPECT_NE(r.out.find("headlab: error: writing the output failed"), std::string::npos) << r.out;
  }
}
