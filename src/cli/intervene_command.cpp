// cli/intervene_command.cpp — `headlab intervene`: the model's next-token predictions and loss
// as it is and with heads changed (ablate / replace / block) or the residual stream steered
// (a vector, or ActAdd's difference of two prompts, at a layer's resid_pre). An adapter over
// research/intervene.h, the pipeline POST /api/model/intervene runs too; --format json writes
// the API's answer (docs/api.md): {"tokens", "baseline", "intervened", "loss_change"}, each
// outcome {"loss", "token_loss", "top_next": [position][{"id", "text", "prob", "logit"}]}.
#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include "cli/commands.h"
#include "cli/dtype_option.h"
#include "cli/steer_option.h"
#include "cli/text_or_ids.h"
#include "cli/whole_number.h"
#include "model/head_range.h"
#include "research/intervene.h"
#include "research/steering.h"
#include "server/api/model_codec.h"

namespace headlab::cli {
namespace intervene_cli {

struct InterveneOptions {
  std::string model;
  std::string dtype = "auto";
  std::string compute = "f32";
  bool no_cache = false;
  std::string text, ids;
  std::optional<bool> bos;
  bool truncate = false;
  std::vector<std::string> ablate, replace, block;
  SteerOptions steering;
  int top = 5;
  std::string format = "table";
  std::string out;
};

Error usage(const std::string& m) { return Error{ErrorCode::invalid_argument, m}; }

Result<int> whole(const std::string& s, const std::string& what, bool star_ok = false) {
  if (star_ok && s == "*") return -1;
  std::size_t used = 0;
  long v = -1;
  try {
    v = std::stol(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (s.empty() || used != s.size() || v < 0 || v > 1 << 30)
    return tl::unexpected(usage(what + ": \"" + s + "\" is not a whole number"));
  return static_cast<int>(v);
}

// "L.H" (H may be "*" where every head is allowed) and what follows a ':' ("" when none).
struct HeadSpec {
  int layer = 0, head = 0;
  std::string rest;
};
Result<HeadSpec> head_spec(const std::string& spec, const std::string& option, const char* form, bool star_ok = false) {
  const std::size_t colon = spec.find(':');
  const std::string lh = spec.substr(0, colon);
  const std::size_t dot = lh.find('.');
  if (dot == std::string::npos) return tl::unexpected(usage(option + " " + spec + ": expected " + form));
  auto l = whole(lh.substr(0, dot), option + " " + spec + ": the layer");
  if (!l) return tl::unexpected(l.error());
  auto h = whole(lh.substr(dot + 1), option + " " + spec + ": the head", star_ok);
  if (!h) return tl::unexpected(h.error());
  return HeadSpec{*l, *h, colon == std::string::npos ? "" : spec.substr(colon + 1)};
}

// The options into the pipeline's request; steering from prompts runs their forwards here.
Result<research::InterveneRequest> make_request(const InterveneOptions& o, const LoadedModel& m, model::Workspace& ws) {
  const model::ModelConfig& c = m.params.config;
  research::InterveneRequest rq;
  rq.top_k = o.top;
  for (const std::string& a : o.ablate) {
    auto s = head_spec(a, "--ablate", "L.H or L.H:mean (layer.head)");
    if (!s) return tl::unexpected(s.error());
    if (s->rest != "" && s->rest != "zero" && s->rest != "mean")
      return tl::unexpected(usage("--ablate " + a + ": the kind after ':' is zero or mean"));
    if (auto st = model::check_layer_head(c, s->layer, s->head); !st) return tl::unexpected(st.error());
    rq.interventions.ablate.push_back({s->layer, s->head, s->rest == "mean" ? model::Ablation::mean : model::Ablation::zero});
  }
  for (const std::string& r : o.replace) {
    auto s = head_spec(r, "--replace", "L.H or L.H:uniform");
    if (!s) return tl::unexpected(s.error());
    if (s->rest != "" && s->rest != "uniform")
      return tl::unexpected(usage("--replace " + r + ": the only pattern a head can be given here is uniform"));
    if (auto st = model::check_layer_head(c, s->layer, s->head); !st) return tl::unexpected(st.error());
    rq.interventions.replace.push_back({s->layer, s->head, model::PatternReplacementKind::uniform, {}});
  }
  for (const std::string& b : o.block) {
    auto s = head_spec(b, "--block", "L.H:KEY or L.*:KEY (every head of the layer)", /*star_ok=*/true);
    if (!s) return tl::unexpected(s.error());
    auto key = whole(s->rest, "--block " + b + ": the key position");
    if (!key) return tl::unexpected(key.error());
    if (auto st = model::check_layer_head(c, s->layer, s->head, /*every_head_ok=*/true); !st)
      return tl::unexpected(st.error());
    rq.interventions.block.push_back({s->layer, s->head, *key});
  }
  auto steering = steering_from_options(o.steering, m.params, m.tokenizer.get(),
                                        o.ids.empty() ? o.bos : std::optional<bool>(o.bos.value_or(false)), ws);
  if (!steering) return tl::unexpected(steering.error());
  rq.steering = std::move(*steering);
  return rq;
}

std::string csv_quote(const std::string& s) {
  std::string q = "\"";
  for (char ch : s) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return q + "\"";
}

std::string table(const analysis::RunInput& in, const research::InterveneReport& r, const model::BpeTokenizer* tok,
                  bool with_bos) {
  std::ostringstream out;
  out << r.T << " tokens" << (with_bos ? " (BOS first)" : "") << ":";
  for (int t = 0; t < r.T; t++)
    out << "  " << t << ":" << token_label_for_table(tok, in.tokens[std::size_t(t)].id) << "(" << in.tokens[std::size_t(t)].id << ")";
  char line[256];
  std::snprintf(line, sizeof line, "\n\nLoss (mean next-token cross-entropy): %.4f -> %.4f (%+.4f)\n", r.baseline.loss,
                r.intervened.loss, r.intervened.loss - r.baseline.loss);
  out << line << "\nTop next-token predictions after the last token:\n";
  std::snprintf(line, sizeof line, "  %-36s  %s\n", "baseline", "intervened");
  out << line;
  const auto& a = r.baseline.top_next.back();
  const auto& b = r.intervened.top_next.back();
  auto cell = [&](const analysis::Prediction& p) {
    char buf[128];
    std::snprintf(buf, sizeof buf, "%6d %-16s p = %.4f", p.id, ("'" + token_label_for_table(tok, p.id) + "'").c_str(), p.prob);
    return std::string(buf);
  };
  for (std::size_t i = 0; i < std::max(a.size(), b.size()); i++) {
    std::snprintf(line, sizeof line, "  %-36s  %s\n", i < a.size() ? cell(a[i]).c_str() : "",
                  i < b.size() ? cell(b[i]).c_str() : "");
    out << line;
  }
  return out.str();
}

std::string csv(const research::InterveneReport& r, const model::BpeTokenizer* tok) {
  std::ostringstream out;
  out << "run,loss,rank,id,token,prob,logit\n";
  for (const auto& [name, o] : {std::pair{"baseline", &r.baseline}, std::pair{"intervened", &r.intervened}}) {
    int rank = 1;
    for (const analysis::Prediction& p : o->top_next.back()) {
      char nums[96];
      std::snprintf(nums, sizeof nums, "%.6f,%d,%d", o->loss, rank++, p.id);
      out << name << "," << nums << "," << csv_quote(tok ? tok->token_bytes(p.id) : "");
      std::snprintf(nums, sizeof nums, ",%.6f,%.6f\n", p.prob, p.logit);
      out << nums;
    }
  }
  return out.str();
}

int run_intervene(const InterveneOptions& o) {
  if (o.text.empty() == o.ids.empty()) return print_error("give exactly one of --text and --ids (an empty one counts as none: the input needs a token)", 2);
  auto m = load_model_for_cli(o.model, o.dtype, o.compute, o.no_cache, !o.text.empty() || !o.steering.steer_prompts.empty());
  if (!m) return print_error(m.error().message);
  const model::ModelConfig& c = m->params.config;
  auto batch = read_inputs(*m, {.text = o.text, .ids = o.ids, .bos = o.bos, .truncate = o.truncate});
  if (!batch) return print_error(batch.error().message, batch.error().code == ErrorCode::invalid_argument ||
                                                                batch.error().code == ErrorCode::too_long ? 2 : 1);
  const analysis::RunInput& in = batch->front();
  model::Workspace ws;
  auto rq = make_request(o, *m, ws);
  if (!rq) return print_error(rq.error().message, rq.error().code == ErrorCode::invalid_argument ? 2 : 1);
  if (rq->interventions.empty() && rq->steering.empty())
    return print_error("nothing to change: give --ablate, --replace, --block, --steer or --steer-prompts", 2);
  const std::vector<int> ids = in.ids();
  if (o.format != "json") rq->top_next_from = static_cast<int>(ids.size()) - 1;  // the table shows the last
  auto report = research::intervene_run(m->params, m->tokenizer.get(), ids, *rq, ws);
  if (!report) return print_error(report.error().message, report.error().code == ErrorCode::invalid_argument ? 2 : 1);

  std::string text;
  if (o.format == "json") {
    server::ModelInterveneResult result{in.tokens, std::move(report->baseline), std::move(report->intervened)};
    text = server::encode_model_intervene(result) + "\n";
  } else if (o.format == "csv") {
    text = csv(*report, m->tokenizer.get());
  } else {
    const bool with_bos = o.ids.empty() ? o.bos.value_or(c.default_prepend_bos()) : o.bos.value_or(false);
    text = table(in, *report, m->tokenizer.get(), with_bos);
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
  std::cout << text;
  return std::cout.flush() ? 0 : print_error("writing the output failed");
}

}  // namespace intervene_cli

void add_intervene_command(CLI::App& app, int& exit_code) {
  auto opts = std::make_shared<intervene_cli::InterveneOptions>();
  CLI::App* cmd = app.add_subcommand(
      "intervene",
      "Change the model (heads or the residual stream) and compare what it predicts.\n"
      "Ablate, replace or block heads, or steer the residual stream, and see the next-token\n"
      "predictions and the loss before and after.\n\n"
      "Heads are LAYER.HEAD. --ablate 1.4 sets head 1.4's output z to 0 (1.4:mean: its mean over\n"
      "the positions); --replace 1.4:uniform makes it attend equally to every earlier key;\n"
      "--block 1.4:0 hides key 0 from it (1.*:0 from every head of layer 1).\n\n"
      "Steering adds COEF * v to blocks.L.hook_resid_pre at every position (from --steer-from on).\n"
      "--steer L:COEF:FILE reads v from FILE: n_embd float32 (numpy: v.astype('<f4').tofile(f))\n"
      "or a JSON list of n_embd numbers. --steer-prompts L:COEF:PLUS:MINUS is ActAdd (Turner et\n"
      "al. 2023): v is resid_pre at L of PLUS minus that of MINUS, position by position over the\n"
      "shorter prompt, aligned from the start, and row i is added at position i (from + i) of the\n"
      "run. (Turner et al. pad the shorter prompt with spaces; headlab cuts to it.) A NaN or\n"
      "infinite value, a COEF * v past 1e15 (the norms' float32 squares would overflow), or a\n"
      "vector of the wrong length, is refused.\n\n"
      "--format json writes the API's answer (docs/api.md, POST /api/model/intervene); the table\n"
      "and the CSV show what comes after the last token, and the loss change.\n\n"
      "Examples:\n"
      "  headlab intervene --model models/headlab-tiny --text \"the cat sat on the mat. the cat\" --ablate 1.2\n"
      "  headlab intervene --model models/gpt2 --text \"I think dogs are\" --steer-prompts '6:4: Love: Hate'\n"
      "  headlab intervene --model models/gpt2 --text \"I think dogs are\" --steer 6:8:love.f32 --format csv");
  cmd->add_option("--model", opts->model,
                  "A Hugging Face folder (GPT-2, GPT-NeoX, Llama, Mistral, Qwen 2/3, Gemma 2/3) or a .gguf file")
      ->required();
  add_dtype_option(cmd, opts->dtype);
  add_compute_option(cmd, opts->compute);
  add_cache_option(cmd, opts->no_cache);
  cmd->add_option("--text", opts->text, "The input text");
  cmd->add_option("--ids", opts->ids, "The input as token ids, separated by commas or spaces (no BOS added)");
  cmd->add_flag("--truncate", opts->truncate, "Keep BOS and the last tokens of a longer input, n_ctx in all");
  cmd->add_option_function<std::string>(
         "--prepend-bos", [opts](const std::string& v) { opts->bos = v == "on"; },
         "on or off: put the model's BOS token first; unset: the family's rule for texts, off for --ids")
      ->check(CLI::IsMember({"on", "off"}));
  cmd->add_option("--ablate", opts->ablate, "L.H or L.H:mean, repeatable");
  cmd->add_option("--replace", opts->replace, "L.H:uniform, repeatable");
  cmd->add_option("--block", opts->block, "L.H:KEY or L.*:KEY, repeatable");
  add_steer_options(cmd, opts->steering);
  cmd->add_option("--top", opts->top, "How many next-token predictions to list")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  cmd->add_option("--format", opts->format, "table, json or csv")
      ->check(CLI::IsMember({"table", "json", "csv"}))
      ->capture_default_str();
  cmd->add_option("--out", opts->out, "Write the output to this file");
  cmd->callback([opts, &exit_code] { exit_code = intervene_cli::run_intervene(*opts); });
}

}  // namespace headlab::cli
