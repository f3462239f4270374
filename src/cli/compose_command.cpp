// cli/compose_command.cpp — `headlab compose`: Q-, K- and V-composition scores between heads
// of different layers with their random baseline, and a head's full OV and QK circuits
// (research/composition.h), as a table, JSON (the API's answer, /api/model/compose) or CSV.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <sstream>
#include <functional>
#include <optional>
#include <tuple>

#include "cli/commands.h"
#include "cli/measure_io.h"
#include "research/composition.h"
#include "server/api/handlers/lens_codec.h"

namespace headlab::cli {
namespace {

struct ComposeOptions {
  ModelOptions model;
  std::string kind = "all";
  bool fold_ln = false;
  double threshold = -1;  // < 0: not given
  std::string circuit;
  bool copying = false;
  int top = 10;
  int samples = 64;
  std::string format = "table";
  std::string out;
};

std::vector<research::CompositionKind> compose_kinds(const std::string& kind) {
  using research::CompositionKind;
  if (kind == "q") return {CompositionKind::q};
  if (kind == "k") return {CompositionKind::k};
  if (kind == "v") return {CompositionKind::v};
  return {CompositionKind::q, CompositionKind::k, CompositionKind::v};
}

std::string compose_table(const server::ComposeAnswer& a, const model::BpeTokenizer* tok, int top) {
  const research::CompositionScores& s = a.scores;
  std::ostringstream out;
  char buf[640];
  std::snprintf(buf, sizeof buf,
                "Composition scores on the %s weights: ||OV_sender . M_receiver||_F / (||OV|| ||M||), M = the\n"
                "receiver's QK (q), QK^T (k) or OV (v). Random baseline: %.4f +- %.4f (Gaussian matrices of the\n"
                "heads' shapes, %d samples).\n",
                s.fold_ln ? "processed (--fold-ln)" : "raw", s.baseline_mean,
                s.baseline_std, s.baseline_samples);
  out << buf;
  for (research::CompositionKind kind : compose_kinds(a.request.kind)) {
    std::vector<std::tuple<float, int, int, int, int>> pairs;
    for (int l1 = 0; l1 < s.L; l1++)
      for (int h1 = 0; h1 < s.NH; h1++)
        for (int l2 = l1 + 1; l2 < s.L; l2++)
          for (int h2 = 0; h2 < s.NH; h2++) {
            const float v = s.at(kind, l1, h1, l2, h2);
            if (!a.request.threshold || v >= *a.request.threshold) pairs.emplace_back(v, l1, h1, l2, h2);
          }
    std::sort(pairs.begin(), pairs.end(), [](const auto& x, const auto& y) { return std::get<0>(x) > std::get<0>(y); });
    if (!a.request.threshold && int(pairs.size()) > top) pairs.resize(std::size_t(top));
    out << "\n" << research::composition_kind_name(kind) << "-composition, "
        << (a.request.threshold ? "every pair scoring at least " + std::to_string(*a.request.threshold)
                                : "the " + std::to_string(pairs.size()) + " highest")
        << " (sender -> receiver, score, times the baseline):\n";
    for (const auto& [v, l1, h1, l2, h2] : pairs) {
      std::snprintf(buf, sizeof buf, "  %d.%d -> %d.%d  %.4f  x%.2f\n", l1, h1, l2, h2, v,
                    s.baseline_mean > 0 ? v / s.baseline_mean : 0.0);
      out << buf;
    }
    if (pairs.empty()) out << "  (none)\n";
  }
  if (!a.copying.empty()) {
    out << "\nEvery head's OV copying score (sum lambda / sum |lambda|; rows: layers, columns: heads):\n";
    for (int l = 0; l < s.L; l++) {
      std::snprintf(buf, sizeof buf, "  %3d ", l);
      out << buf;
      for (int h = 0; h < s.NH; h++) {
        std::snprintf(buf, sizeof buf, " %6.3f", a.copying[std::size_t(l) * s.NH + h]);
        out << buf;
      }
      out << "\n";
    }
  }
  if (a.circuits) {
    const research::HeadCircuits& c = *a.circuits;
    std::snprintf(buf, sizeof buf,
                  "\nHead %d.%d's circuits over the vocabulary:\n  copying score (sum lambda / sum |lambda| of the OV "
                  "circuit's eigenvalues) %.4f\n  tokens whose largest OV output is themselves: %.1f%%\n",
                  c.layer, c.head, c.copying_score, 100.0 * c.ov_self_top1);
    out << buf << "  OV circuit W_E W_V W_O W_U, top pairs (source -> output):\n";
    for (const auto& p : c.ov_top) {
      std::snprintf(buf, sizeof buf, "    %-16s -> %-16s %9.4f\n", token_label_for_table(tok, p.row).c_str(),
                    token_label_for_table(tok, p.col).c_str(), p.value);
      out << buf;
    }
    out << "  QK circuit W_E W_Q W_K^T W_E^T, top pairs (query token, key token):\n";
    for (const auto& p : c.qk_top) {
      std::snprintf(buf, sizeof buf, "    %-16s  %-16s %9.4f\n", token_label_for_table(tok, p.row).c_str(),
                    token_label_for_table(tok, p.col).c_str(), p.value);
      out << buf;
    }
  }
  return out.str();
}

std::string compose_csv(const server::ComposeAnswer& a, const model::BpeTokenizer* tok) {
  std::ostringstream out;
  char buf[64];
  if (a.circuits) {  // the circuit's pairs: what a spreadsheet of one head wants
    out << "circuit,row_id,row_text,col_id,col_text,value\n";
    for (const auto* list : {&a.circuits->ov_top, &a.circuits->qk_top})
      for (const auto& p : *list) {
        std::snprintf(buf, sizeof buf, "%.7g", p.value);
        out << (list == &a.circuits->ov_top ? "ov" : "qk") << "," << p.row << "," << csv_field(token_label_for_table(tok, p.row))
            << "," << p.col << "," << csv_field(token_label_for_table(tok, p.col)) << "," << buf << "\n";
      }
    return out.str();
  }
  const research::CompositionScores& s = a.scores;
  out << "kind,sender_layer,sender_head,receiver_layer,receiver_head,score,baseline_mean,weights\n";
  for (research::CompositionKind kind : compose_kinds(a.request.kind))
    for (int l1 = 0; l1 < s.L; l1++)
      for (int h1 = 0; h1 < s.NH; h1++)
        for (int l2 = l1 + 1; l2 < s.L; l2++)
          for (int h2 = 0; h2 < s.NH; h2++) {
            const float v = s.at(kind, l1, h1, l2, h2);
            if (a.request.threshold && v < *a.request.threshold) continue;
            std::snprintf(buf, sizeof buf, "%.7g,%.7g", v, s.baseline_mean);
            out << research::composition_kind_name(kind) << "," << l1 << "," << h1 << "," << l2 << "," << h2 << "," << buf
                << "," << (s.fold_ln ? "fold_ln" : "raw") << "\n";
          }
  return out.str();
}

// "headlab: composition: 5/11" on stderr, once the work has taken a second.
struct ComposeProgress {
  std::string what;
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now(), last{};
  bool shown = false;
  void operator()(int done, int total) {
    const auto now = std::chrono::steady_clock::now();
    if (now - start < std::chrono::seconds(1) || (done != total && now - last < std::chrono::milliseconds(200))) return;
    last = now;
    shown = true;
    std::fprintf(stderr, "\rheadlab: %s: %d%%", what.c_str(), total ? int(100.0 * done / total) : 100);
    std::fflush(stderr);
  }
  ~ComposeProgress() {
    if (shown) std::fprintf(stderr, "\n");
  }
};

int run_compose(const ComposeOptions& o) {
  // CLI::Range lets NaN through (every comparison with it is false); it was then dropped
  if (std::isnan(o.threshold)) return print_error("--threshold: must be a number from 0 to 1, got nan", 2);
  server::ComposeRequest rq;
  rq.kind = o.kind;
  rq.fold_ln = o.fold_ln;
  if (o.threshold >= 0) rq.threshold = o.threshold;
  rq.top = o.top;
  rq.copying = o.copying;
  rq.baseline_samples = o.samples;
  if (!o.circuit.empty()) {
    rq.circuit = server::parse_head_name(o.circuit);
    if (!rq.circuit) return print_error("--ov-circuit must name a head as LAYER.HEAD, like 1.2; got \"" + o.circuit + "\"", 2);
  }
  auto m = load_model_for_cli(o.model.path, o.model.dtype, o.model.compute, o.model.no_cache, false);
  if (!m) return print_error(m.error().message);
  server::ComposeAnswer a;
  a.request = rq;
  research::CompositionOptions co{.fold_ln = rq.fold_ln, .baseline_samples = rq.baseline_samples};
  std::optional<ComposeProgress> scores_progress(ComposeProgress{"composition scores, receiver layers"});
  co.progress = [&](int done, int total) { (*scores_progress)(done, total); };
  auto s = research::composition_scores(m->params, co);
  scores_progress.reset();
  if (!s) return measure_error(s.error());
  a.scores = std::move(*s);
  if (rq.circuit) {
    ComposeProgress circuit_progress{"head " + o.circuit + "'s OV and QK circuits, vocabulary rows"};
    auto c = research::head_circuits(m->params, rq.circuit->first, rq.circuit->second,
                                     {.top = rq.top, .fold_ln = rq.fold_ln, .progress = std::ref(circuit_progress)});
    if (!c) return measure_error(c.error());
    a.circuits = std::move(*c);
  }
  if (rq.copying)
    if (Status st = server::compose_copying(m->params, a); !st) return measure_error(st.error());
  std::string text;
  if (o.format == "json") text = server::encode_compose(a, m->tokenizer.get()) + "\n";
  else if (o.format == "csv") text = compose_csv(a, m->tokenizer.get());
  else text = compose_table(a, m->tokenizer.get(), o.top);
  return measure_write(text, o.out);
}

}  // namespace

void add_compose_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<ComposeOptions>();
  CLI::App* cmd = app.add_subcommand(
      "compose",
      "Read from the weights which heads feed which: Q-, K- and V-composition scores.\n"
      "TransformerLens's all_composition_scores (Elhage et al. 2021): for a sender head in an\n"
      "earlier layer and a receiver in a later one, ||OV_s M_r||_F / (||OV_s||_F ||M_r||_F) with M_r\n"
      "the receiver's QK (q: the sender's output read by the queries), QK^T (k: by the keys) or OV\n"
      "(v: by the values), next to the same score for random Gaussian matrices of the heads'\n"
      "shapes. Raw weights by default; --fold-ln uses TransformerLens's processed weights (ln_1's\n"
      "weight folded into W_Q, W_K, W_V; with LayerNorm the reading weights and W_O centred).\n"
      "--ov-circuit L.H adds that head's full OV circuit (W_E W_V W_O W_U) and QK circuit\n"
      "(W_E W_Q W_K^T W_E^T): their top token pairs and the copying score sum(lambda)/sum(|lambda|).\n\n"
      "Examples:\n"
      "  headlab compose --model models/headlab-tiny --kind k\n"
      "  headlab compose --model models/headlab-tiny --threshold 0.15 --format json --out compose.json\n"
      "  headlab compose --model models/headlab-tiny --kind k --ov-circuit 1.2 --top 10\n"
      "  headlab compose --model models/headlab-tiny --kind k --copying\n"
      "  headlab compose --model models/gpt2 --fold-ln --kind q --format csv --out q.csv");
  add_model_options(cmd, o->model);
  cmd->add_option("--kind", o->kind, "q, k, v or all")->check(CLI::IsMember({"q", "k", "v", "all"}))->capture_default_str();
  cmd->add_flag("--fold-ln", o->fold_ln, "Use TransformerLens's processed weights (fold_ln, center_writing_weights)");
  cmd->add_option("--threshold", o->threshold, "List every pair scoring at least this (the JSON gains \"edges\")")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--ov-circuit", o->circuit, "A head, LAYER.HEAD: its OV and QK circuits and copying score");
  cmd->add_flag("--copying", o->copying, "Every head's OV copying score too (sum lambda / sum |lambda|; 2 V C HS each)");
  cmd->add_option("--top", o->top, "Pairs listed per kind and per circuit")->check(CLI::Range(1, 100))->capture_default_str();
  cmd->add_option("--baseline-samples", o->samples, "Random draws for the baseline")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  cmd->add_option("--format", o->format, "table, json or csv")->check(CLI::IsMember({"table", "json", "csv"}))->capture_default_str();
  cmd->add_option("--out", o->out, "Write the output to this file");
  cmd->callback([o, &exit_code] { exit_code = run_compose(*o); });
}

}  // namespace headlab::cli
