// cli/heads_command.cpp — `headlab heads`: one rule-built head over a sentence, printed
// as the lesson's grid (table or tsv) or as JSON for scripts.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/commands.h"
#include "cli/whole_number.h"
#include "cli/pattern_svg.h"
#include "core/attention_pattern.h"
#include "core/pattern_summary.h"
#include "core/sentence.h"

namespace headlab::cli {
namespace {

struct HeadsOptions {
  std::string sentence{core::kLessonSentence};
  std::string head = "induction";
  bool no_mask = false;
  int query = -1;
  std::string format = "table";
  std::string save_svg;
};

std::string cell_text(const core::AttentionPattern& p, int i, int j) {
  if (p.is_masked(i, j)) return "masked";
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.2f", p.weights.at(i, j));
  return buf;
}

// Display width of a UTF-8 string, counting code points (good enough for a terminal grid).
std::size_t display_width(const std::string& s) {
  std::size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

void print_grid(const core::AttentionPattern& p, bool aligned, std::ostream& out) {
  const int T = p.size();
  std::vector<std::size_t> width(T, 0);
  for (int j = 0; j < T; ++j) {
    width[j] = std::max<std::size_t>(display_width(p.tokens[j]), 6);
  }
  auto emit = [&](int j, const std::string& text) {
    if (j > 0) out << (aligned ? "  " : "\t");
    out << text;
    if (aligned && j + 1 < T) out << std::string(width[j] - display_width(text), ' ');
  };
  for (int j = 0; j < T; ++j) emit(j, p.tokens[j]);
  out << '\n';
  for (int i = 0; i < T; ++i) {
    for (int j = 0; j < T; ++j) emit(j, cell_text(p, i, j));
    out << '\n';
  }
}

int run_heads(const HeadsOptions& o) {
  auto kind = core::head_kind_from_name(o.head);
  if (!kind) return print_error(kind.error().message, 2);
  auto tokens = core::tokenize_sentence(o.sentence);
  if (!tokens) return print_error(tokens.error().message, 2);
  core::AttentionPattern p = core::compute_pattern(*kind, *tokens, !o.no_mask);
  if (o.query >= p.size())
    return print_error("--query " + std::to_string(o.query) + " is out of range: the sentence has " +
                           std::to_string(p.size()) + " tokens, so choose a query from 0 to " +
                           std::to_string(p.size() - 1) + ".",
                       2);
  const core::HeadInfo& info = core::head_info(*kind);

  if (!o.save_svg.empty()) {
    std::vector<double> weights(p.weights.data.begin(), p.weights.data.end());
    std::vector<bool> masked(weights.size());
    for (int i = 0; i < p.size(); ++i)
      for (int j = 0; j < p.size(); ++j) masked[std::size_t(i) * p.size() + j] = p.is_masked(i, j);
    std::string title = info.title + " head" + (p.mask ? ", causal mask on" : ", causal mask off");
    if (std::string err = write_text_file(o.save_svg, pattern_svg(p.tokens, weights, masked, title)); !err.empty())
      return print_error(err);
    std::fprintf(stderr, "headlab: wrote the grid to %s\n", o.save_svg.c_str());
  }

  if (o.format == "json") {
    nlohmann::json weights = nlohmann::json::array();
    for (int i = 0; i < p.size(); ++i) {
      nlohmann::json row = nlohmann::json::array();
      for (int j = 0; j < p.size(); ++j) row.push_back(p.is_masked(i, j) ? nlohmann::json(nullptr) : nlohmann::json(p.weights.at(i, j)));
      weights.push_back(std::move(row));
    }
    nlohmann::json out = {{"tokens", p.tokens}, {"head", info.name}, {"mask", p.mask}, {"weights", weights}};
    if (o.query >= 0) {
      core::LooksMostAt l = core::looks_most_at(p, o.query);
      out["query"] = o.query;
      out["looks_most_at"] = {{"keys", l.keys}, {"weight", l.weight}, {"text", core::describe_looks_most_at(l, p.tokens)}};
    }
    std::cout << out.dump(2) << '\n';
    return 0;
  }

  const bool aligned = o.format == "table";
  if (aligned)
    std::cout << "Attention weights for the " << info.title << " head. Rows are queries, columns are keys. "
              << (p.mask ? "Cells above the diagonal are masked." : "The causal mask is off.") << "\n\n";
  print_grid(p, aligned, std::cout);
  if (o.query >= 0) {
    core::LooksMostAt l = core::looks_most_at(p, o.query);
    if (aligned) std::cout << '\n';
    std::cout << "Head: " << info.title << "\nQuery: " << p.tokens[o.query] << " (" << o.query << ")\n"
              << "Looks most at: " << core::describe_looks_most_at(l, p.tokens) << '\n';
  }
  return 0;
}

}  // namespace

void add_heads_command(CLI::App& app, int& exit_code) {
  auto opts = std::make_shared<HeadsOptions>();
  CLI::App* cmd = app.add_subcommand("heads", "Where one of lesson 1's five rule-built heads looks in a sentence");
  cmd->footer(
      "Each head scores every (query, key) pair by a rule; the causal mask hides later keys;\n"
      "a softmax turns each row of scores into weights that sum to 1.\n\n"
      "Examples:\n"
      "  headlab heads --head induction              the lesson's table\n"
      "  headlab heads --head induction --query 7    ...and where cat (7) looks most\n"
      "  headlab heads --head same-word --no-mask    let queries see later keys\n"
      "  headlab heads --sentence \"a b c . a b\" --format json\n"
      "  headlab heads --head punctuation --save-svg punctuation.svg");
  cmd->add_option("--sentence", opts->sentence,
                  "Words separated by spaces; punctuation marks count as tokens (at most 32 tokens)")
      ->capture_default_str();
  cmd->add_option("--head", opts->head, "previous, first, same-word, induction or punctuation")
      ->capture_default_str();
  cmd->add_flag("--no-mask", opts->no_mask, "Turn the causal mask off: queries may look at later keys");
  cmd->add_option("--query", opts->query, "Also say where query N looks most (0 = first token)")
      ->check(whole_number_from(0));
  cmd->add_option("--format", opts->format, "table (aligned), tsv, or json (full precision, null = masked)")
      ->check(CLI::IsMember({"table", "tsv", "json"}))
      ->capture_default_str();
  cmd->add_option("--save-svg", opts->save_svg, "Also save the grid as an SVG picture to this file");
  cmd->callback([opts, &exit_code] { exit_code = run_heads(*opts); });
}

}  // namespace headlab::cli
