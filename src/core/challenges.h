// core/challenges.h — the three challenges of "Attention heads and the causal mask",
// each detected from what the learner is looking at (head, mask, query), never by a
// button. Detectors are pure: the server records what they report.
#pragma once

#include <string>
#include <vector>

#include "core/attention_pattern.h"

namespace headlab::core {

enum class ChallengeId { induction_next_word, same_word_first_copy, future_favourite };

struct ChallengeInfo {
  ChallengeId id;
  std::string name;  // stable id in JSON and the store: "induction-next-word"
  std::string text;  // the task as the learner reads it
};

inline constexpr const char* kCausalMaskLesson = "causal-mask";

// The worked example of the lesson page: the second "cat" (7) of the lesson sentence.
// Challenge 1 asks for a different query.
inline constexpr int kExampleQuery = 7;

const std::vector<ChallengeInfo>& causal_mask_challenges();

// What the learner has on screen.
struct LessonView {
  const AttentionPattern& pattern;  // the head, its mask and the weights
  int query;                        // the selected row
};

// (1) Induction head, mask on: a query (not the worked example) whose clear favourite
//     key (one key, over half the weight) is an induction match (it follows an earlier
//     copy of the query) and holds the word that comes right after the query.
// (2) Same word head, mask on: a query with no earlier copy of its own word.
// (3) Mask off, any head: a query whose favourite key(s) all come after it.
bool challenge_met(ChallengeId id, const LessonView& view);

// Every challenge the view meets, in lesson order.
std::vector<ChallengeId> challenges_met(const LessonView& view);

const ChallengeInfo& challenge_info(ChallengeId id);

}  // namespace headlab::core
