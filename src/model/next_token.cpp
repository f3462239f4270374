// model/next_token.cpp — row log-softmax, per-token loss and top-k over logits.
#include "model/next_token.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
// GCC 12 warns about its own _mm512_undefined_* inside _mm512_cvtps_pd and _mm512_reduce_add_pd:
// a known false positive (as in ops/matmul_packed.cpp).
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#endif

#include "model/blas.h"
#include "model/ops/fast_exp.h"  // row_max
#include "util/check.h"

namespace headlab::model {

namespace {

// sum_v exp(row[v] - maxv) in double. The exps are glibc's own vector variants (libmvec, the
// functions GCC calls when it vectorises exp: 4 ulp at most, so the sum is as exact as the plain
// loop's to 1e-15) on 8 or 4 lanes, chosen from cpuid; the plain loop elsewhere. 128,256 logits
// a position made glibc's scalar exp 8 % of a class's burst.
double sum_exp_plain(const float* row, int V, double maxv) {
  double sum = 0.0;
  for (int v = 0; v < V; ++v) sum += std::exp(double(row[v]) - maxv);
  return sum;
}

#if defined(__x86_64__) && defined(__GNUC__)
extern "C" __attribute__((target("avx512f"))) __m512d _ZGVeN8v_exp(__m512d);  // libmvec (glibc >= 2.22): 8 doubles, AVX-512
extern "C" __attribute__((target("avx2"))) __m256d _ZGVdN4v_exp(__m256d);  // 4 doubles, AVX2

__attribute__((target("avx512f"))) double sum_exp_avx512(const float* row, int V, double maxv) {
  const __m512d m = _mm512_set1_pd(maxv);
  __m512d acc = _mm512_setzero_pd();
  int v = 0;
  for (; v + 8 <= V; v += 8) acc = _mm512_add_pd(acc, _ZGVeN8v_exp(_mm512_sub_pd(_mm512_cvtps_pd(_mm256_loadu_ps(row + v)), m)));
  return _mm512_reduce_add_pd(acc) + sum_exp_plain(row + v, V - v, maxv);
}

__attribute__((target("avx2"))) double sum_exp_avx2(const float* row, int V, double maxv) {
  const __m256d m = _mm256_set1_pd(maxv);
  __m256d acc = _mm256_setzero_pd();
  int v = 0;
  for (; v + 4 <= V; v += 4) acc = _mm256_add_pd(acc, _ZGVdN4v_exp(_mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(row + v)), m)));
  alignas(32) double lanes[4];
  _mm256_store_pd(lanes, acc);
  return (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]) + sum_exp_plain(row + v, V - v, maxv);
}
#endif

double sum_exp(const float* row, int V, double maxv) {
#if defined(__x86_64__) && defined(__GNUC__)
  static const int lanes = [] {
    const CpuFeatures f = cpu_features();
    return f.avx512f ? 8 : f.avx2 ? 4 : 1;
  }();
  if (lanes == 8) return sum_exp_avx512(row, V, maxv);
  if (lanes == 4) return sum_exp_avx2(row, V, maxv);
#endif
  return sum_exp_plain(row, V, maxv);
}

}  // namespace

double row_log_sum_exp(const float* row, int V) {
  HEADLAB_CHECK(V >= 1);
  const double maxv = row_max(row, V);
  return maxv + std::log(sum_exp(row, V, maxv));
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
  // one pass keeping the k best seen in a heap whose front is the worst of them: most values
  // lose to it at one comparison (a vocabulary of 128,256 for 5 tokens), none costs more than
  // log k (a sorted row is no worse)
  auto better = [row](int a, int b) { return row[a] > row[b] || (row[a] == row[b] && a < b); };
  std::vector<int> heap;
  heap.reserve(std::size_t(k));
  for (int i = 0; i < n && k > 0; ++i) {
    if (int(heap.size()) < k) {
      heap.push_back(i);
      std::push_heap(heap.begin(), heap.end(), better);
    } else if (better(i, heap.front())) {
      std::pop_heap(heap.begin(), heap.end(), better);
      heap.back() = i;
      std::push_heap(heap.begin(), heap.end(), better);
    }
  }
  std::sort(heap.begin(), heap.end(), better);
  return heap;
}

std::vector<TokenChance> top_next(const float* row, int V, int k) { return top_next(row, V, k, row_log_sum_exp(row, V)); }

std::vector<TokenChance> top_next(const float* row, int V, int k, double lse) {
  std::vector<TokenChance> out;
  for (int id : top_k(row, V, k))
    out.push_back({id, row[id], static_cast<float>(std::exp(double(row[id]) - lse))});
  return out;
}

}  // namespace headlab::model
