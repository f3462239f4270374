// core/pattern_summary.cpp — argmax with ties, and its sentence.
#include "core/pattern_summary.h"

#include <cmath>

namespace headlab::core {

LooksMostAt looks_most_at(const AttentionPattern& p, int query) {
  HEADLAB_CHECK(query >= 0 && query < p.size());
  LooksMostAt out;
  const double* w = p.weights.row(query);
  for (int j = 0; j < p.size(); ++j) out.weight = std::max(out.weight, w[j]);
  for (int j = 0; j < p.size(); ++j)
    if (!p.is_masked(query, j) && out.weight - w[j] <= kTieTolerance) out.keys.push_back(j);
  return out;
}

std::string describe_looks_most_at(const LooksMostAt& l, const std::vector<std::string>& tokens) {
  auto name = [&](int j) { return tokens[j] + " (" + std::to_string(j) + ")"; };
  std::string percent = std::to_string(std::lround(l.weight * 100.0)) + "%";
  if (!l.is_tie()) return name(l.keys.front()) + ", " + percent;
  std::string out = "splits between ";
  for (std::size_t k = 0; k < l.keys.size(); ++k) {
    if (k > 0) out += (k + 1 == l.keys.size()) ? " and " : ", ";
    out += name(l.keys[k]);
  }
  return out + ", " + percent + " each";
}

}  // namespace headlab::core
