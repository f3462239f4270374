// server/api/handlers/induction_handlers.cpp — the rule-built and the model's induction head on
// one sentence, through one scorer (see the header).
#include "server/api/handlers/induction_handlers.h"

#include "core/attention_pattern.h"

namespace headlab::server {
namespace {

// The scanner's induction head: the labelled one with the largest margin, else the top scorer.
analysis::HeadReport pick_induction_head(const analysis::ScanReport& scan, bool& labelled) {
  const analysis::HeadReport* best = nullptr;
  double best_margin = -1e9;
  for (const analysis::HeadReport& h : scan.heads)
    for (const analysis::Label& l : h.labels)
      if (l.name == "induction" && l.margin() > best_margin) {
        best = &h;
        best_margin = l.margin();
      }
  labelled = best != nullptr;
  if (best) return *best;
  analysis::BestHead top = analysis::best_head(scan, &analysis::HeadScores::induction);
  for (const analysis::HeadReport& h : scan.heads)
    if (h.layer == top.layer && h.head == top.head) return h;
  return scan.heads.front();
}

// (T, T) row-major, zeros above the diagonal, from ragged causal rows.
std::vector<float> full_from_rows(const std::vector<std::vector<float>>& rows) {
  const int T = static_cast<int>(rows.size());
  std::vector<float> full(std::size_t(T) * T, 0.0f);
  for (int q = 0; q < T; ++q)
    for (int k = 0; k <= q; ++k) full[std::size_t(q) * T + k] = rows[q][k];
  return full;
}

}  // namespace

Result<InductionComparison> handle_induction_comparison(ModelService& model, const InductionComparisonRequest& request) {
  auto scan = model.scan_report();
  if (!scan) return tl::unexpected(scan.error());
  if (scan->heads.empty()) return make_error(ErrorCode::internal, "The head scanner reported no heads.");

  InductionComparison out;
  const analysis::HeadReport chosen = pick_induction_head(*scan, out.model_head_labelled);

  ModelRunRequest run;
  run.text = request.sentence;
  run.all_heads = false;
  run.heads = {{chosen.layer, chosen.head}};
  run.top_k = 0;
  run.too_long_hint = "shorten the sentence";  // the lesson's route has no "truncate"
  auto r = model.run(run);
  if (!r) return tl::unexpected(r.error());
  out.tokens = r->tokens;
  const int T = static_cast<int>(out.tokens.size());

  std::vector<int> ids;
  std::vector<std::string> texts;
  for (const model::Token& t : out.tokens) {
    ids.push_back(t.id);
    texts.push_back(t.text);
  }
  for (int q = 1; q < T; ++q)
    for (int k = 1; k <= q; ++k)
      if (ids[k - 1] == ids[q]) {
        ++out.queries_scored;
        break;
      }
  if (out.queries_scored == 0)
    return make_error(ErrorCode::invalid_argument,
                      "No token of this sentence occurs twice, so an induction head has nothing to find. "
                      "Type a sentence and then type it again.");

  // The model's head: its packed causal half (the run had no window) as rows.
  const std::vector<float>& packed = r->heads.front().pattern;
  out.model_head = {chosen.name, chosen.layer, chosen.head, {}, {}};
  for (int q = 0; q < T; ++q) {
    const float* row = packed.data() + model::ActivationRecord::packed_offset(q);
    out.model_head.pattern.emplace_back(row, row + q + 1);
  }
  std::vector<float> model_full = full_from_rows(out.model_head.pattern);
  out.model_head.score = analysis::prefix_matching_score({model_full.data(), T}, ids);

  // The rule-built head on the same tokens: scores by rule -> causal mask -> softmax.
  core::AttentionPattern rule = core::compute_pattern(core::HeadKind::induction, texts, /*mask=*/true);
  out.rule_built = {"induction", -1, -1, {}, {}};
  for (int q = 0; q < T; ++q) {
    std::vector<float> row;
    for (int k = 0; k <= q; ++k) row.push_back(static_cast<float>(rule.weights.at(q, k)));
    out.rule_built.pattern.push_back(std::move(row));
  }
  std::vector<float> rule_full = full_from_rows(out.rule_built.pattern);
  out.rule_built.score = analysis::prefix_matching_score({rule_full.data(), T}, ids);
  return out;
}

}  // namespace headlab::server
