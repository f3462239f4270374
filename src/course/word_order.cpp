// course/word_order.cpp — lesson 3's challenges and their checks: a content-only head on a
// shuffled text, the learned positions' similarity, and q.k after the rotary code.
#include "course/word_order.h"

#include <algorithm>
#include <cmath>

#include "analysis/position_views.h"
#include "course/answer_check.h"

namespace headlab::course {
namespace {


// A token as the page draws it: quoted, each space as "\u00b7", so " the" and "the" (two
// tokens) read differently.
std::string shown(const std::string& t) {
  std::string out = "\u201c";
  for (char ch : t.substr(0, 40)) out += ch == ' ' ? std::string("\u00b7") : std::string(1, ch);
  return out + "\u201d";
}

int row_argmax(const std::vector<float>& m, int N, int row, int skip = -1) {
  int best = -1;
  for (int j = 0; j < N; ++j)
    if (j != skip && (best < 0 || m[std::size_t(row) * N + j] > m[std::size_t(row) * N + best])) best = j;
  return best;
}

std::vector<float> make_vector(double a, double b) {
  std::vector<float> v(64);
  for (int i = 0; i < 64; ++i) v[i] = static_cast<float>(std::sin(a * i + b));
  return v;
}

}  // namespace

const std::vector<float>& word_order_q() {
  static const std::vector<float> q = make_vector(0.9, 0.4);
  return q;
}
const std::vector<float>& word_order_k() {
  static const std::vector<float> k = make_vector(0.9, 0.1);
  return k;
}

const std::vector<WordOrderModel>& word_order_models() {
  static const std::vector<WordOrderModel> all = {
      {"none", "headlab-nopos", "No positions"},
      {"learned", "headlab-learned", "Learned positions"},
      {"rotary", "headlab-rope", "Rotary positions"},
  };
  return all;
}

std::vector<std::pair<int, int>> previous_token_bands(int context) {
  std::vector<std::pair<int, int>> out;
  for (auto [from, to] : {std::pair{2, 8}, std::pair{8, 32}, std::pair{32, context}})
    if (from < context) out.push_back({from, std::min(to, context)});
  return out;
}

std::vector<PreviousTokenShare> previous_token_shares(const std::vector<analysis::PatternView>& patterns,
                                                     const std::vector<std::pair<int, int>>& bands) {
  std::vector<PreviousTokenShare> out;
  for (auto [from, to] : bands) {
    PreviousTokenShare s{std::max(from, 2), to, 0, 0.0, 0.0};
    for (const analysis::PatternView& p : patterns)
      for (int q = s.from; q < std::min(to, p.T); ++q) {
        s.share += p.at(q, q - 1);
        s.chance += 1.0 / (q + 1);
        ++s.queries;
      }
    if (s.queries > 0) s.share /= s.queries, s.chance /= s.queries;
    out.push_back(s);
  }
  return out;
}

Verdict check_shuffle_follows(const ShuffleEvidence& e) {
  const int T = static_cast<int>(e.tokens.size());
  Verdict v;
  if (T < kMinShuffleTokens) {
    v.explanation = "Your text has " + std::to_string(T) + (T == 1 ? " token" : " tokens") + "; a shuffle needs at least " +
                    std::to_string(kMinShuffleTokens) + " to show anything. Type a longer sentence.";
    return v;
  }
  int moved = 0;
  for (int i = 0; i < T; ++i) moved += e.order[i] != i && e.tokens[e.order[i]] != e.tokens[i];
  if (moved == 0) {
    v.explanation = "The tokens are in their first order: nothing was shuffled. Press \u201cShuffle\u201d, then predict.";
    return v;
  }
  const int was = e.order[e.query];  // where the query token sat before
  const int before_key = row_argmax(e.before, T, was);
  const float before_best = e.before[std::size_t(was) * T + before_key];
  // The runner-up among keys spelled differently: keys holding the same token get the same
  // weight (no positions), so any of them is the favourite word.
  float runner = 0.0f;
  for (int j = 0; j < T; ++j)
    if (e.tokens[j] != e.tokens[before_key]) runner = std::max(runner, e.before[std::size_t(was) * T + j]);
  const std::string query_was = shown(e.tokens[was]) + " (position " + std::to_string(was) + ")";
  if (before_best < kShuffleFavouriteOverEven / T || before_best - runner < kShuffleLead) {
    v.explanation = "Before the shuffle, " + query_was + " gives its largest share, " + percent(before_best) +
                    ", to one word and " + percent(runner) + " to the next: the row has no clear favourite (it needs at least " +
                    percent(kShuffleFavouriteOverEven / T) + ", " + fixed(kShuffleFavouriteOverEven, 1) +
                    " times an even spread over your " + std::to_string(T) + " tokens, and " + percent(kShuffleLead) +
                    " more than any other word), so a pick would tell nothing. Try another head or sentence.";
    return v;
  }
  if (e.tokens[e.order[before_key]] == e.tokens[before_key]) {
    v.explanation = "In your shuffle the word " + query_was + " looks at most still sits at position " + std::to_string(before_key) +
                    ": following the place and following the word give the same answer. Shuffle again.";
    return v;
  }
  const int after_key = row_argmax(e.after, T, e.query);
  const float after_best = e.after[std::size_t(e.query) * T + after_key];
  const std::string answer = "Before the shuffle, " + query_was + " looked most at " + shown(e.tokens[before_key]) + " (position " +
                             std::to_string(before_key) + ", " + percent(before_best) + "). In your shuffle (" + std::to_string(moved) +
                             (moved == 1 ? " token" : " tokens") + " moved) it sits at position " + std::to_string(e.query) +
                             " and looks most at " + shown(e.tokens[e.order[after_key]]) + ", now at position " +
                             std::to_string(after_key) + " (" + percent(after_best) + "). ";
  if (e.key < 0) {  // the learner asked to see the new grid without picking
    v.explanation = answer + "Without positions the head sees only which tokens are there, so the row moves with its words.";
    return v;
  }
  const float picked = e.after[std::size_t(e.query) * T + e.key];
  v.met = picked >= after_best - 1e-6f;
  // The shuffle's answer, not its text: the head, the word followed, its favourite and where
  // that went. A text with a word added or an order with the same moves is the same guess;
  // a shuffle that sends the favourite elsewhere is a new one.
  v.guess = guess_key("shuffle", digest(std::to_string(e.head) + "|" + e.tokens[was] + "|" + e.tokens[before_key] + "|" +
                                        std::to_string(after_key)));
  // A wrong pick is told how far off it is, never where the answer is: the same shuffle
  // could then be sent again with the answer retyped (issue 26).
  v.explanation = v.met ? answer + "You picked it: the row moved with the words, because without positions the head sees only which tokens are there."
                        : "You picked " + shown(e.tokens[e.order[e.key]]) + " at position " + std::to_string(e.key) + ": it gets " +
                              percent(picked) + " of the row, and another token gets " + percent(after_best) +
                              ". Follow the word, not the place: find in the first grid the word " + shown(e.tokens[was]) +
                              " looked at most, then find that word in your shuffle. Shuffle again to try once more.";
  return v;
}

Verdict check_wpe_neighbour(const NeighbourEvidence& e) {
  const int best = row_argmax(e.cosine, e.N, e.position, e.position);
  const auto cos_at = [&](int j) { return static_cast<double>(e.cosine[std::size_t(e.position) * e.N + j]); };
  Verdict v;
  if (best < 0) {
    v.explanation = "The model has a single learned position: there is no other to compare it with.";
    return v;
  }
  const double bc = cos_at(best);
  int tied = 0;  // positions as alike as the best: a tie has no single answer
  for (int j = 0; j < e.N; ++j) tied += j != e.position && cos_at(j) >= bc - kNeighbourTie;
  if (tied > 1) {
    v.explanation = std::to_string(tied) + " positions are equally like position " + std::to_string(e.position) + " (cosine " +
                    fixed(bc) + "): there is no single answer to guess. Pick another position.";
    return v;
  }
  if (e.guess == e.position) {
    v.explanation = "Every position is most like itself (cosine 1.00): guess another position.";
    return v;
  }
  const std::string answer = "Of the model's " + std::to_string(e.N) + " learned positions, the one most like position " +
                             std::to_string(e.position) + " is " + std::to_string(best) + " (cosine " + fixed(bc) + "). ";
  // What the similarity does and does not tell: chosen by whether the nearest vector is a
  // neighbouring position.
  std::string reading;
  if (std::abs(best - e.position) == 1) {
    reading = "It is a neighbour: training made nearby positions alike, though nothing told the model which positions are near.";
  } else {
    std::string next;
    for (int j : {e.position - 1, e.position + 1})
      if (j >= 0 && j < e.N) next += (next.empty() ? "position " : " and position ") + std::to_string(j) + " " + fixed(cos_at(j));
    reading = "It is not a neighbour (" + next + "): nothing told the model that position " + std::to_string(e.position) +
              " sits next to its neighbours, training shaped these vectors only as far as the loss needed, and a cosine over "
              "all of a vector's numbers weighs ones no head may read. Alike vectors do not tell you how the model uses them.";
  }
  if (e.guess < 0) {  // the learner asked to see the answer
    v.explanation = answer + reading;
    return v;
  }
  const double gc = cos_at(e.guess);
  v.met = gc >= bc - 1e-6;
  v.guess = guess_key("position", std::to_string(e.position));
  if (v.met) {
    v.explanation = answer + "Your guess. " + reading;
    return v;
  }
  // A wrong guess is told how far off it is, never which position is the answer (issue 26).
  int closer = 0;
  for (int j = 0; j < e.N; ++j) closer += j != e.position && cos_at(j) > gc;
  v.explanation = "Your guess " + std::to_string(e.guess) + " has cosine " + fixed(gc) + " with position " + std::to_string(e.position) +
                  "; " + std::to_string(closer) + (closer == 1 ? " other position is" : " other positions are") +
                  " more like it, the closest at cosine " + fixed(bc) + ". Guess again.";
  return v;
}

Verdict check_offset_only(const OffsetEvidence& e) {
  Verdict v;
  const std::string a = "(" + std::to_string(e.m1) + ", " + std::to_string(e.n1) + ")";
  const std::string b = "(" + std::to_string(e.m2) + ", " + std::to_string(e.n2) + ")";
  const std::string nums = "q\u00b7k is " + fixed(e.dot1, 4) + " at " + a + " and " + fixed(e.dot2, 4) + " at " + b;
  if (std::abs(e.m1 - e.m2) < kOffsetSpread) {
    v.explanation = nums + ". Move the second pair at least " + std::to_string(kOffsetSpread) +
                    " positions away from the first, so the match cannot come from sitting in the same place.";
    return v;
  }
  const double diff = std::fabs(e.dot1 - e.dot2);
  const bool same_dot = diff <= kSameDot * std::max(1.0, std::fabs(e.dot1));
  const bool same_offset = e.m1 - e.n1 == e.m2 - e.n2;
  // Two different offsets can give nearly the same q.k by chance; the challenge asks for the
  // reason they agree, so both must hold.
  v.met = same_dot && same_offset;
  v.explanation = nums + " (offsets " + std::to_string(e.m1 - e.n1) + " and " + std::to_string(e.m2 - e.n2) + ", difference " +
                  fixed(diff, 6) + "). ";
  if (v.met)
    v.explanation += "The same score far apart: after the rotation, q\u00b7k depends only on the offset m \u2212 n.";
  else if (same_dot)
    v.explanation += "They agree, but their offsets differ: a coincidence of these two pairs, not a rule. Find two pairs that agree for a reason.";
  else
    v.explanation += "They differ.";
  return v;
}

namespace {

Result<Verdict> check_on_evidence(const Answer& a, LessonModel* model) {
  const std::string& c = a.challenge;
  if (c == "offset-only") {
    if (a.positions.size() != 4)
      return make_error(ErrorCode::invalid_argument, "Send the two pairs in 'positions' as [m1, n1, m2, n2].");
    auto dots = analysis::rope_dots(word_order_q(), word_order_k(), kWordOrderTheta,
                                    {{a.positions[0], a.positions[1]}, {a.positions[2], a.positions[3]}});
    if (!dots) return tl::unexpected(dots.error());
    return check_offset_only({a.positions[0], a.positions[1], a.positions[2], a.positions[3], (*dots)[0].dot, (*dots)[1].dot});
  }
  if (c != "shuffle-follows" && c != "wpe-neighbour") return unknown_challenge(word_order_lesson(), c);
  if (auto s = require_model(model); !s) return tl::unexpected(s.error());
  if (c == "wpe-neighbour") {
    // A reveal may come without a guess: [position].
    if (a.positions.size() != 2 && !(a.revealed && a.positions.size() == 1))
      return make_error(ErrorCode::invalid_argument, "Send 'positions' as [position, your guess].");
    auto sim = model->learned_position_similarity();
    if (!sim) return tl::unexpected(sim.error());
    for (int p : a.positions)
      if (p < 0 || p >= sim->N)
        return make_error(ErrorCode::invalid_argument,
                          "Positions lie in 0 to " + std::to_string(sim->N - 1) + "; got " + std::to_string(p) + ".");
    const int guess = a.positions.size() == 2 ? a.positions[1] : -1;
    return check_wpe_neighbour({a.positions[0], guess, sim->N, std::move(sim->cosine)});
  }
  // shuffle-follows
  if (a.text.empty()) return make_error(ErrorCode::invalid_argument, "Send the text you shuffled, in 'text'.");
  if (a.head < 0) return make_error(ErrorCode::invalid_argument, "Send the head you watched, in 'head'.");
  auto toks = model->tokens_of_text(a.text);
  if (!toks) return tl::unexpected(toks.error());
  const int T = static_cast<int>(toks->ids.size());
  std::vector<bool> seen(std::size_t(std::max(T, 0)), false);
  bool permutation = static_cast<int>(a.order.size()) == T;
  for (int o : a.order) {
    if (!permutation) break;
    permutation = o >= 0 && o < T && !seen[o];
    if (permutation) seen[o] = true;
  }
  if (!permutation)
    return make_error(ErrorCode::invalid_argument, "'order' must list each of the text's " + std::to_string(T) +
                                                       " tokens once (0 to " + std::to_string(T - 1) + ").");
  bool picks = a.positions.size() == 2 || (a.revealed && a.positions.size() == 1);  // a reveal may come without a pick
  for (int p : a.positions) picks = picks && p >= 0 && p < T;
  if (!picks)
    return make_error(ErrorCode::invalid_argument, "Send 'positions' as [token, where it looks most], both in the shuffled text, 0 to " +
                                                       std::to_string(T - 1) + ".");
  std::vector<int> shuffled;
  for (int o : a.order) shuffled.push_back(toks->ids[o]);
  auto before = model->content_only_pattern(toks->ids, a.head);
  if (!before) return tl::unexpected(before.error());
  auto after = model->content_only_pattern(shuffled, a.head);
  if (!after) return tl::unexpected(after.error());
  return check_shuffle_follows({a.head, std::move(toks->texts), a.order, std::move(*before), std::move(*after),
                                a.positions[0], a.positions.size() == 2 ? a.positions[1] : -1});
}

}  // namespace

Result<Verdict> check_word_order_answer(const Answer& a, LessonModel* model) {
  return without_credit_if_revealed(check_on_evidence(a, model), a.revealed, "The server remembers that you looked, so this challenge stays unticked; the others can still be earned.");
}

Lesson word_order_lesson() {
  return {kWordOrderLesson,
          0,
          "Encoding word order and RoPE",
          false,
          {{"shuffle-follows", "Shuffle your sentence and, before the new pattern shows, pick where a word now looks most under a head that sees no positions."},
           {"wpe-neighbour", "Pick a position of the model's learned position vectors and guess which other position's vector is most like it."},
           {"offset-only", "Find two pairs of positions, far apart, whose rotated q\u00b7k the engine gives the same."}},
          check_word_order_answer};
}

}  // namespace headlab::course
