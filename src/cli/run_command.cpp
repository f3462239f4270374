// cli/run_command.cpp — `headlab run`: a model on a text or on token ids; prints the tokens,
// the attention pattern(s) and the top next-token predictions, as a table or as JSON:
//   {"tokens": [{"id", "text"}], "layers": [..], "heads": [..],
//    "pattern": [layer][head][query][key], "top_next": [{"id", "text", "prob", "logit"}],
//    "logits": [position][vocab]  (with --logits)}
// "pattern" holds the layers and heads listed in "layers" and "heads" (all unless --layer /
// --head choose), each row over every key with 0 for the masked (later) keys.
#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/commands.h"
#include "cli/pattern_svg.h"
#include "model/bpe_tokenizer.h"
#include "model/checkpoint.h"
#include "model/forward.h"
#include "model/unicode.h"

namespace headlab::cli {
namespace {

struct RunOptions {
  std::string model;
  std::string text;
  std::string ids;
  bool bos = false;
  int layer = -1;
  int head = -1;
  std::string format = "table";
  std::string out;
  bool logits = false;
  int top = 5;
  bool truncate = false;
  std::string save_svg;
};

// Output longer than this goes to --out, not the screen.
constexpr std::size_t kMaxScreenBytes = 64 * 1024;

std::string token_label(const model::BpeTokenizer* tok, int id) {
  if (!tok) return "#" + std::to_string(id);
  std::string b = tok->token_bytes(id);
  std::string s;
  for (char c : b) {
    if (c == '\n') s += "\\n";
    else if (c == '\t') s += "\\t";
    else s.push_back(c);
  }
  return model::utf8_find_invalid(s) >= 0 ? "#" + std::to_string(id) : s;
}

Result<std::vector<int>> parse_ids(const std::string& text) {
  std::vector<int> ids;
  std::istringstream in(text);
  std::string word;
  while (in >> word) {
    std::size_t used = 0;
    long v = -1;
    try {
      v = std::stol(word, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != word.size() || v < 0 || v > 1 << 30)
      return make_error(ErrorCode::invalid_argument, "--ids: \"" + word + "\" is not a token id (a non-negative integer)");
    ids.push_back(static_cast<int>(v));
  }
  if (ids.empty()) return make_error(ErrorCode::invalid_argument, "--ids: no token ids given");
  return ids;
}

int run_run(const RunOptions& o) {
  if (o.text.empty() == o.ids.empty()) return print_error("give exactly one of --text and --ids", 2);
  auto params = model::checkpoint_load(o.model);
  if (!params) return print_error(params.error().message);
  const model::ModelConfig& c = params->config;
  std::unique_ptr<model::BpeTokenizer> tok;
  if (auto t = model::BpeTokenizer::load(o.model)) {
    tok = std::make_unique<model::BpeTokenizer>(std::move(*t));
  } else if (!o.text.empty() || t.error().code != ErrorCode::not_found) {
    return print_error(t.error().message);
  }
  if (tok && tok->vocab_size() > c.vocab_size)
    return print_error(o.model + ": the tokenizer has " + std::to_string(tok->vocab_size()) +
                       " tokens but config.json says vocab_size " + std::to_string(c.vocab_size));

  std::vector<int> ids;
  if (!o.text.empty()) {
    auto r = tok->encode_ids(o.text);
    if (!r) return print_error(r.error().message);
    ids = std::move(*r);
  } else {
    auto r = parse_ids(o.ids);
    if (!r) return print_error(r.error().message, 2);
    ids = std::move(*r);
  }
  if (o.bos) ids.insert(ids.begin(), c.bos_token_id);
  if (ids.empty()) return print_error("the text has no tokens", 2);
  if (static_cast<int>(ids.size()) > c.n_ctx) {
    if (!o.truncate)
      return print_error("the input is " + std::to_string(ids.size()) + " tokens, longer than the model's n_ctx = " +
                         std::to_string(c.n_ctx) + "; pass --truncate to keep the last " + std::to_string(c.n_ctx) +
                         " tokens");
    ids.erase(ids.begin(), ids.end() - c.n_ctx);
  }
  if (o.layer >= c.n_layer)
    return print_error("--layer " + std::to_string(o.layer) + " does not exist: the model has layers 0.." +
                           std::to_string(c.n_layer - 1), 2);
  if (o.head >= c.n_head)
    return print_error("--head " + std::to_string(o.head) + " does not exist: the model has heads 0.." +
                           std::to_string(c.n_head - 1), 2);

  if (!o.save_svg.empty() && (o.layer < 0 || o.head < 0))
    return print_error("--save-svg draws one head: choose it with --layer L --head H", 2);

  model::ForwardOptions fo;
  fo.record.pattern = true;
  model::ForwardOutput fwd;
  model::Workspace ws;
  if (Status s = model::forward(*params, ids, fo, fwd, ws); !s) return print_error(s.error().message);
  const int T = fwd.T, V = fwd.V;

  std::vector<int> layers, heads;
  for (int l = 0; l < c.n_layer; l++)
    if (o.layer < 0 || o.layer == l) layers.push_back(l);
  for (int h = 0; h < c.n_head; h++)
    if (o.head < 0 || o.head == h) heads.push_back(h);

  // top next-token predictions after the last position
  const float* last = fwd.logits.data() + std::size_t(T - 1) * V;
  float maxv = last[0];
  for (int v = 1; v < V; v++) maxv = std::max(maxv, last[v]);
  double sum = 0;
  for (int v = 0; v < V; v++) sum += std::exp(double(last[v] - maxv));
  std::vector<int> best = model::top_k(last, V, o.top);

  std::ostringstream out;
  if (o.format == "json") {
    nlohmann::json j;
    nlohmann::json toks = nlohmann::json::array();
    for (int id : ids) toks.push_back({{"id", id}, {"text", tok ? tok->token_bytes(id) : std::string()}});
    j["tokens"] = toks;
    j["layers"] = layers;
    j["heads"] = heads;
    nlohmann::json pattern = nlohmann::json::array();
    for (int l : layers) {
      nlohmann::json per_head = nlohmann::json::array();
      for (int h : heads) {
        nlohmann::json rows = nlohmann::json::array();
        for (int t = 0; t < T; t++) {
          std::vector<float> row(T, 0.0f);
          const float* r = fwd.record.pattern_row(l, h, t);
          std::copy(r, r + t + 1, row.begin());
          rows.push_back(row);
        }
        per_head.push_back(std::move(rows));
      }
      pattern.push_back(std::move(per_head));
    }
    j["pattern"] = std::move(pattern);
    nlohmann::json top = nlohmann::json::array();
    for (int id : best)
      top.push_back({{"id", id},
                     {"text", tok ? tok->token_bytes(id) : std::string()},
                     {"prob", std::exp(double(last[id] - maxv)) / sum},
                     {"logit", last[id]}});
    j["top_next"] = std::move(top);
    if (o.logits) {
      nlohmann::json lg = nlohmann::json::array();
      for (int t = 0; t < T; t++)
        lg.push_back(std::vector<float>(fwd.logits.begin() + std::size_t(t) * V, fwd.logits.begin() + std::size_t(t + 1) * V));
      j["logits"] = std::move(lg);
    }
    // token texts may end inside a multi-byte character: those bytes become U+FFFD
    out << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
  } else {
    out << T << " tokens:";
    for (int t = 0; t < T; t++) out << "  " << t << ":" << token_label(tok.get(), ids[t]) << "(" << ids[t] << ")";
    out << "\n\nTop next-token predictions after the last token:\n";
    for (int id : best) {
      char buf[128];
      std::snprintf(buf, sizeof buf, "  %6d  %-20s  p = %.4f  logit %.3f\n", id, token_label(tok.get(), id).c_str(),
                    std::exp(double(last[id] - maxv)) / sum, last[id]);
      out << buf;
    }
    if (o.layer < 0 && o.head < 0) {
      out << "\nPass --layer L --head H to print a head's pattern (or --format json --out FILE for all "
          << c.n_layer * c.n_head << " heads).\n";
    } else {
      for (int l : layers)
        for (int h : heads) {
          out << "\nPattern of layer " << l << ", head " << h
              << " (rows: queries, columns: keys; later keys are masked):\n";
          for (int t = 0; t < T; t++) {
            char buf[32];
            std::snprintf(buf, sizeof buf, "%4d ", t);
            out << buf;
            for (int k = 0; k <= t; k++) {
              std::snprintf(buf, sizeof buf, " %.2f", fwd.record.pattern_at(l, h, t, k));
              out << buf;
            }
            out << '\n';
          }
        }
    }
  }

  if (!o.save_svg.empty()) {
    // the chosen head's pattern (T, T), later keys hatched as the causal mask hides them
    std::vector<std::string> labels;
    for (int t = 0; t < T; t++) labels.push_back(token_label(tok.get(), ids[t]));
    std::vector<double> weights(std::size_t(T) * T, 0.0);
    std::vector<bool> masked(std::size_t(T) * T, false);
    for (int t = 0; t < T; t++)
      for (int k = 0; k < T; k++) {
        if (k <= t) weights[std::size_t(t) * T + k] = fwd.record.pattern_at(o.layer, o.head, t, k);
        else masked[std::size_t(t) * T + k] = true;
      }
    const std::string title = "Layer " + std::to_string(o.layer) + ", head " + std::to_string(o.head) + " of " +
                              std::filesystem::path(o.model).filename().string();
    if (std::string err = write_text_file(o.save_svg, pattern_svg(labels, weights, masked, title)); !err.empty())
      return print_error(err);
    std::fprintf(stderr, "headlab: wrote the grid of layer %d, head %d to %s\n", o.layer, o.head, o.save_svg.c_str());
  }

  const std::string text = out.str();
  if (!o.out.empty()) {
    std::ofstream f(o.out, std::ios::binary);
    if (!f) return print_error(o.out + ": cannot open for writing");
    f << text;
    f.close();
    if (!f) return print_error(o.out + ": write failed");
    std::fprintf(stderr, "headlab: wrote %zu bytes to %s\n", text.size(), o.out.c_str());
    return 0;
  }
  if (text.size() > kMaxScreenBytes)
    return print_error("the output is " + std::to_string(text.size() / 1024) +
                           " KB, too long for the screen: pass --out FILE, or choose a head with --layer and --head",
                       2);
  std::cout << text;
  return 0;
}

}  // namespace

void add_run_command(CLI::App& app, int& exit_code) {
  auto opts = std::make_shared<RunOptions>();
  CLI::App* cmd = app.add_subcommand(
      "run",
      "Run a GPT-2-family model (a Hugging Face directory: config.json, model.safetensors,\n"
      "vocab.json + merges.txt) on a text and show its tokens, where its heads look and what\n"
      "it predicts next. headlab never downloads: bring the directory.\n\n"
      "Examples:\n"
      "  headlab run --model models/gpt2 --text \"The cat sat on the\" --layer 5 --head 1\n"
      "  headlab run --model models/gpt2 --ids \"464 3797 3332\" --bos --format json --out run.json\n"
      "  headlab run --model models/headlab-tiny --text \"the cat sat on the mat\" --layer 0 --head 3 --save-svg head.svg");
  cmd->add_option("--model", opts->model, "Model directory (Hugging Face GPT-2 layout)")->required();
  cmd->add_option("--text", opts->text, "The input text");
  cmd->add_option("--ids", opts->ids, "The input as token ids separated by spaces");
  cmd->add_flag("--bos", opts->bos, "Put the model's BOS token (bos_token_id) first");
  cmd->add_option("--layer", opts->layer, "Only this layer's heads")->check(CLI::NonNegativeNumber);
  cmd->add_option("--head", opts->head, "Only this head (in each chosen layer)")->check(CLI::NonNegativeNumber);
  cmd->add_option("--format", opts->format, "table or json")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  cmd->add_option("--out", opts->out, "Write the output to this file instead of the screen");
  cmd->add_flag("--logits", opts->logits, "With --format json: add \"logits\": [position][vocab]");
  cmd->add_option("--top", opts->top, "How many next-token predictions to list")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  cmd->add_flag("--truncate", opts->truncate, "Keep the last n_ctx tokens of a longer input");
  cmd->add_option("--save-svg", opts->save_svg, "Also save the chosen head's grid (--layer, --head) as an SVG picture");
  cmd->callback([opts, &exit_code] { exit_code = run_run(*opts); });
}

}  // namespace headlab::cli
