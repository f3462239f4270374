// cli/lens_command.cpp — `headlab lens`: the logit lens (research/lens.h) on a text, as a table
// (layer x position of the top token, then the chosen position's detail), JSON (the API's
// answer, POST /api/model/lens) or CSV (one row per layer and position).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <sstream>

#include "cli/commands.h"
#include "cli/measure_io.h"
#include "research/text_measures.h"
#include "server/api/handlers/lens_codec.h"

namespace headlab::cli {
namespace {

struct LensOptions {
  ModelOptions model;
  PromptOptions prompt;
  std::vector<std::string> answers;
  int top = 5;
  int pos = -1;
  bool mid = false;
  std::string format = "table";
  std::string out;
};

std::string lens_cell_text(const model::BpeTokenizer* tok, const research::LensCell& c) {
  if (c.top.empty()) return "";
  char buf[32];
  std::snprintf(buf, sizeof buf, " %.2f", c.top[0].prob);
  std::string label = token_label_for_table(tok, c.top[0].id);
  if (label.size() > 10) label = label.substr(0, 9) + "~";
  return label + buf;
}

std::string lens_table(const research::LensTextAnswer& a, const model::BpeTokenizer* tok, int pos) {
  const research::LensResult& r = a.lens;
  std::ostringstream out;
  const int first = std::max(0, r.T - 8);
  out << "Logit lens: the residual stream before each layer (and after the last) read through ln_final and the\n"
         "unembedding. Each cell: the most likely next token and its probability.\n\n";
  char buf[256];
  std::snprintf(buf, sizeof buf, "%-11s", "layer");
  out << buf;
  for (int t = first; t < r.T; t++) {
    std::string label = std::to_string(t) + ":" + token_label_for_table(tok, a.input.tokens[std::size_t(t)].id);
    if (label.size() > 15) label = label.substr(0, 14) + "~";
    std::snprintf(buf, sizeof buf, " %-15s", label.c_str());
    out << buf;
  }
  out << "\n";
  for (int e = 0; e < r.entries; e++) {
    std::snprintf(buf, sizeof buf, "%-11s", r.labels[std::size_t(e)].c_str());
    out << buf;
    for (int t = first; t < r.T; t++) {
      std::snprintf(buf, sizeof buf, " %-15s", lens_cell_text(tok, r.cell(e, t)).c_str());
      out << buf;
    }
    out << "\n";
  }
  if (first > 0) out << "(the last 8 of " << r.T << " positions; --format json or csv for all)\n";
  out << "\nAt position " << pos << " (" << token_label_for_table(tok, a.input.tokens[std::size_t(pos)].id)
      << "): entropy and KL(final || layer) in nats";
  for (int id : a.answers) out << "; rank and p of \"" << token_label_for_table(tok, id) << "\"";
  out << "\n";
  for (int e = 0; e < r.entries; e++) {
    const research::LensCell& c = r.cell(e, pos);
    std::snprintf(buf, sizeof buf, "%-11s H %6.3f  KL %6.3f ", r.labels[std::size_t(e)].c_str(), c.entropy, c.kl_final);
    out << buf;
    for (const research::LensAnswer& ans : c.answers) {
      std::snprintf(buf, sizeof buf, " rank %5d p %.4f ", ans.rank, ans.prob);
      out << buf;
    }
    out << " top:";
    for (const research::LensToken& k : c.top) {
      std::snprintf(buf, sizeof buf, " %s(%.3f)", token_label_for_table(tok, k.id).c_str(), k.prob);
      out << buf;
    }
    out << "\n";
  }
  return out.str();
}

std::string lens_csv(const research::LensTextAnswer& a, const model::BpeTokenizer* tok) {
  const research::LensResult& r = a.lens;
  std::ostringstream out;
  out << "layer,label,pos,input_token,top1_id,top1_text,top1_prob,entropy,kl_final";
  for (std::size_t i = 0; i < a.answers.size(); i++) out << ",answer" << i << "_id,answer" << i << "_rank,answer" << i << "_prob,answer" << i << "_logprob";
  out << "\n";
  char buf[128];
  for (int e = 0; e < r.entries; e++)
    for (int t = 0; t < r.T; t++) {
      const research::LensCell& c = r.cell(e, t);
      out << e << "," << r.labels[std::size_t(e)] << "," << t << ","
          << csv_field(token_label_for_table(tok, a.input.tokens[std::size_t(t)].id)) << ",";
      if (!c.top.empty()) {
        std::snprintf(buf, sizeof buf, "%.6g", c.top[0].prob);
        out << c.top[0].id << "," << csv_field(token_label_for_table(tok, c.top[0].id)) << "," << buf;
      } else {
        out << ",,";
      }
      std::snprintf(buf, sizeof buf, ",%.6g,%.6g", c.entropy, c.kl_final);
      out << buf;
      for (const research::LensAnswer& ans : c.answers) {
        std::snprintf(buf, sizeof buf, ",%d,%d,%.6g,%.6g", ans.id, ans.rank, ans.prob, ans.logprob);
        out << buf;
      }
      out << "\n";
    }
  return out.str();
}

int run_lens(const LensOptions& o) {
  auto prompt = measure_prompt(o.prompt);
  if (!prompt) return measure_error(prompt.error());
  auto m = load_model_for_cli(o.model.path, o.model.dtype, o.model.compute, o.model.no_cache, !o.prompt.text.empty());
  if (!m) return print_error(m.error().message);
  research::LensTextRequest rq;
  rq.prompt = std::move(*prompt);
  rq.answers = o.answers;
  rq.top_k = o.top;
  rq.incl_mid = o.mid;
  model::Workspace ws;
  auto a = research::logit_lens_text(m->params, m->tokenizer.get(), rq, ws);
  if (!a) return measure_error(a.error());
  const int pos = o.pos < 0 ? a->lens.T - 1 : o.pos;
  if (pos >= a->lens.T)
    return print_error("--pos " + std::to_string(o.pos) + " is outside the input (positions 0.." +
                           std::to_string(a->lens.T - 1) + ")",
                       2);
  std::string text;
  if (o.format == "json") text = server::encode_lens(*a, m->tokenizer.get()) + "\n";
  else if (o.format == "csv") text = lens_csv(*a, m->tokenizer.get());
  else text = lens_table(*a, m->tokenizer.get(), pos);
  return measure_write(text, o.out);
}

}  // namespace

void add_lens_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<LensOptions>();
  CLI::App* cmd = app.add_subcommand(
      "lens",
      "Read the residual stream through the unembedding after every layer: the logit lens.\n"
      "Each entry of TransformerLens's accumulated_resid (resid_pre of every layer, then the\n"
      "final resid_post) goes through ln_final, with its statistics recomputed for that entry\n"
      "(as TransformerLens since 2.18), and the unembedding (Gemma 2's final soft-cap applied as\n"
      "the model does). Per layer and position: the top tokens and their probabilities, the\n"
      "entropy, KL(final || layer) in nats, and the rank, probability and log-probability of\n"
      "each --answer. The last entry is the model's own prediction (KL 0).\n\n"
      "An answer is one token, written with its leading space (\" Mary\") or as an id (\"#1234\").\n"
      "--format json writes the API's answer (POST /api/model/lens, docs/api.md);\n"
      "csv one row per layer and position.\n\n"
      "Examples:\n"
      "  headlab lens --model models/headlab-tiny --text \"the cat sat on the mat. the cat sat on the\"\n"
      "  headlab lens --model models/gpt2 --text \"When Mary and John went to the store, John gave a drink to\" --answer \" Mary\" --answer \" John\"\n"
      "  headlab lens --model models/gpt2 --text \"The Eiffel Tower is in\" --top 10 --mid --format json --out lens.json");
  add_model_options(cmd, o->model);
  add_prompt_options(cmd, o->prompt);
  cmd->add_option("--answer", o->answers, "A token to follow through the layers (repeatable): \" Mary\" or \"#1234\"");
  cmd->add_option("--top", o->top, "Top tokens per cell")->check(CLI::Range(1, 100))->capture_default_str();
  cmd->add_option("--pos", o->pos, "The position the table details (default: the last)")->check(CLI::Range(0, 1 << 20));
  cmd->add_flag("--mid", o->mid, "Each block's resid_mid too, after its resid_pre (TransformerLens's incl_mid; sequential blocks with an MLP)");
  cmd->add_option("--format", o->format, "table, json or csv")->check(CLI::IsMember({"table", "json", "csv"}))->capture_default_str();
  cmd->add_option("--out", o->out, "Write the output to this file");
  cmd->callback([o, &exit_code] { exit_code = run_lens(*o); });
}

}  // namespace headlab::cli
