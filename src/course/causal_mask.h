// course/causal_mask.h — lesson 1, "Attention heads and the causal mask". Its three
// challenges are detected from what the learner has on screen (a constructed head over
// their sentence, the mask on or off, the selected query), never by a button:
//   (1) induction-next-word   Induction head, mask on: a query (not the worked example)
//       whose clear favourite key (one key, over half the weight) is an induction match
//       (it follows an earlier copy of the query) and holds the word that comes next.
//   (2) same-word-first-copy  Same word head, mask on: a query with no earlier copy.
//   (3) future-favourite      Mask off, any head: a query whose favourite key(s) all
//       come after it.
//
//   CausalMaskEvidence e{pattern, 8};
//   Verdict v = check_induction_next_word(e);   // v.met, "Query 8 (chased) puts 62% ..."
#pragma once

#include <string>
#include <vector>

#include "core/attention_pattern.h"
#include "course/lesson.h"

namespace headlab::course {

inline constexpr const char* kCausalMaskLesson = "causal-mask";

// The worked example of the lesson page: the second "cat" (7) of the lesson sentence.
// Challenge 1 asks for a different query.
inline constexpr int kExampleQuery = 7;

// What the learner has on screen: the head, its mask and weights, and the selected row.
struct CausalMaskEvidence {
  const core::AttentionPattern& pattern;  // (T, T) weights of one constructed head
  int query;                              // the selected row; may be out of range
};

Verdict check_induction_next_word(const CausalMaskEvidence& e);
Verdict check_same_word_first_copy(const CausalMaskEvidence& e);
Verdict check_future_favourite(const CausalMaskEvidence& e);

struct DetectedChallenge {
  Challenge challenge;
  Verdict (*check)(const CausalMaskEvidence&);
};

// The three challenges in lesson order, each with its check.
const std::vector<DetectedChallenge>& causal_mask_challenges();

// The ids of every challenge the evidence meets, in lesson order.
std::vector<std::string> causal_mask_challenges_met(const CausalMaskEvidence& e);

Lesson causal_mask_lesson();

}  // namespace headlab::course
