// course/trained_heads.cpp — lesson 2's challenges and their checks, on the head
// scanner's report and the model's ablation losses.
#include "course/trained_heads.h"

#include <algorithm>
#include <cstdio>
#include <optional>

namespace headlab::course {
namespace {

std::string fixed(double v, int digits = 2) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string head_name(int layer, int head) { return std::to_string(layer) + "." + std::to_string(head); }

bool has_label(const analysis::HeadReport& h, const std::string& name) {
  return std::any_of(h.labels.begin(), h.labels.end(), [&](const analysis::Label& l) { return l.name == name; });
}

// Each choice of the quiz: the scanner's measure of how much a head draws that pattern,
// and, for the wrong ones, what the picture means.
struct QuizChoice {
  const char* choice;
  analysis::Scored analysis::HeadScores::*measure;
  const char* measure_name;
  const char* meaning;  // empty for the right answer
};

const std::vector<QuizChoice>& quiz_choices() {
  static const std::vector<QuizChoice> all = {
      {"diagonal", &analysis::HeadScores::current_token, "current-token score",
       "a diagonal means each token looks at itself, not at the word before it."},
      {"first-column", &analysis::HeadScores::first_token, "first-token score",
       "a bright first column means every token looks at the first token."},
      {"below-diagonal", &analysis::HeadScores::previous_token, "previous-token score", ""},
      {"uniform", &analysis::HeadScores::entropy, "entropy, 1 for an even spread",
       "an even spread means the head does not prefer any earlier word."},
  };
  return all;
}

const QuizChoice* find_choice(const std::string& choice) {
  for (const QuizChoice& c : quiz_choices())
    if (c.choice == choice) return &c;
  return nullptr;
}

const analysis::HeadReport* find_head(const analysis::ScanReport& r, int layer, int head) {
  for (const auto& h : r.heads)
    if (h.layer == layer && h.head == head) return &h;
  return nullptr;
}

std::string challenge_ids() {
  std::string out;
  for (const Challenge& c : trained_heads_lesson().challenges) out += (out.empty() ? "" : ", ") + c.id;
  return out;
}

}  // namespace

const std::vector<std::string>& pattern_quiz_choices() {
  static const std::vector<std::string> all = [] {
    std::vector<std::string> out;
    for (const QuizChoice& c : quiz_choices()) out.push_back(c.choice);
    return out;
  }();
  return all;
}

Verdict check_pattern_quiz(const PatternQuizEvidence& e) {
  const QuizChoice* c = find_choice(e.choice);
  if (!c) return {false, "The choice " + e.choice.substr(0, 64) + " is not one of the pictures."};
  Verdict v;
  v.met = *c->meaning == '\0';
  v.explanation = v.met ? "Right: row i puts its weight on column i - 1, so the bright cells form a stripe one step "
                          "below the diagonal. That is a previous-token head."
                        : std::string("Not quite: ") + c->meaning;
  if (e.scan) {
    const analysis::BestHead best = analysis::best_head(*e.scan, c->measure);
    if (best.layer >= 0)
      v.explanation += std::string(v.met ? " In this model, head " : " In this model, the head that draws it most is ") +
                       head_name(best.layer, best.head) + (v.met ? " does it best (" : " (") + c->measure_name + " " +
                       fixed(best.score) + ").";
  }
  return v;
}

Verdict check_find_induction(const analysis::HeadReport& h) {
  Verdict v;
  v.met = has_label(h, "induction");
  v.explanation = "Head " + head_name(h.layer, h.head) + " has induction score " + fixed(h.scores.induction.score) +
                  " (chance " + fixed(h.scores.induction.chance) + ")" +
                  (v.met ? ": on the second copy it looks at the token that followed the earlier copy."
                         : ", too low to be an induction head. Look for the stripe that runs one step right of the "
                           "earlier copy.");
  return v;
}

Verdict check_find_sink(const analysis::HeadReport& h) {
  Verdict v;
  v.met = has_label(h, "sink") || has_label(h, "first_token");
  v.explanation = "Head " + head_name(h.layer, h.head) + " puts " + fixed(h.scores.first_token.score * 100, 0) +
                  "% of its attention on the first token" +
                  (v.met ? "." : ". A head that parks there puts at least half of it there.");
  return v;
}

Verdict check_ablation_matters(const AblationEvidence& e) {
  const std::vector<float>& d = e.loss_deltas;
  const std::size_t at = std::size_t(e.layer) * e.n_head + e.head;
  if (d.empty() || at >= d.size()) return {false, "No ablation loss was measured for head " + head_name(e.layer, e.head) + "."};
  const float best = *std::max_element(d.begin(), d.end());
  const float mine = d[at];
  Verdict v;
  v.met = best > 0 && mine >= 0.5f * best;
  v.explanation = "Removing head " + head_name(e.layer, e.head) + " changes the loss by " + fixed(mine, 3) +
                  " nats; the most any one head changes it is " + fixed(best, 3) + " nats";
  if (best > 0) v.explanation += " (this head: " + fixed(100.0 * mine / best, 0) + "% of that; half is needed)";
  v.explanation += v.met ? ". This head matters." : ". Look for a head that matters more.";
  return v;
}

Result<Verdict> check_trained_heads_answer(const Answer& a, LessonModel* model) {
  const std::string& c = a.challenge;
  if (c == "pattern-quiz") {
    if (!find_choice(a.choice))
      return make_error(ErrorCode::invalid_argument,
                        "Answer with one of the choices: diagonal, first-column, below-diagonal, uniform.");
    // Without the model's numbers the quiz is still checked; they only add an example.
    std::optional<analysis::ScanReport> scan;
    if (model)
      if (auto s = model->scan_report()) scan = std::move(*s);
    return check_pattern_quiz({a.choice, scan ? &*scan : nullptr});
  }
  if (c != "find-induction" && c != "find-sink" && c != "ablation-matters")
    return make_error(ErrorCode::invalid_argument,
                      "Unknown challenge '" + c.substr(0, 64) + "'. Challenges: " + challenge_ids() + ".");
  if (!model)
    return make_error(ErrorCode::unavailable,
                      "No model is loaded, so this challenge cannot be checked. Start the server with --model DIR.");
  const int L = model->n_layer(), NH = model->n_head();
  if (a.layer < 0 || a.layer >= L || a.head < 0 || a.head >= NH)
    return make_error(ErrorCode::invalid_argument, "Answer with a head of the model: layer 0 to " + std::to_string(L - 1) +
                                                       ", head 0 to " + std::to_string(NH - 1) + ".");
  if (c == "ablation-matters") {
    if (a.text.empty()) return make_error(ErrorCode::invalid_argument, "Send the text you ablated the head on, in 'text'.");
    auto deltas = model->head_ablation_deltas(a.text);
    if (!deltas) return tl::unexpected(deltas.error());
    return check_ablation_matters({a.layer, a.head, NH, std::move(*deltas)});
  }
  auto scan = model->scan_report();
  if (!scan) return tl::unexpected(scan.error());
  const analysis::HeadReport* h = find_head(*scan, a.layer, a.head);
  if (!h) return make_error(ErrorCode::internal, "The scanner has no report for head " + head_name(a.layer, a.head) + ".");
  return c == "find-induction" ? check_find_induction(*h) : check_find_sink(*h);
}

Lesson trained_heads_lesson() {
  return {kTrainedHeadsLesson,
          0,
          "What trained heads learn",
          false,
          {{"pattern-quiz", "Pick the pattern a head draws when it copies the word right before it."},
           {"find-induction", "On a repeated text, find a head of the model that completes the pattern."},
           {"find-sink", "Find a head of the model that parks its attention on the first token."},
           {"ablation-matters", "Find a head whose removal hurts the model's predictions on your repeated text the most."}},
          check_trained_heads_answer};
}

}  // namespace headlab::course
