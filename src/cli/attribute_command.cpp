// cli/attribute_command.cpp — `headlab attribute`: direct logit attribution
// (research/attribution.h) of a logit difference to the embeddings, every head, the attention
// biases and every MLP, as a table, JSON (the API's answer, POST /api/model/attribute) or CSV.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <sstream>

#include "cli/commands.h"
#include "research/prompts.h"
#include "util/file.h"
#include "cli/measure_io.h"
#include "research/text_measures.h"
#include "server/api/handlers/lens_codec.h"

namespace headlab::cli {
namespace {

struct AttributeOptions {
  ModelOptions model;
  PromptOptions prompt;
  std::string answer, wrong;
  std::string prompts;  // a file: the batch
  int pos = -1;
  std::string format = "table";
  std::string out;
};

std::string attribute_table(const research::AttributionTextAnswer& a, const model::BpeTokenizer* tok) {
  const research::Attribution& r = a.attribution;
  std::ostringstream out;
  char buf[256];
  const std::string metric = r.wrong >= 0 ? "logit(\"" + token_label_for_table(tok, r.answer) + "\") - logit(\"" +
                                                token_label_for_table(tok, r.wrong) + "\")"
                                          : "logit(\"" + token_label_for_table(tok, r.answer) + "\")";
  out << "Direct logit attribution of " << metric << " at position " << r.position << " ("
      << token_label_for_table(tok, a.input.tokens[std::size_t(r.position)].id) << "),\n"
      << "ln_final's scale frozen at " << r.final_scale << " (TransformerLens's apply_ln_to_stack):\n\n";
  double largest = 0;
  for (const auto& p : r.parts) largest = std::max(largest, std::fabs(double(p.value)));
  for (const auto& p : r.parts) {
    const int n = largest > 0 ? static_cast<int>(std::lround(20.0 * std::fabs(p.value) / largest)) : 0;
    std::string bar(std::size_t(n), p.value >= 0 ? '+' : '-');
    std::snprintf(buf, sizeof buf, "  %-14s %10.4f  %s\n", p.label.c_str(), p.value, bar.c_str());
    out << buf;
  }
  std::snprintf(buf, sizeof buf, "\n  %-14s %10.4f\n  %-14s %10.4f", "sum of parts", r.sum, "the model's", r.logit_diff);
  out << buf;
  if (std::fabs(r.logit_diff - r.logit_diff_uncapped) > 1e-4f * (1.0f + std::fabs(r.logit_diff)))
  {
    std::snprintf(buf, sizeof buf, " (before Gemma 2's final soft-cap: %.4f, what the parts add up to)", r.logit_diff_uncapped);
    out << buf;
  }
  out << "\n";
  return out.str();
}

std::string attribute_csv(const research::AttributionTextAnswer& a) {
  std::ostringstream out;
  out << "label,kind,layer,head,value\n";
  char buf[64];
  for (const auto& p : a.attribution.parts) {
    std::snprintf(buf, sizeof buf, "%.7g", p.value);
    out << p.label << "," << research::part_kind_name(p.kind) << "," << (p.layer >= 0 ? std::to_string(p.layer) : "")
        << "," << (p.head >= 0 ? std::to_string(p.head) : "") << "," << buf << "\n";
  }
  return out.str();
}

std::string attribute_batch_table(const research::AttributionBatchAnswer& b, const model::BpeTokenizer* tok) {
  std::ostringstream out;
  char buf[256];
  out << "Direct logit attribution over " << b.each.size()
      << " prompts, each at its last position, ln_final's scale frozen per prompt; the mean of each part:\n\n";
  double largest = 0;
  for (double v : b.mean) largest = std::max(largest, std::fabs(v));
  const auto& parts = b.each.front().attribution.parts;
  for (std::size_t i = 0; i < parts.size(); i++) {
    const int n = largest > 0 ? static_cast<int>(std::lround(20.0 * std::fabs(b.mean[i]) / largest)) : 0;
    std::snprintf(buf, sizeof buf, "  %-14s %10.4f  %s\n", parts[i].label.c_str(), b.mean[i],
                  std::string(std::size_t(n), b.mean[i] >= 0 ? '+' : '-').c_str());
    out << buf;
  }
  std::snprintf(buf, sizeof buf, "\n  %-14s %10.4f\n\nPer prompt (logit difference, the model's):\n", "mean of the model's",
                b.mean_logit_diff);
  out << buf;
  for (std::size_t k = 0; k < b.each.size(); k++) {
    const research::Attribution& r = b.each[k].attribution;
    std::snprintf(buf, sizeof buf, "  %3zu  %10.4f  \"%s\" vs \"%s\"\n", k + 1, r.logit_diff,
                  token_label_for_table(tok, r.answer).c_str(), r.wrong >= 0 ? token_label_for_table(tok, r.wrong).c_str() : "");
    out << buf;
  }
  return out.str();
}

std::string attribute_batch_csv(const research::AttributionBatchAnswer& b) {
  std::ostringstream out;
  out << "prompt,label,kind,layer,head,value\n";
  char buf[64];
  auto row = [&](const std::string& prompt, const research::AttributionPart& p, double v) {
    std::snprintf(buf, sizeof buf, "%.7g", v);
    out << prompt << "," << p.label << "," << research::part_kind_name(p.kind) << ","
        << (p.layer >= 0 ? std::to_string(p.layer) : "") << "," << (p.head >= 0 ? std::to_string(p.head) : "") << "," << buf
        << "\n";
  };
  for (std::size_t k = 0; k < b.each.size(); k++)
    for (const auto& p : b.each[k].attribution.parts) row(std::to_string(k + 1), p, p.value);
  const auto& parts = b.each.front().attribution.parts;
  for (std::size_t i = 0; i < parts.size(); i++) row("mean", parts[i], b.mean[i]);
  return out.str();
}

int run_attribute_batch(const AttributeOptions& o) {
  if (!o.prompt.text.empty() || !o.prompt.ids.empty() || o.pos >= 0)
    return print_error("--prompts reads every prompt from the file: leave out --text, --ids and --pos", 2);
  auto file = file_read(o.prompts);
  if (!file) return print_error(file.error().message);
  auto prompts = research::parse_prompts(*file, 10000);
  if (!prompts) return measure_error(prompts.error());
  auto m = load_model_for_cli(o.model.path, o.model.dtype, o.model.compute, o.model.no_cache, true);
  if (!m) return print_error(m.error().message);
  research::AttributionBatchRequest rq;
  rq.prompts = std::move(*prompts);
  rq.answer = o.answer;
  rq.wrong = o.wrong;
  rq.bos = o.prompt.bos;
  rq.input.truncate = o.prompt.truncate;
  rq.input.truncate_hint = "pass --truncate";
  model::Workspace ws;
  auto b = research::direct_logit_attribution_batch(m->params, m->tokenizer.get(), rq, ws);
  if (!b) return measure_error(b.error());
  std::string text;
  if (o.format == "json") text = server::encode_attribution_batch(*b, m->tokenizer.get()) + "\n";
  else if (o.format == "csv") text = attribute_batch_csv(*b);
  else text = attribute_batch_table(*b, m->tokenizer.get());
  return measure_write(text, o.out);
}

int run_attribute(const AttributeOptions& o) {
  if (!o.prompts.empty()) return run_attribute_batch(o);
  if (o.answer.empty()) return print_error("--answer is required (or --prompts FILE whose lines give their answers)", 2);
  auto prompt = measure_prompt(o.prompt);
  if (!prompt) return measure_error(prompt.error());
  auto m = load_model_for_cli(o.model.path, o.model.dtype, o.model.compute, o.model.no_cache, !o.prompt.text.empty());
  if (!m) return print_error(m.error().message);
  research::AttributionTextRequest rq;
  rq.prompt = std::move(*prompt);
  rq.answer = o.answer;
  rq.wrong = o.wrong;
  rq.position = o.pos;
  model::Workspace ws;
  auto a = research::direct_logit_attribution_text(m->params, m->tokenizer.get(), rq, ws);
  if (!a) return measure_error(a.error());
  std::string text;
  if (o.format == "json") text = server::encode_attribution(*a, m->tokenizer.get()) + "\n";
  else if (o.format == "csv") text = attribute_csv(*a);
  else text = attribute_table(*a, m->tokenizer.get());
  return measure_write(text, o.out);
}

}  // namespace

void add_attribute_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<AttributeOptions>();
  CLI::App* cmd = app.add_subcommand(
      "attribute",
      "Split a logit difference among the parts of the residual stream: direct logit attribution.\n"
      "At one position (default: the last), the direction W_U[answer] - W_U[wrong] (or one\n"
      "token's logit without --wrong) read through ln_final with its scale frozen from the run\n"
      "(TransformerLens's apply_ln_to_stack: LayerNorm centres each part), for embed, pos_embed,\n"
      "every head (z W_O), each layer's attention bias, each mlp_out and ln_final's bias. Gemma's\n"
      "post-attention norm makes heads not additive: its layers show attn_out instead. The parts\n"
      "add up to the model's logit difference (before Gemma 2's final soft-cap).\n\n"
      "Answers are one token each, with their leading space (\" Mary\") or as ids (\"#1234\").\n"
      "--format json writes the API's answer (POST /api/model/attribute, docs/api.md).\n\n"
      "Examples:\n"
      "  headlab attribute --model models/gpt2 --text \"When Mary and John went to the store, John gave a drink to\" --answer \" Mary\" --wrong \" John\"\n"
      "  headlab attribute --model models/headlab-tiny --text \"the cat sat on the mat. the cat sat on the\" --answer \" mat\"\n"
      "  headlab attribute --model models/gpt2 --ids \"464 3797 3332\" --answer \"#319\" --pos 1 --format csv\n"
      "  headlab attribute --model models/gpt2 --prompts ioi.jsonl      # lines {\"clean\": ..., \"answer\": \" Mary\", \"wrong\": \" John\"}");
  add_model_options(cmd, o->model);
  add_prompt_options(cmd, o->prompt);
  cmd->add_option("--answer", o->answer, "The token whose logit counts +1: \" Mary\" or \"#1234\"");
  cmd->add_option("--wrong", o->wrong, "The token whose logit counts -1 (leave out for the answer's logit alone)");
  cmd->add_option("--pos", o->pos, "The position read (default: the last)")->check(CLI::Range(0, 1 << 20));
  cmd->add_option("--prompts", o->prompts,
                  "A batch: a file of prompts, one per line, or JSON lines {\"clean\", \"answer\", \"wrong\"}; each is "
                  "read at its last position and the parts are averaged (--answer/--wrong serve lines without theirs)");
  cmd->add_option("--format", o->format, "table, json or csv")->check(CLI::IsMember({"table", "json", "csv"}))->capture_default_str();
  cmd->add_option("--out", o->out, "Write the output to this file");
  cmd->callback([o, &exit_code] { exit_code = run_attribute(*o); });
}

}  // namespace headlab::cli
