// cli/run_command.cpp — `headlab run`: a model on a text or on token ids; prints the tokens,
// the attention pattern(s) and the top next-token predictions, as a table or as JSON. An
// adapter over analysis/run_text.h, the pipeline POST /api/model/run runs too; the JSON is the
// API's answer (docs/api.md), written by the server's codec:
//   {"tokens": [{"id", "text", "begin", "end"}], "n_layer", "n_head",
//    "heads": [{"layer", "head", "pattern": [query][key 0..query]}], "truncated",
//    "top_next": [position][{"id", "text", "prob", "logit"}], "token_loss", "loss",
//    "logits": [position][vocab]  (with --logits, which needs --format json)}
// "heads" holds every head unless --layer / --head choose. The codec rounds every number but
// the logits to 5 decimals (a weight under 0.000005 is 0.0); the table prints 2 (patterns), 4 (p).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include <unistd.h>

#include "analysis/run_text.h"
#include "cli/commands.h"
#include "cli/config_note.h"
#include "cli/dtype_option.h"
#include "cli/steer_option.h"
#include "cli/text_or_ids.h"  // add_bos_flags
#include "cli/whole_number.h"
#include "cli/pattern_svg.h"
#include "formats/model_files.h"
#include "tokenizer/bpe_tokenizer.h"
#include "formats/hf/checkpoint.h"
#include "model/config.h"
#include "model/forward.h"
#include "model/head_range.h"
#include "tokenizer/unicode.h"
#include "server/api/model_codec.h"
#include "server/model_service/model_views.h"

namespace headlab::cli {
namespace {

struct RunOptions {
  std::string model;
  std::string dtype = "auto";
  std::string compute = "f32";
  bool no_cache = false;
  std::string text;
  std::string ids;
  std::optional<bool> bos;  // --bos / --no-bos; unset: the family's default (ModelConfig::default_prepend_bos)
  int layer = -1;
  int head = -1;
  std::string format = "table";
  std::string out;
  bool logits = false;
  bool no_predictions = false;  // --no-predictions: JSON without them; the forward stops at the last layer asked
  int top = 5;
  bool truncate = false;
  std::string save_svg;
  SteerOptions steering;  // --steer, --steer-prompts, --steer-from (the research toolbox)
};

// Output longer than this goes to --out or a redirection, not to a terminal.
constexpr std::size_t kMaxScreenBytes = 64 * 1024;

// The table: the tokens, what comes after the last one, and the chosen heads' patterns.
std::string run_table(const analysis::RunInput& in, const analysis::RunReport& r, const model::BpeTokenizer* tok,
                      const model::ModelConfig& c, bool head_chosen, bool with_bos) {
  std::ostringstream out;
  const int T = r.T;
  out << T << " tokens" << (with_bos ? " (BOS first)" : "") << ":";
  for (int t = 0; t < T; t++)
    out << "  " << t << ":" << token_label_for_table(tok, in.tokens[t].id) << "(" << in.tokens[t].id << ")";
  out << "\n\nTop next-token predictions after the last token:\n";
  for (const analysis::Prediction& p : r.outcome.top_next.back()) {
    char buf[128];
    std::snprintf(buf, sizeof buf, "  %6d  %-20s  p = %.4f  logit %.3f\n", p.id, token_label_for_table(tok, p.id).c_str(), p.prob,
                  p.logit);
    out << buf;
  }
  if (!head_chosen) {
    out << "\nPass --layer L --head H to print a head's pattern (or --format json --out FILE for all "
        << c.n_layer * c.n_head << " heads).\n";
    return out.str();
  }
  for (const analysis::HeadViews& h : r.heads) {
    out << "\nPattern of layer " << h.layer << ", head " << h.head
        << " (rows: queries, columns: keys; later keys are masked):\n";
    for (int t = 0; t < T; t++) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%4d ", t);
      out << buf;
      const float* row = h.pattern.data() + model::ActivationRecord::packed_offset(t);
      for (int k = 0; k <= t; k++) {
        std::snprintf(buf, sizeof buf, " %.2f", row[k]);
        out << buf;
      }
      out << '\n';
    }
  }
  return out.str();
}

// The chosen head's pattern (T, T) as an SVG grid, later keys hatched as the mask hides them.
int save_svg(const RunOptions& o, const analysis::RunInput& in, const analysis::HeadViews& h,
             const model::BpeTokenizer* tok) {
  const int T = static_cast<int>(in.tokens.size());
  std::vector<std::string> labels;
  for (int t = 0; t < T; t++) labels.push_back(token_label_for_table(tok, in.tokens[t].id));
  std::vector<double> weights(std::size_t(T) * T, 0.0);
  std::vector<bool> masked(std::size_t(T) * T, false);
  for (int t = 0; t < T; t++)
    for (int k = 0; k < T; k++) {
      if (k <= t) weights[std::size_t(t) * T + k] = h.pattern[model::ActivationRecord::packed_offset(t) + k];
      else masked[std::size_t(t) * T + k] = true;
    }
  const std::string title = "Layer " + std::to_string(h.layer) + ", head " + std::to_string(h.head) + " of " +
                            std::filesystem::path(o.model).filename().string();
  if (std::string err = write_text_file(o.save_svg, pattern_svg(labels, weights, masked, title)); !err.empty())
    return print_error(err);
  std::fprintf(stderr, "headlab: wrote the grid of layer %d, head %d to %s\n", h.layer, h.head, o.save_svg.c_str());
  return 0;
}

// A usage error (exit 2): what the user typed cannot run, whatever the model's files hold.
bool is_usage_error(const Error& e) {
  return e.code == ErrorCode::invalid_argument || e.code == ErrorCode::too_long;
}

int run_run(const RunOptions& o) {
  if (o.text.empty() == o.ids.empty()) return print_error("give exactly one of --text and --ids (an empty one counts as none: the input needs a token)", 2);
  if (o.logits && o.format != "json")
    return print_error("--logits needs --format json: the table has no place for [position][vocab] logits", 2);
  if (o.no_predictions && (o.format != "json" || o.logits))
    return print_error("--no-predictions needs --format json and no --logits: the table shows what comes next, and "
                       "the logits are the predictions",
                       2);
  auto params = model::model_load(
      o.model, {.dtype = dtype_choice(o.dtype), .compute = compute_choice(o.compute), .cache = !o.no_cache});
  if (!params) return print_error(params.error().message);
  dtype_note(*params, o.dtype, o.compute);
  config_note(o.model);
  const model::ModelConfig& c = params->config;
  std::unique_ptr<model::BpeTokenizer> tok;
  if (auto t = model::model_tokenizer_load(o.model)) {
    tok = std::make_unique<model::BpeTokenizer>(std::move(*t));
  } else if (!o.text.empty() || t.error().code != ErrorCode::not_found) {
    return print_error(t.error().message);
  }
  if (tok)
    if (Status fits = model::config_check_tokenizer(c, tok->vocab_size(), o.model); !fits)
      return print_error(fits.error().message);
  if (o.layer >= 0)
    if (Status s = model::check_layer(c, o.layer); !s) return print_error(s.error().message, 2);
  if (o.head >= 0)
    if (Status s = model::check_head(c, o.head); !s) return print_error(s.error().message, 2);
  if (!o.save_svg.empty() && (o.layer < 0 || o.head < 0))
    return print_error("--save-svg draws one head: choose it with --layer L --head H", 2);

  analysis::RunInputOptions io;
  io.bos = o.bos;  // unset: the family's default
  io.truncate = o.truncate;
  io.truncate_hint = "pass --truncate";
  Result<analysis::RunInput> in;
  if (!o.text.empty()) {
    in = analysis::run_input_from_text(*tok, c, o.text, io);
  } else {
    auto ids = parse_id_list(o.ids, "--ids");
    if (!ids) return print_error(ids.error().message, 2);
    in = analysis::run_input_from_ids(tok.get(), c, std::move(*ids), io);
  }
  if (!in) return print_error(in.error().message, is_usage_error(in.error()) ? 2 : 1);
  const bool with_bos = o.bos.value_or(c.default_prepend_bos());

  // JSON carries every head unless --layer / --head choose; the table only chosen ones.
  const bool head_chosen = o.layer >= 0 || o.head >= 0;
  analysis::RunRequest rq;
  if (o.format == "json" || head_chosen)
    for (int l = 0; l < c.n_layer; l++)
      for (int h = 0; h < c.n_head; h++)
        if ((o.layer < 0 || o.layer == l) && (o.head < 0 || o.head == h)) rq.heads.push_back({l, h});
  rq.top_k = o.top;
  if (o.format == "table") rq.top_next_from = static_cast<int>(in->tokens.size()) - 1;  // the table shows the last
  rq.logits = o.logits;
  model::Workspace ws;
  const std::vector<int> ids = in->ids();
  // steering changes the run (and so every view and prediction printed)
  auto steering = steering_from_options(o.steering, *params, tok.get(), o.bos, ws);
  if (!steering) return print_error(steering.error().message, is_usage_error(steering.error()) ? 2 : 1);
  for (const research::Steering& st : *steering)
    if (auto s = research::steering_reaches(st, static_cast<int>(ids.size())); !s)
      return print_error("--steer-from: " + s.error().message, 2);
  model::ForwardHooks steer_hooks = research::steering_hooks(c, *steering);
  if (!steering->empty()) rq.hooks = &steer_hooks;
  // Without predictions nothing reads past the last layer asked for: the forward stops there
  // (the server's POST /api/model/run "predictions": false, the same steps).
  auto run = [&]() -> Result<analysis::RunReport> {
    if (!o.no_predictions) return analysis::run_model(*params, tok.get(), ids, rq, ws);
    auto opt = analysis::run_forward_options(c, rq);
    if (!opt) return tl::unexpected(opt.error());
    opt->logits = false;
    int last = -1;
    for (const auto& h : rq.heads) last = std::max(last, h.layer);
    opt->stop_at_layer = last + 1;
    model::ForwardOutput out;
    if (Status s = model::forward(*params, ids, *opt, out, ws); !s) return tl::unexpected(s.error());
    return analysis::run_report(*params, tok.get(), std::span<const int>(), rq, std::move(out));
  };
  auto report = run();
  if (!report) return print_error(report.error().message);

  if (!o.save_svg.empty())
    if (int rc = save_svg(o, *in, report->heads.front(), tok.get()); rc != 0) return rc;
  std::string text;
  if (o.format == "json") {
    // the API's answer (docs/api.md, POST /api/model/run), written by the server's codec
    server::ModelRunResult result = server::model_run_result(*in, std::move(*report), c, rq.views, std::nullopt);
    result.predictions = !o.no_predictions;
    text = server::encode_model_run(result) + '\n';
  } else {
    text = run_table(*in, *report, tok.get(), c, head_chosen, with_bos);
  }

  if (!o.out.empty()) {
    std::ofstream f(o.out, std::ios::binary);
    if (!f) return print_error(cannot_write(o.out));
    f << text;
    f.close();
    if (!f) return print_error(o.out + ": write failed");
    std::fprintf(stderr, "headlab: wrote %zu bytes to %s\n", text.size(), o.out.c_str());
    return 0;
  }
  // Only a terminal is protected from a flood; a pipe or a file takes any length.
  if (text.size() > kMaxScreenBytes && ::isatty(STDOUT_FILENO))
    return print_error("the output is " + std::to_string(text.size() / 1024) +
                           " KB, too long for the screen: pass --out FILE (or redirect the output), or choose a head "
                           "with --layer and --head",
                       2);
  std::cout << text;
  return std::cout.flush() ? 0 : print_error("writing the output failed");
}

}  // namespace

void add_run_command(CLI::App& app, int& exit_code) {
  auto opts = std::make_shared<RunOptions>();
  CLI::App* cmd = app.add_subcommand(
      "run",
      "Run a model on a text and show its tokens, where its heads look and what it predicts\n"
      "next. The model is a Hugging Face folder of the GPT-2, GPT-NeoX, Llama, Mistral,\n"
      "Qwen 2/3 or Gemma 2/3 family (config.json, model.safetensors or its shards, and\n"
      "tokenizer.json or vocab.json + merges.txt), or a .gguf file. headlab never downloads:\n"
      "bring the model.\n\n"
      "The BOS token (bos_token_id) is put first by the family's default, TransformerLens's rule:\n"
      "on for GPT-2, Llama, Mistral and Gemma (heads that park on the first token need it), off\n"
      "for GPT-NeoX and Qwen 2/3, whose own tokenizers never add one. --bos or --no-bos decides\n"
      "instead.\n\n"
      "--format json writes the API's answer (docs/api.md, POST /api/model/run): its patterns,\n"
      "probabilities, logits of top_next and losses are rounded to 5 decimals (a weight under\n"
      "0.000005 prints as 0.0); --logits adds every logit unrounded. The table prints patterns\n"
      "to 2 decimals and probabilities to 4.\n\n"
      "Examples:\n"
      "  headlab run --model models/gpt2 --text \"The cat sat on the\" --layer 5 --head 1\n"
      "  headlab run --model models/gpt2 --ids \"464 3797 3332\" --no-bos --format json --out run.json\n"
      "  headlab run --model models/headlab-tiny --text \"the cat sat on the mat\" --layer 0 --head 3 --save-svg head.svg\n"
      "  headlab run --model models/gpt2 --text \"I think dogs are\" --steer-prompts '6:4: Love: Hate'   (steering: headlab intervene --help)");
  cmd->add_option("--model", opts->model,
                  "A Hugging Face folder (GPT-2, GPT-NeoX, Llama, Mistral, Qwen 2/3, Gemma 2/3) or a .gguf file")
      ->required();
  add_dtype_option(cmd, opts->dtype);
  add_compute_option(cmd, opts->compute);
  add_cache_option(cmd, opts->no_cache);
  cmd->add_option("--text", opts->text, "The input text");
  cmd->add_option("--ids", opts->ids, "The input as token ids, separated by commas or spaces");
  add_bos_flags(cmd, opts->bos,
                "--bos puts the model's BOS token (bos_token_id) first, --no-bos leaves it out; neither: the family's "
                "default (on for GPT-2, Llama, Mistral, Gemma; off for GPT-NeoX, Qwen 2/3)");
  cmd->add_option("--layer", opts->layer, "Only this layer's heads")->check(whole_number_from(0));
  cmd->add_option("--head", opts->head, "Only this head (in each chosen layer)")->check(whole_number_from(0));
  cmd->add_option("--format", opts->format, "table or json")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  cmd->add_option("--out", opts->out, "Write the output to this file (a terminal takes at most 64 KB; a pipe or a redirection any length)");
  cmd->add_flag("--logits", opts->logits,
                "With --format json (refused without it): add \"logits\": [position][vocab], unrounded");
  cmd->add_flag("--no-predictions", opts->no_predictions,
                "With --format json: leave out top_next, token_loss and loss; the forward then stops after the "
                "last layer of the heads printed (--layer)");
  cmd->add_option("--top", opts->top, "How many next-token predictions to list")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  cmd->add_flag("--truncate", opts->truncate, "Keep BOS and the last tokens of a longer input, n_ctx in all");
  add_steer_options(cmd, opts->steering);
  cmd->add_option("--save-svg", opts->save_svg, "Also save the chosen head's grid (--layer, --head) as an SVG picture");
  cmd->callback([opts, &exit_code] { exit_code = run_run(*opts); });
}

}  // namespace headlab::cli
