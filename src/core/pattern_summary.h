// core/pattern_summary.h — "looks most at": the key a query gives the most weight.
// Keys within kTieTolerance of the largest weight tie, and a tie is reported as a
// split ("splits between cat (1) and dog (4), 48% each"), never resolved silently.
#pragma once

#include <string>
#include <vector>

#include "core/attention_pattern.h"

namespace headlab::core {

inline constexpr double kTieTolerance = 0.005;

struct LooksMostAt {
  std::vector<int> keys;  // the favourite key, or every key of a tie, ascending
  double weight = 0.0;    // the largest weight in the row
  bool is_tie() const { return keys.size() > 1; }
};

LooksMostAt looks_most_at(const AttentionPattern& p, int query);

// "chased (2), 92%" or "splits between cat (1) and dog (4), 48% each"
std::string describe_looks_most_at(const LooksMostAt& l, const std::vector<std::string>& tokens);

}  // namespace headlab::core
