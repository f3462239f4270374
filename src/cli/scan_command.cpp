// cli/scan_command.cpp — `headlab scan`: reads the options and the files, calls the one
// scan pipeline (analysis/scan_text.h), and prints the report as a ranked table, CSV
// (cli/scan_format.h) or the JSON of GET /api/model/scan (server's codec).
#include <CLI/CLI.hpp>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>

#include "analysis/scan_text.h"
#include "cli/commands.h"
#include "cli/config_note.h"
#include "cli/dtype_option.h"
#include "cli/whole_number.h"
#include "cli/scan_format.h"
#include "core/sentence.h"
#include "formats/model_files.h"
#include "tokenizer/bpe_tokenizer.h"
#include "formats/hf/checkpoint.h"
#include "server/api/model_codec.h"
#include "util/file.h"

namespace headlab::cli {
namespace {

struct ScanCliOptions {
  std::string model;
  std::string dtype = "auto";
  std::string compute = "f32";
  bool no_cache = false;
  bool progress = false;  // --progress: print it even when stderr is not a terminal
  bool constructed = false;
  std::string text_file;  // natural text; default: <model>/heldout.txt
  std::string format = "table";
  std::string out;
  analysis::ScanOptions scan;
};

int emit(const ScanCliOptions& o, const analysis::ScanReport& r, const std::string& name) {
  const std::string text = o.format == "json"  ? server::encode_scan_report(r, name)
                           : o.format == "csv" ? scan_report_csv(r)
                                               : scan_report_table(r);
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

// The scan's progress on stderr: one line redrawn on a terminal; on anything else a line when
// a stage starts and at most one every 5 s within it (a log stays short).
analysis::ScanProgressFn scan_progress_printer(bool tty) {
  using Clock = std::chrono::steady_clock;
  struct State {
    const char* stage = "";
    Clock::time_point start = Clock::now(), last_line{};
  };
  auto st = std::make_shared<State>();
  return [st, tty](const analysis::ScanProgress& p) {
    const auto now = Clock::now();
    const double s = std::chrono::duration<double>(now - st->start).count();
    const bool new_stage = std::strcmp(p.stage, st->stage) != 0;
    st->stage = p.stage;
    if (tty) {
      const int width = 20, filled = p.total > 0 ? width * p.done / p.total : 0;
      std::fprintf(stderr, "\r\033[Kscan: %s %d/%d [%s%s] %.0f s", p.stage, p.done, p.total, std::string(filled, '#').c_str(),
                   std::string(width - filled, '-').c_str(), s);
      if (std::strcmp(p.stage, "copying scores") == 0 && p.done == p.total) std::fprintf(stderr, "\n");
      return;
    }
    if (new_stage || now - st->last_line >= std::chrono::seconds(5) || p.done == p.total) {
      std::fprintf(stderr, "scan: %s %d/%d, %.0f s\n", p.stage, p.done, p.total, s);
      st->last_line = now;
    }
  };
}

// Usage errors (a bad value the user gave, text too short for a window) exit 2.
int fail(const Error& e) { return print_error(e.message, e.code == ErrorCode::invalid_argument ? 2 : 1); }

int run_scan(const ScanCliOptions& o) {
  if (o.constructed == !o.model.empty())
    return print_error("give either --model DIR or --constructed", 2);
  if (o.text_file.empty() && o.constructed)
    return print_error("no natural text to scan on: give --text-file F (held-out text the model never saw)", 2);
  auto text = o.text_file.empty() ? analysis::heldout_text_read(o.model) : file_read(o.text_file);
  if (!text) {
    if (text.error().code != ErrorCode::not_found || !o.text_file.empty()) return fail(text.error());
    return print_error(text.error().message + " Or give --text-file F.", 2);
  }
  if (!core::is_valid_utf8(*text))
    return print_error((o.text_file.empty() ? analysis::heldout_path(o.model) : o.text_file) + " is not valid UTF-8 text");

  if (o.constructed) return emit(o, analysis::scan_text_constructed(*text, o.scan), "constructed heads");
  auto params = model::model_load(
      o.model, {.dtype = dtype_choice(o.dtype), .compute = compute_choice(o.compute), .cache = !o.no_cache});
  if (!params) return print_error(params.error().message);
  dtype_note(*params, o.dtype, o.compute);
  config_note(o.model);
  auto tokenizer = model::model_tokenizer_load(o.model);
  if (!tokenizer) return print_error(tokenizer.error().message);
  analysis::ScanOptions scan = o.scan;
  const bool tty = isatty(STDERR_FILENO);
  if (tty || o.progress) scan.progress = scan_progress_printer(tty);
  auto report = analysis::scan_text(*params, *tokenizer, *text, scan);
  if (!report) return fail(report.error());
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
  cmd->add_option("--model", opts->model,
                  "A Hugging Face folder (GPT-2, GPT-NeoX, Llama, Mistral, Qwen 2/3, Gemma 2/3: config.json, "
                  "model.safetensors or its shards, tokenizer.json or vocab.json + merges.txt) or a .gguf file");
  add_dtype_option(cmd, opts->dtype);
  add_compute_option(cmd, opts->compute);
  add_cache_option(cmd, opts->no_cache);
  cmd->add_flag("--progress", opts->progress,
                "Print the scan's progress to stderr even when it is not a terminal (on a terminal it always is)");
  cmd->add_flag("--constructed", opts->constructed, "Scan the five rule-built heads of lesson 1 instead");
  cmd->add_option("--text-file", opts->text_file, "Held-out natural text (default: <model>/heldout.txt)");
  cmd->add_option("--format", opts->format, "table, json (the report of GET /api/model/scan, docs/api.md) or csv")
      ->check(CLI::IsMember({"table", "json", "csv"}))
      ->capture_default_str();
  cmd->add_option("--out", opts->out, "Write to a file instead of the screen");
  // At most 1,024 each: every window and probe is a forward of every head, and the scores
  // settle within tens (2^31 probes were allocated up front and ended in the OOM killer).
  cmd->add_option("--windows", opts->scan.natural_windows, "Windows of natural text (1 to 1024)")
      ->check(whole_number_from(1, analysis::kMaxScanProbes))
      ->capture_default_str();
  cmd->add_option("--probes", opts->scan.random_probes, "Repeated random sequences (1 to 1024)")
      ->check(whole_number_from(1, analysis::kMaxScanProbes))
      ->capture_default_str();
  cmd->add_option("--window-length", opts->scan.window_length, "Tokens per probe, with BOS (0: min(n_ctx, 128))")
      ->check(whole_number_from(0))
      ->capture_default_str();
  cmd->add_option("--seed", opts->scan.seed, "Random probes' seed (0 to 18446744073709551615)")
      ->check(whole_number_u64())
      ->capture_default_str();
  cmd->callback([opts, &exit_code] { exit_code = run_scan(*opts); });
}

}  // namespace headlab::cli
