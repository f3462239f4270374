// cli/scan_command.cpp — `headlab scan`: scores every head of a model (or the five
// constructed heads) with the scanner's measures and prints a ranked table, JSON or CSV.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "analysis/scanner.h"
#include "cli/commands.h"
#include "core/sentence.h"
#include "model/checkpoint.h"
#include "model/bpe_tokenizer.h"
#include "train/data.h"

namespace headlab::cli {
namespace {

struct ScanCliOptions {
  std::string model;
  bool constructed = false;
  std::string text_file;  // natural text; default: <model>/heldout.txt
  std::string format = "table";
  std::string out;
  analysis::ScanOptions scan;
};

// Words and punctuation marks as separate tokens, for the constructed heads' probes.
std::vector<std::string> split_words(const std::string& text) {
  std::vector<std::string> words;
  std::string cur;
  auto flush = [&] {
    if (!cur.empty()) words.push_back(cur), cur.clear();
  };
  for (char ch : text) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (std::isspace(c)) {
      flush();
    } else if (c < 0x80 && std::ispunct(c) && ch != '\'') {
      flush();
      words.emplace_back(1, ch);
    } else {
      cur += ch;
    }
  }
  flush();
  return words;
}

int emit(const ScanCliOptions& o, const analysis::ScanReport& r, const std::string& name) {
  std::string text = o.format == "json" ? analysis::scan_report_json(r, name)
                     : o.format == "csv" ? analysis::scan_report_csv(r)
                                         : analysis::scan_report_table(r);
  if (o.out.empty()) {
    std::cout << text;
    return 0;
  }
  std::ofstream f(o.out, std::ios::binary);
  f << text;
  if (!f) return print_error("cannot write " + o.out);
  std::fprintf(stderr, "wrote %s\n", o.out.c_str());
  return 0;
}

int run_scan(const ScanCliOptions& o) {
  namespace fs = std::filesystem;
  if (o.constructed == !o.model.empty())
    return print_error("give either --model DIR or --constructed", 2);
  std::string text_path = o.text_file;
  if (text_path.empty() && !o.model.empty() && fs::exists(fs::path(o.model) / "heldout.txt"))
    text_path = (fs::path(o.model) / "heldout.txt").string();
  if (text_path.empty())
    return print_error("no natural text to scan on: give --text-file F (held-out text the model never saw)", 2);
  auto text = train::read_text_file(text_path);
  if (!text) return print_error(text.error().message);
  if (!core::is_valid_utf8(*text)) return print_error(text_path + " is not valid UTF-8 text");

  if (o.constructed) {
    analysis::ScanReport r = analysis::scan_constructed_heads(split_words(*text), o.scan);
    return emit(o, r, "constructed heads");
  }
  auto params = model::checkpoint_load(o.model);
  if (!params) return print_error(params.error().message);
  auto tokenizer = model::BpeTokenizer::load(o.model);
  if (!tokenizer) return print_error(tokenizer.error().message);
  const auto& c = params->config;
  if (tokenizer->vocab_size() != c.vocab_size)
    return print_error("the tokenizer in " + o.model + " has " + std::to_string(tokenizer->vocab_size()) +
                       " tokens but the config says vocab_size " + std::to_string(c.vocab_size));
  auto encoded = tokenizer->encode_ids(*text);
  if (!encoded) return print_error(text_path + ": " + encoded.error().message);
  const std::vector<int>& ids = *encoded;
  std::vector<bool> is_punct(c.vocab_size, false);
  for (int id = 0; id < c.vocab_size; ++id) {
    const std::string bytes = tokenizer->token_bytes(id);
    std::string_view s = bytes;
    while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
    is_punct[id] = id != c.bos_token_id && !s.empty() && core::is_punctuation(s);
  }
  auto probes = analysis::scan_probes_build(ids, is_punct, c.vocab_size, c.bos_token_id, c.n_ctx, o.scan);
  if (!probes) return print_error(probes.error().message, 2);
  auto report = analysis::scan_model(*params, *probes);
  if (!report) return print_error(report.error().message);
  return emit(o, *report, o.model);
}

}  // namespace

void add_scan_command(CLI::App& app, int& exit_code) {
  auto opts = std::make_shared<ScanCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "scan",
      "Score every attention head with published measures, on probes built here, each next to\n"
      "its chance level: previous / current / first token on natural text, duplicate-token and\n"
      "induction on a repeated random sequence, prefix matching (Olsson et al. 2022), the OV\n"
      "copying score (Elhage et al. 2021), entropy, and the value-weighted first-token share\n"
      "(Kobayashi et al. 2020) that tells a sink from a head that reads the first token.\n"
      "Labels list every role a head passes, with its margin; a sink is its own label.\n\n"
      "Examples:\n"
      "  headlab scan --model models/headlab-tiny\n"
      "  headlab scan --model models/headlab-tiny --format json --out scan.json\n"
      "  headlab scan --constructed --text-file models/headlab-tiny/heldout.txt");
  cmd->add_option("--model", opts->model, "Model directory (config.json, model.safetensors, vocab.json, merges.txt)");
  cmd->add_flag("--constructed", opts->constructed, "Scan the five rule-built heads of lesson 1 instead");
  cmd->add_option("--text-file", opts->text_file, "Held-out natural text (default: <model>/heldout.txt)");
  cmd->add_option("--format", opts->format, "table, json or csv")
      ->check(CLI::IsMember({"table", "json", "csv"}))
      ->capture_default_str();
  cmd->add_option("--out", opts->out, "Write to a file instead of the screen");
  cmd->add_option("--windows", opts->scan.natural_windows, "Windows of natural text")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--probes", opts->scan.random_probes, "Repeated random sequences")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--window-length", opts->scan.window_length, "Tokens per probe, with BOS (0: min(n_ctx, 128))")
      ->capture_default_str();
  cmd->add_option("--seed", opts->scan.seed, "Random probes' seed")->capture_default_str();
  cmd->callback([opts, &exit_code] { exit_code = run_scan(*opts); });
}

}  // namespace headlab::cli
