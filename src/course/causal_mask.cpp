// course/causal_mask.cpp — lesson 1's challenges and their checks, on the core's maths
// (the constructed heads' patterns and "looks most at").
#include "course/causal_mask.h"

#include "core/constructed_heads.h"
#include "core/pattern_summary.h"
#include "core/sentence.h"
#include "course/answer_check.h"

namespace headlab::course {
namespace {

// "Query 8 (chased)"
std::string query_name(const CausalMaskEvidence& e) {
  return "Query " + std::to_string(e.query) + " (" + e.pattern.tokens[e.query] + ")";
}

std::string key_name(const core::AttentionPattern& p, int key) {
  return "key " + std::to_string(key) + " (" + p.tokens[key] + ")";
}

// "Query 8 (chased) looks most at the (3), 91%" or "Query 6 (the) splits between ..."
std::string looks_phrase(const CausalMaskEvidence& e, const core::LooksMostAt& l) {
  return query_name(e) + (l.is_tie() ? " " : " looks most at ") + core::describe_looks_most_at(l, e.pattern.tokens);
}

std::string mask_state(bool mask) { return mask ? "on" : "off"; }

// Not met because the learner has another head or mask state on screen than the
// challenge needs; says what they have.
Verdict needs(core::HeadKind head, bool mask, const core::AttentionPattern& p) {
  return {false, "This challenge needs the " + core::head_info(head).title + " head with the mask " + mask_state(mask) +
                     "; you have the " + core::head_info(p.head).title + " head with the mask " + mask_state(p.mask) + "."};
}

bool out_of_range(const CausalMaskEvidence& e) { return e.query < 0 || e.query >= e.pattern.size(); }

Verdict out_of_range_verdict(const CausalMaskEvidence& e) {
  return {false, "Query " + std::to_string(e.query) + " is not a token of the sentence: it has " +
                     std::to_string(e.pattern.size()) + " tokens."};
}

}  // namespace

Verdict check_induction_next_word(const CausalMaskEvidence& e) {
  const core::AttentionPattern& p = e.pattern;
  if (out_of_range(e)) return out_of_range_verdict(e);
  if (p.head != core::HeadKind::induction || !p.mask) return needs(core::HeadKind::induction, true, p);
  const int i = e.query;
  const std::vector<std::string>& tok = p.tokens;
  if (i + 1 >= p.size()) return {false, query_name(e) + " is the last token: no word comes after it."};
  if (i == kExampleQuery && core::join_tokens(tok) == core::kLessonSentence)
    return {false, query_name(e) + " is the worked example of the lesson; find another query."};
  const core::LooksMostAt l = core::looks_most_at(p, i);
  const std::string looks = looks_phrase(e, l);
  if (l.is_tie() || l.weight <= 0.5) return {false, looks + ": no single key has over half of its weight."};
  const int key = l.keys.front();
  // The favourite must be an induction match (the token after an earlier copy of the
  // query), not the fallback on position 0 that happens to hold the same word.
  const bool induction_match = key >= 1 && key - 1 != i && tok[key - 1] == tok[i];
  if (!induction_match)
    return {false, looks + ", but " + (key == 0 ? "that is the first token, where the head falls back when the query "
                                                  "has no earlier copy"
                                                : key_name(p, key - 1) + " before it is not an earlier copy of " + tok[i]) +
                       "."};
  if (tok[key] != tok[i + 1])
    return {false, looks + ", which follows an earlier " + tok[i] + ", but the word after the query is " + tok[i + 1] +
                       ", not " + tok[key] + "."};
  return {true, query_name(e) + " puts " + percent(l.weight) + " of its weight on " + key_name(p, key) +
                    ", right after the earlier copy of " + tok[i] + " at " + std::to_string(key - 1) + ", and " +
                    tok[key] + " is the word that comes next (" + std::to_string(i + 1) + ")."};
}

Verdict check_same_word_first_copy(const CausalMaskEvidence& e) {
  const core::AttentionPattern& p = e.pattern;
  if (out_of_range(e)) return out_of_range_verdict(e);
  if (p.head != core::HeadKind::same_word || !p.mask) return needs(core::HeadKind::same_word, true, p);
  const int i = e.query;
  for (int j = 0; j < i; ++j)
    if (p.tokens[j] == p.tokens[i])
      return {false, query_name(e) + " has an earlier copy at " + std::to_string(j) + "; pick a first occurrence."};
  return {true, query_name(e) + " has no earlier copy; " + looks_phrase(e, core::looks_most_at(p, i)) + "."};
}

Verdict check_future_favourite(const CausalMaskEvidence& e) {
  const core::AttentionPattern& p = e.pattern;
  if (out_of_range(e)) return out_of_range_verdict(e);
  if (p.mask) return {false, "The mask is on, so no query can look at a key after it; turn the mask off."};
  const int i = e.query;
  const core::LooksMostAt l = core::looks_most_at(p, i);
  const std::string looks = looks_phrase(e, l);
  for (int key : l.keys)
    if (key <= i) return {false, looks + ": key " + std::to_string(key) + " does not come after it."};
  return {true, looks + ": after position " + std::to_string(i) + ", which the mask would hide."};
}

const std::vector<DetectedChallenge>& causal_mask_challenges() {
  static const std::vector<DetectedChallenge> all = {
      {{"induction-next-word",
        "With the Induction head and the mask on, find a query other than the second cat whose "
        "clear favourite key holds the very word that comes next in the sentence."},
       check_induction_next_word},
      {{"same-word-first-copy",
        "With the Same word head and the mask on, select a token that has no earlier copy of "
        "itself, and see where it looks."},
       check_same_word_first_copy},
      {{"future-favourite", "Turn the causal mask off and find a query whose favourite key comes after it."},
       check_future_favourite},
  };
  return all;
}

std::vector<std::string> causal_mask_challenges_met(const CausalMaskEvidence& e) {
  std::vector<std::string> met;
  for (const DetectedChallenge& c : causal_mask_challenges())
    if (c.check(e).met) met.push_back(c.challenge.id);
  return met;
}

Lesson causal_mask_lesson() {
  Lesson l{kCausalMaskLesson, 0, "Attention heads and the causal mask", false, {}, nullptr};
  for (const DetectedChallenge& c : causal_mask_challenges()) l.challenges.push_back(c.challenge);
  return l;
}

}  // namespace headlab::course
