// train/data.cpp — training windows: text, copied spans, repeated random sequences,
// previous-token windows and in-context Markov chains.
#include "train/data.h"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "util/check.h"

namespace headlab::train {

Batch batch_allocate(int B, int T) {
  Batch b;
  b.B = B;
  b.T = T;
  b.inputs.assign(static_cast<std::size_t>(B) * T, 0);
  b.targets.assign(static_cast<std::size_t>(B) * T, 0);
  return b;
}

void window_from_text(int* window, const std::vector<int>& stream, int T, int bos, Rng& rng) {
  HEADLAB_CHECK(static_cast<int>(stream.size()) >= T);
  const int offset = rng.below(static_cast<int>(stream.size()) - T + 1);
  window[0] = bos;
  std::copy(stream.begin() + offset, stream.begin() + offset + T, window + 1);
}

void window_copy_span(int* window, int T, int min_span, int max_span, Rng& rng) {
  const int hi = std::min(max_span, T / 2);
  const int lo = std::min(min_span, hi);
  if (hi < 1) return;
  const int len = rng.between(lo, hi);
  // positions 1..T hold text; source [a, a+len), destination [b, b+len), a + len <= b
  const int a = rng.between(1, T + 1 - 2 * len);
  const int b = rng.between(a + len, T + 1 - len);
  std::copy(window + a, window + a + len, window + b);
}

void window_repeated_random(int* window, int T, int V, int bos, int min_span, int max_span, Rng& rng) {
  window[0] = bos;
  for (int i = 1; i <= T; ++i) {
    const int t = rng.below(V - 1);
    window[i] = t >= bos ? t + 1 : t;  // every id but BOS
  }
  // a random prefix, then a span of random tokens repeated to the end of the window:
  // from the second copy on, only a head that finds the previous copy and reads what
  // followed it predicts the next token (and every copy is a fresh example of that)
  const int hi = std::max(1, std::min(max_span, T / 2));
  const int lo = std::max(1, std::min(min_span, hi));
  const int len = rng.between(lo, hi);
  const int a = rng.between(1, T + 1 - 2 * len);
  for (int i = a + len; i <= T; ++i) window[i] = window[i - len];
}

int previous_token_successor(int id, int V, int bos) {
  // ids other than BOS, numbered 0..V-2, then i -> (i * k + 31) mod (V - 1), k coprime to V - 1
  const int n = V - 1;
  int k = 97;
  while (std::gcd(k, n) != 1) k += 2;
  const int i = id > bos ? id - 1 : id;
  const int j = static_cast<int>((std::int64_t(i) * k + 31) % n);
  return j >= bos ? j + 1 : j;
}

void window_previous_token(int* window, int T, int V, int bos, Rng& rng) {
  window[0] = bos;
  for (int i = 1; i <= std::min(T, 2); ++i) {
    const int t = rng.below(V - 1);
    window[i] = t >= bos ? t + 1 : t;
  }
  for (int i = 3; i <= T; ++i) window[i] = previous_token_successor(window[i - 2], V, bos);
}

void window_markov(int* window, int T, int V, int bos, int min_states, int max_states, double alpha, Rng& rng) {
  HEADLAB_CHECK(V >= 2 && min_states >= 1 && min_states <= max_states && alpha > 0);
  const int hi = std::min(max_states, V - 1);
  const int k = rng.between(std::min(min_states, hi), hi);
  // k distinct ids other than BOS: a partial Fisher-Yates shuffle would need V ints per
  // window, so draw and reject repeats (k is small next to V)
  std::vector<int> states;
  states.reserve(static_cast<std::size_t>(k));
  while (static_cast<int>(states.size()) < k) {
    const int t = rng.below(V - 1);
    const int id = t >= bos ? t + 1 : t;
    if (std::find(states.begin(), states.end(), id) == states.end()) states.push_back(id);
  }
  // (k, k) cumulative transition rows; a Dirichlet row is independent Gammas, normalised
  std::vector<double> cdf(static_cast<std::size_t>(k) * k);
  for (int s = 0; s < k; ++s) {
    double* row = cdf.data() + static_cast<std::size_t>(s) * k;
    double sum = 0.0;
    for (int j = 0; j < k; ++j) sum += (row[j] = rng.gamma(alpha));
    // a tiny alpha can underflow every Gamma of a row to 0: that row becomes uniform
    if (!(sum > 0.0)) std::fill(row, row + k, 1.0), sum = k;
    double acc = 0.0;
    for (int j = 0; j < k; ++j) row[j] = (acc += row[j] / sum);
    row[k - 1] = 1.0;  // rounding never leaves the last state out of reach
  }
  window[0] = bos;
  int s = rng.below(k);
  for (int i = 1; i <= T; ++i) {
    window[i] = states[static_cast<std::size_t>(s)];
    const double* row = cdf.data() + static_cast<std::size_t>(s) * k;
    s = static_cast<int>(std::upper_bound(row, row + k, rng.uniform()) - row);
    s = std::min(s, k - 1);
  }
}

DataMix data_mix_at_step(const DataMix& mix, int step) {
  const double synthetic = mix.repeated_random + mix.previous_token + mix.markov;
  if (step >= mix.text_from_step || synthetic <= 0.0) return mix;
  DataMix early = mix;
  early.copied_span = 0.0;
  early.repeated_random = mix.repeated_random / synthetic;
  early.previous_token = mix.previous_token / synthetic;
  early.markov = 1.0 - early.repeated_random - early.previous_token;  // sums to 1 exactly
  return early;
}

void batch_fill(Batch& batch, const std::vector<int>& stream, const DataMix& mix, int V, int bos, Rng& rng) {
  const int T = batch.T;
  std::vector<int> window(static_cast<std::size_t>(T) + 1);
  for (int b = 0; b < batch.B; ++b) {
    const double u = rng.uniform();
    if (u < mix.repeated_random) {
      window_repeated_random(window.data(), T, V, bos, mix.min_span, mix.max_span, rng);
    } else if (u < mix.repeated_random + mix.previous_token) {
      window_previous_token(window.data(), T, V, bos, rng);
    } else if (u < mix.repeated_random + mix.previous_token + mix.markov) {
      window_markov(window.data(), T, V, bos, mix.markov_min_states, mix.markov_max_states, mix.markov_alpha, rng);
    } else {
      window_from_text(window.data(), stream, T, bos, rng);
      if (u < mix.repeated_random + mix.previous_token + mix.markov + mix.copied_span)
        window_copy_span(window.data(), T, mix.min_span, mix.max_span, rng);
    }
    std::copy(window.begin(), window.begin() + T, batch.inputs.begin() + static_cast<std::ptrdiff_t>(b) * T);
    std::copy(window.begin() + 1, window.end(), batch.targets.begin() + static_cast<std::ptrdiff_t>(b) * T);
  }
}

}  // namespace headlab::train
