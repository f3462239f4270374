// model/next_token.cpp — row log-softmax, per-token loss and top-k over logits.
#include "model/next_token.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "util/check.h"

namespace headlab::model {

double row_log_sum_exp(const float* row, int V) {
  HEADLAB_CHECK(V >= 1);
  const double maxv = *std::max_element(row, row + V);
  double sum = 0.0;
  for (int v = 0; v < V; ++v) sum += std::exp(double(row[v]) - maxv);
  return maxv + std::log(sum);
}

double token_loss(const float* row, int V, int target) {
  HEADLAB_CHECK(target >= 0 && target < V);
  return row_log_sum_exp(row, V) - double(row[target]);
}

std::vector<float> next_token_losses(std::span<const float> logits, std::span<const int> ids, int V) {
  const int T = static_cast<int>(ids.size());
  HEADLAB_CHECK(logits.size() >= std::size_t(T) * V);
  std::vector<float> out;
  for (int t = 0; t + 1 < T; ++t)
    out.push_back(static_cast<float>(token_loss(logits.data() + std::size_t(t) * V, V, ids[t + 1])));
  return out;
}

double mean_next_token_loss(std::span<const float> logits, std::span<const int> ids, int V) {
  const int T = static_cast<int>(ids.size());
  if (T < 2) return std::numeric_limits<double>::quiet_NaN();
  HEADLAB_CHECK(logits.size() >= std::size_t(T) * V);
  double total = 0.0;
  for (int t = 0; t + 1 < T; ++t) total += token_loss(logits.data() + std::size_t(t) * V, V, ids[t + 1]);
  return total / (T - 1);
}

std::vector<int> top_k(const float* row, int n, int k) {
  k = std::max(0, std::min(k, n));
  std::vector<int> idx(n);
  std::iota(idx.begin(), idx.end(), 0);
  std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), [&](int a, int b) {
    return row[a] > row[b] || (row[a] == row[b] && a < b);
  });
  idx.resize(k);
  return idx;
}

std::vector<TokenChance> top_next(const float* row, int V, int k) {
  const double lse = row_log_sum_exp(row, V);
  std::vector<TokenChance> out;
  for (int id : top_k(row, V, k))
    out.push_back({id, row[id], static_cast<float>(std::exp(double(row[id]) - lse))});
  return out;
}

}  // namespace headlab::model
