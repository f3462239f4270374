// cli/train_tokenizer_command.cpp — `headlab train-tokenizer`: learns a byte-level BPE
// vocabulary from text and writes GPT-2's vocab.json + merges.txt.
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>

#include "cli/commands.h"
#include "cli/whole_number.h"
#include "core/sentence.h"
#include "util/file.h"
#include "train/bpe_trainer.h"
#include "train/data.h"

namespace headlab::cli {
namespace {

struct TrainTokenizerOptions {
  std::vector<std::string> corpus;
  std::string out;
  bool force = false;
  int vocab_size = 4096;
  int min_frequency = 2;
  bool quiet = false;
};

int run_train_tokenizer(const TrainTokenizerOptions& o) {
  namespace fs = std::filesystem;
  std::vector<std::string> texts;
  std::size_t bytes = 0;
  for (const std::string& arg : o.corpus) {
    std::vector<std::string> files;
    std::error_code ec;
    if (fs::is_directory(arg, ec)) {
      for (const auto& e : fs::directory_iterator(arg, ec))
        if (e.is_regular_file() && e.path().extension() == ".txt") files.push_back(e.path().string());
      std::sort(files.begin(), files.end());
      if (files.empty()) return print_error("the corpus directory " + arg + " holds no .txt file");
    } else {
      files.push_back(arg);
    }
    for (const std::string& f : files) {
      auto text = file_read(f);
      if (!text) return print_error(text.error().message);
      if (!core::is_valid_utf8(*text)) return print_error("the corpus file " + f + " is not valid UTF-8 text");
      bytes += text->size();
      texts.push_back(std::move(*text));
    }
  }
  if (bytes == 0) return print_error("the corpus is empty: no text to learn a tokenizer from");
  // a model's folder: its vocab.json replaced left weights that no longer match the tokens
  if (!o.force)
    for (const char* held : {"vocab.json", "merges.txt", "tokenizer.json"}) {
      std::error_code ec;
      if (std::filesystem::exists(std::filesystem::path(o.out) / held, ec))
        return print_error("--out " + o.out + " already holds a tokenizer (" + held +
                               "): give a new folder, or --force to replace it", 2);
    }
  const auto t0 = std::chrono::steady_clock::now();
  train::BpeTrainOptions bo;
  bo.vocab_size = o.vocab_size;
  bo.min_frequency = o.min_frequency;
  auto vocab = train::bpe_train(texts, bo);
  if (!vocab) return print_error(vocab.error().message, vocab.error().code == ErrorCode::invalid_argument ? 2 : 1);
  if (Status s = train::bpe_save(*vocab, o.out); !s) return print_error(s.error().message);
  if (!o.quiet) {
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::fprintf(stderr, "learned %zu tokens (%zu merges) from %zu files, %.1f MB, in %.1f s -> %s/vocab.json, merges.txt\n",
                 vocab->tokens.size(), vocab->merges.size(), texts.size(), bytes / 1e6, secs, o.out.c_str());
    if (static_cast<int>(vocab->tokens.size()) < o.vocab_size)
      std::fprintf(stderr, "(fewer than --vocab-size %d: no pair left was seen %d times or more, --min-frequency)\n",
                   o.vocab_size, o.min_frequency);
  }
  return 0;
}

}  // namespace

void add_train_tokenizer_command(CLI::App& app, int& exit_code) {
  auto opts = std::make_shared<TrainTokenizerOptions>();
  CLI::App* cmd = app.add_subcommand(
      "train-tokenizer",
      "Learn a byte-level BPE tokenizer (GPT-2's kind) from text: start from the 256 bytes and\n"
      "merge the most frequent pair inside words until the vocabulary is full; <|endoftext|>\n"
      "comes last. Writes vocab.json and merges.txt, the files `headlab tokenize` and\n"
      "`headlab train` read.\n\n"
      "Example:\n"
      "  headlab train-tokenizer --corpus data/corpus/build/sotu --vocab-size 4096 --out /tmp/tok\n"
      "  (the built-in tokenizer was made so into models/headlab-tiny; --force replaces one already there)");
  cmd->add_option("--corpus", opts->corpus, "Text files, or directories of .txt files")->required();
  cmd->add_option("--out", opts->out, "Directory to write vocab.json and merges.txt into")->required();
  cmd->add_option("--vocab-size", opts->vocab_size, "Tokens in all, with the 256 bytes and <|endoftext|>")
      ->check(whole_number_from(257, 1 << 20))
      ->capture_default_str();
  cmd->add_option("--min-frequency", opts->min_frequency, "Stop when the best pair is seen fewer times")
      ->check(whole_number_from(1))
      ->capture_default_str();
  cmd->add_flag("--quiet", opts->quiet, "Print nothing but errors");
  cmd->add_flag("--force", opts->force, "Replace the vocab.json and merges.txt already in --out (refused without it)");
  cmd->callback([opts, &exit_code] { exit_code = run_train_tokenizer(*opts); });
}

}  // namespace headlab::cli
