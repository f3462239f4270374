// core/challenges.cpp — the detectors.
#include "core/challenges.h"

#include "core/pattern_summary.h"
#include "core/sentence.h"

namespace headlab::core {

const std::vector<ChallengeInfo>& causal_mask_challenges() {
  static const std::vector<ChallengeInfo> all = {
      {ChallengeId::induction_next_word, "induction-next-word",
       "With the Induction head and the mask on, find a query other than the second cat whose "
       "clear favourite key holds the very word that comes next in the sentence."},
      {ChallengeId::same_word_first_copy, "same-word-first-copy",
       "With the Same word head and the mask on, select a token that has no earlier copy of "
       "itself, and see where it looks."},
      {ChallengeId::future_favourite, "future-favourite",
       "Turn the causal mask off and find a query whose favourite key comes after it."},
  };
  return all;
}

const ChallengeInfo& challenge_info(ChallengeId id) {
  for (const ChallengeInfo& c : causal_mask_challenges())
    if (c.id == id) return c;
  HEADLAB_CHECK(false);
  return causal_mask_challenges().front();
}

bool challenge_met(ChallengeId id, const LessonView& view) {
  const AttentionPattern& p = view.pattern;
  const int i = view.query;
  if (i < 0 || i >= p.size()) return false;
  const std::vector<std::string>& tok = p.tokens;
  switch (id) {
    case ChallengeId::induction_next_word: {
      if (p.head != HeadKind::induction || !p.mask || i + 1 >= p.size()) return false;
      if (i == kExampleQuery && join_tokens(tok) == kLessonSentence) return false;
      LooksMostAt l = looks_most_at(p, i);
      if (l.is_tie() || l.weight <= 0.5) return false;
      const int key = l.keys.front();
      // The favourite must be an induction match (the token after an earlier copy of the
      // query), not the fallback on position 0 that happens to hold the same word.
      const bool induction_match = key >= 1 && key - 1 != i && tok[key - 1] == tok[i];
      return induction_match && tok[key] == tok[i + 1];
    }
    case ChallengeId::same_word_first_copy: {
      if (p.head != HeadKind::same_word || !p.mask) return false;
      for (int j = 0; j < i; ++j)
        if (tok[j] == tok[i]) return false;
      return true;
    }
    case ChallengeId::future_favourite: {
      if (p.mask) return false;
      LooksMostAt l = looks_most_at(p, i);
      for (int key : l.keys)
        if (key <= i) return false;
      return true;
    }
  }
  return false;
}

std::vector<ChallengeId> challenges_met(const LessonView& view) {
  std::vector<ChallengeId> met;
  for (const ChallengeInfo& c : causal_mask_challenges())
    if (challenge_met(c.id, view)) met.push_back(c.id);
  return met;
}

}  // namespace headlab::core
