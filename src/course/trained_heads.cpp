// course/trained_heads.cpp — lesson 2's challenges and their checks, on the head
// scanner's report and the model's ablation losses.
#include "course/trained_heads.h"

#include <algorithm>
#include <optional>

#include "course/answer_check.h"

namespace headlab::course {
namespace {

std::string head_name(int layer, int head) { return std::to_string(layer) + "." + std::to_string(head); }

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
       "A diagonal means each token looks at itself, not at the word before it."},
      {"first-column", &analysis::HeadScores::first_token, "first-token score",
       "A bright first column means every token looks at the first token."},
      {"below-diagonal", &analysis::HeadScores::previous_token, "previous-token score", ""},
      {"uniform", &analysis::HeadScores::entropy, "entropy, 1 for an even spread",
       "An even spread means the head does not prefer any earlier word."},
  };
  return all;
}

const QuizChoice* find_choice(const std::string& choice) {
  for (const QuizChoice& c : quiz_choices())
    if (c.choice == choice) return &c;
  return nullptr;
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
  // The page heads the verdict with "Right" or "Not right": the explanation only says why.
  v.explanation = v.met ? "Row i puts its weight on column i - 1, so the bright cells form a stripe one step "
                          "below the diagonal. That is a previous-token head."
                        : std::string(c->meaning);
  if (e.scan) {
    const analysis::BestHead best = analysis::best_head(*e.scan, c->measure);
    if (best.layer >= 0)
      v.explanation += std::string(v.met ? " In this model, head " : " In this model, the head that draws it most is ") +
                       head_name(best.layer, best.head) + (v.met ? " does it best (" : " (") + c->measure_name + " " +
                       fixed(best.score) + ").";
  }
  return v;
}

namespace {
constexpr double kInductionBar = 0.3;   // the scanner's bar for the induction label
constexpr int kMinRepeated = 4;         // tokens in repeated spans an induction check needs
constexpr double kMaxTargetShare = 0.4; // an even spread's share of the targets past which a text tells nothing
constexpr int kMinSinkRows = 3;         // rows whose previous token is not the first one

bool repeated_at(const std::vector<int>& ids, int q) {
  for (int j = 2; j < q; ++j)
    if (ids[j] == ids[q] && ids[j - 1] == ids[q - 1]) return true;
  return false;
}
}  // namespace

int repeated_span_tokens(const std::vector<int>& ids) {
  int n = 0;
  for (int q = 2; q < static_cast<int>(ids.size()); ++q) n += repeated_at(ids, q);
  return n;
}

Verdict check_find_induction(const InductionEvidence& e) {
  const int T = static_cast<int>(e.ids.size());
  // A query q in a repeated span looks, if it is an induction head, at the keys k that
  // followed an earlier copy of ids[q] (ids[k-1] == ids[q]). Keys that are also q itself or
  // the previous token (k = q - 1) are left out: there a current- or previous-token head
  // would score the same. A query with no target left tells nothing and is not counted.
  int repeated = 0, n = 0;
  double mass = 0.0, chance = 0.0, previous = 0.0;
  for (int q = 2; q < T; ++q) {
    if (!repeated_at(e.ids, q)) continue;
    ++repeated;
    double m = 0.0;
    int targets = 0;
    for (int k = 1; k <= q - 2; ++k)
      if (e.ids[k - 1] == e.ids[q]) m += e.pattern[std::size_t(q) * T + k], ++targets;
    if (targets == 0) continue;
    mass += m;
    chance += double(targets) / (q + 1);
    previous += e.pattern[std::size_t(q) * T + (q - 1)];
    ++n;
  }
  const std::string name = head_name(e.layer, e.head);
  const std::string tokens = std::to_string(T - 1) + (T - 1 == 1 ? " token" : " tokens");
  Verdict v;
  if (repeated < kMinRepeated) {
    v.explanation = "Your text (" + tokens + ") repeats no span: " + std::to_string(repeated) +
                    (repeated == 1 ? " of its tokens sits" : " of its tokens sit") +
                    " in a repeated span (a pair of tokens seen earlier in the same order), and an induction head needs "
                    "at least " + std::to_string(kMinRepeated) + " to show what it does. Press \u201cRepeat it\u201d, then "
                    "check head " + name + " again.";
    return v;
  }
  if (n < kMinRepeated) {
    v.explanation = "In your text the token after each earlier copy is mostly the previous token or the token itself (" +
                    std::to_string(n) + " of " + std::to_string(repeated) +
                    " repeated tokens have another), so looking there proves nothing: a previous-token head would look "
                    "there too. Repeat a span of several different words, then check head " + name + " again.";
    return v;
  }
  mass /= n;
  chance /= n;
  previous /= n;
  if (chance > kMaxTargetShare) {
    v.explanation = "In your text the tokens after earlier copies are " + fixed(chance * 100, 0) +
                    "% of what each repeated token can see, so even a head that spreads evenly would find them. Use a "
                    "text with more different words, repeated once.";
    return v;
  }
  const double bar = std::max(kInductionBar, 2 * chance);
  const bool enough = mass >= bar, beats_previous = mass > previous;
  v.met = enough && beats_previous;
  v.explanation = "On your text, " + std::to_string(n) + (n == 1 ? " token sits" : " tokens sit") +
                  " in a repeated span. On them head " + name + " gives on average " + fixed(mass * 100, 0) +
                  "% of its attention to the token that followed the earlier copy (a head that spreads evenly gives " +
                  fixed(chance * 100, 0) + "%; the bar is " + fixed(bar * 100, 0) +
                  "%, the larger of 30% and twice that) and " + fixed(previous * 100, 0) + "% to the previous token";
  if (v.met)
    v.explanation += ": on the second copy it looks ahead in the first one, so it is an induction head.";
  else if (!enough)
    v.explanation += ": too little. Look for the stripe that runs one step right of the earlier copy.";
  else
    v.explanation += ": it looks at the previous token at least as much, so its pattern is better explained as a "
                     "previous-token head. Look for another head.";
  return v;
}

const std::vector<std::string>& first_token_choices() {
  static const std::vector<std::string> all = {"sink", "reads-first"};
  return all;
}

FirstTokenShares first_token_shares(const FirstTokenEvidence& e) {
  FirstTokenShares s;
  if (e.T < 3) return s;
  for (int q = 2; q < e.T; ++q) {
    s.attention += e.pattern[std::size_t(q) * e.T];
    s.value_weighted += e.value_weighted[std::size_t(q) * e.T];
  }
  s.rows = e.T - 2;
  s.attention /= s.rows;
  s.value_weighted /= s.rows;
  return s;
}

Verdict check_find_sink(const FirstTokenEvidence& e) {
  const FirstTokenShares s = first_token_shares(e);
  const std::string name = head_name(e.layer, e.head);
  Verdict v;
  if (s.rows < kMinSinkRows) {
    const int tokens = std::max(0, e.T - 1);
    v.explanation = "Your text has " + std::to_string(tokens) + (tokens == 1 ? " token" : " tokens") +
                    ". Only from the third token on is the first token not also the one just before, so a head that "
                    "reads the previous token would look the same. Type at least " + std::to_string(kMinSinkRows + 1) +
                    " tokens and check head " + name + " again.";
    return v;
  }
  v.explanation = "On your text, from the third token on, head " + name + " gives " + fixed(s.attention * 100, 0) +
                  "% of its rows\u2019 attention to the first token, and " + fixed(s.value_weighted * 100, 0) +
                  "% once the values are weighed in.";
  if (s.attention < 0.5) {
    v.explanation += " That is under half, so it does not park on the first token: pick a head whose first column is bright.";
    return v;
  }
  const std::string kind = s.parks() ? "sink" : "reads-first";
  v.met = e.choice == kind;
  // The verdict says what the head is, on this text and (a sink being a habit of the head, not
  // of a text) on the next one with a word changed: only the first choice on a head counts.
  v.guess = guess_key("head", std::to_string(e.layer) + "." + std::to_string(e.head));
  const std::string bar = fixed(s.attention * 50, 0) + "%";
  v.explanation += s.parks() ? " The value-weighted share is under half of the attention share (under " + bar +
                                   "): the weight parks there and fetches little. It is a sink."
                             : " The value-weighted share keeps at least half of it (" + bar +
                                   " or more): the head does fetch something from the first token. It reads the first "
                                   "token; it is not a sink.";
  if (!v.met) v.explanation += e.choice == "sink" ? " You said sink." : " You said it reads the first token.";
  return v;
}

Verdict check_ablation_matters(const AblationEvidence& e) {
  const std::vector<float>& d = e.loss_deltas;
  const std::size_t at = std::size_t(e.layer) * e.n_head + e.head;
  if (d.empty() || at >= d.size()) return {false, "No ablation loss was measured for head " + head_name(e.layer, e.head) + "."};
  // The challenge is about the repeated text: on one without a repeat, removing a head says
  // nothing of the heads that complete repeats.
  if (const int n = repeated_span_tokens(e.ids); n < kMinRepeated)
    return {false, "Your text repeats no span (" + std::to_string(n) + (n == 1 ? " token sits" : " tokens sit") +
                       " in a repeated span; at least " + std::to_string(kMinRepeated) +
                       " are needed). Repeat it first, then remove heads on the repeated text."};
  const float best = *std::max_element(d.begin(), d.end());
  const float mine = d[at];
  Verdict v;
  v.met = best > 0 && mine > 0 && mine >= 0.5f * best;
  v.explanation = "Removing head " + head_name(e.layer, e.head) + " changes the loss by " + fixed(mine, 3) +
                  " nats; the most any one head changes it is " + fixed(best, 3) + " nats";
  if (best > 0) v.explanation += " (this head: " + fixed(100.0 * mine / best, 0) + "% of that; half is needed)";
  v.explanation += v.met ? ". This head matters." : ". Look for a head that matters more.";
  return v;
}

namespace {
Result<Verdict> check_answer_on_evidence(const Answer& a, LessonModel* model) {
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
  if (c != "find-induction" && c != "find-sink" && c != "ablation-matters") return unknown_challenge(trained_heads_lesson(), c);
  if (auto s = require_model(model); !s) return tl::unexpected(s.error());
  const int L = model->n_layer(), NH = model->n_head();
  if (a.layer < 0 || a.layer >= L || a.head < 0 || a.head >= NH)
    return make_error(ErrorCode::invalid_argument, "Answer with a head of the model: layer 0 to " + std::to_string(L - 1) +
                                                       ", head 0 to " + std::to_string(NH - 1) + ".");
  if (c == "ablation-matters") {
    if (a.text.empty()) return make_error(ErrorCode::invalid_argument, "Send the text you ablated the head on, in 'text'.");
    auto deltas = model->head_ablation_deltas(a.text);
    if (!deltas) return tl::unexpected(deltas.error());
    auto run = model->head_on_text(a.text, a.layer, a.head);  // the text's tokens
    if (!run) return tl::unexpected(run.error());
    return check_ablation_matters({a.layer, a.head, NH, std::move(*deltas), std::move(run->ids)});
  }
  if (a.text.empty()) return make_error(ErrorCode::invalid_argument, "Send the text you looked at the head on, in 'text'.");
  if (c == "find-sink" && std::find(first_token_choices().begin(), first_token_choices().end(), a.choice) ==
                              first_token_choices().end())
    return make_error(ErrorCode::invalid_argument, "Say what the head is, in 'choice': sink or reads-first.");
  auto run = model->head_on_text(a.text, a.layer, a.head);
  if (!run) return tl::unexpected(run.error());
  if (c == "find-induction") return check_find_induction({a.layer, a.head, std::move(run->ids), std::move(run->pattern)});
  return check_find_sink({a.layer, a.head, a.choice, run->T, std::move(run->pattern), std::move(run->value_weighted)});
}

}  // namespace

Result<Verdict> check_trained_heads_answer(const Answer& a, LessonModel* model) {
  return without_credit_if_revealed(check_answer_on_evidence(a, model), a.revealed,
                                    "The server remembers that you looked, so this challenge stays unticked; the others can still be earned.");
}

Lesson trained_heads_lesson() {
  return {kTrainedHeadsLesson,
          0,
          "What trained heads learn",
          false,
          {{"pattern-quiz", "Pick the pattern a head draws when it copies the word right before it.", pattern_quiz_choices()},
           {"find-induction", "Repeat your text, then find a head that looks at the token after the earlier copy."},
           {"find-sink", "On your text, find a head that puts at least half its attention on the first token, and say whether it is a sink or reads that token.",
            first_token_choices()},
           {"ablation-matters", "Find a head whose removal hurts the model's predictions on your repeated text the most."}},
          check_trained_heads_answer};
}

}  // namespace headlab::course
