// core/constructed_heads.h — five attention heads built by rule, not trained.
// Each gives query i and key j a score s(i, j); the mask and softmax then make weights.
//   previous:    5 where j = i - 1 (for i = 0, where j = 0); else 0
//   first:       5 where j = 0; else 0
//   same-word:   5 where j != i and token j = token i; else 0
//   induction:   5 where j >= 1, j - 1 != i and token j-1 = token i; else 2 where j = 0; else 0
//   punctuation: 5 where token j is a punctuation mark; else 2 where j = 0; else 0
//
//   auto kind = head_kind_from_name("induction");      // Result<HeadKind>
//   Matrix s = constructed_head_scores(*kind, tokens);  // (T, T)
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "util/matrix.h"
#include "util/result.h"

namespace headlab::core {

enum class HeadKind { previous, first, same_word, induction, punctuation };

struct Citation {
  std::string authors_year;  // "Clark et al. 2019"
  std::string title;
  std::string url;
};

struct HeadInfo {
  HeadKind kind;
  std::string name;         // command-line and JSON name: "same-word"
  std::string title;        // "Same word"
  std::string rule;         // the scoring rule in one line
  std::string description;  // what the head does, in one sentence
  std::vector<Citation> citations;
};

// The five heads in teaching order.
const std::vector<HeadInfo>& constructed_heads();
const HeadInfo& head_info(HeadKind kind);

// "previous, first, same-word, induction, punctuation"
std::string head_names_list();

// Error: invalid_argument naming the allowed heads.
Result<HeadKind> head_kind_from_name(std::string_view name);

// s(i, j) for every query i and key j, before any mask. (T, T)
Matrix constructed_head_scores(HeadKind kind, const std::vector<std::string>& tokens);

// The clause of the head's rule that gave s(i, j) its value, in a few words, for the
// step-through of one query: "the token just before “sat”", "no rule matches: 0".
// tokens (T); i, j in [0, T).
std::string constructed_head_clause(HeadKind kind, const std::vector<std::string>& tokens, int i, int j);

}  // namespace headlab::core
