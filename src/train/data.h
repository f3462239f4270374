// train/data.h — what the model reads: windows of T + 1 tokens that start with BOS,
// split into inputs x = w[0..T-1] and targets y = w[1..T].
//   * text windows: BOS + T tokens from a random offset of the tokenised corpus;
//   * copied spans: a text window in which a span is copied to a later place, so that
//     "find the earlier occurrence, predict what followed it" pays off (induction);
//   * repeated random segments: BOS + a random prefix, then a span of R random tokens
//     repeated to the end of the window (R and the prefix vary per window) — the
//     induction-head curriculum: each copy is unpredictable except by looking back at
//     the one before it.
//   * previous-token windows: BOS + random tokens in which every token from the third on
//     is a fixed permutation of the token two places back, so the next token follows from
//     the current position's previous token: they reward a sharp previous-token head,
//     the half of an induction circuit that repeated random tokens alone grow slowly.
//   * in-context Markov chains: BOS + a walk on a few random ids whose transition
//     probabilities are drawn afresh for each window (Edelman et al. 2024), so the next
//     token can only be guessed from what followed the current token earlier in the
//     same window. Mixed half and half with repeated random windows (and with an untied
//     unembedding), these grow the textbook pair within a few thousand steps: a sharp previous-token head in layer 0
//     and an induction head in layer 1 that reads it (K-composition). Repeated random
//     windows alone let a model learn in context without that pair (see models/README).
//
//   Rng rng(seed);
//   DataMix mix;  mix.copied_span = 0.3;  mix.repeated_random = 0.2;
//   Batch b = batch_allocate(16, 128);
//   batch_fill(b, corpus_tokens, mix, /*V=*/4096, /*bos=*/4095, rng);
#pragma once

#include <string>
#include <vector>

#include "train/rng.h"
#include "util/result.h"

namespace headlab::train {

struct Batch {
  int B = 0, T = 0;
  std::vector<int> inputs;   // (B, T) x: BOS first
  std::vector<int> targets;  // (B, T) y: the next token of each position
};

Batch batch_allocate(int B, int T);

// Fractions of windows of each kind; the rest are plain text windows.
struct DataMix {
  double copied_span = 0.0;      // text window with a span copied later in it
  double repeated_random = 0.0;  // BOS + random tokens repeated
  double previous_token = 0.0;   // BOS + tokens each a permutation of the one two back
  double markov = 0.0;           // BOS + a walk on an in-context Markov chain
  int min_span = 4;              // the span / period length, in tokens
  int max_span = 64;
  int markov_min_states = 4;     // the chain's number of states, drawn per window
  int markov_max_states = 16;
  double markov_alpha = 0.3;     // Dirichlet concentration of each transition row
  // A curriculum: before this many steps, no text windows; the synthetic kinds above fill
  // the batch in proportion to their fractions. Synthetic windows grow the heads fastest
  // when nothing else competes for the model's first steps (models/README.md).
  int text_from_step = 0;
};

// The mix in force at a step: mix itself from text_from_step on; before, the synthetic
// fractions scaled to sum to 1 (mix itself when it has no synthetic kind).
DataMix data_mix_at_step(const DataMix& mix, int step);

// window (T + 1): BOS + stream[offset .. offset + T - 1]; needs stream.size() >= T.
void window_from_text(int* window, const std::vector<int>& stream, int T, int bos, Rng& rng);
// Copies one span of length in [min_span, max_span] (at most T / 2) from a random place
// of window[1..T] to a random later place that does not overlap it.
void window_copy_span(int* window, int T, int min_span, int max_span, Rng& rng);
// window (T + 1): BOS + T random tokens from [0, V) without BOS: a prefix of random
// length, then a span of length R in [min_span, max_span] (at most T / 2) repeated to
// the end, so window[i] == window[i - R] from the second copy on.
void window_repeated_random(int* window, int T, int V, int bos, int min_span, int max_span, Rng& rng);

// window (T + 1): BOS, two random tokens, then window[i] = sigma(window[i - 2]), where sigma
// is a fixed permutation of the ids other than BOS (previous_token_successor).
void window_previous_token(int* window, int T, int V, int bos, Rng& rng);
int previous_token_successor(int id, int V, int bos);

// window (T + 1): BOS, then T tokens walked on a Markov chain drawn for this window: k
// states (k uniform in [min_states, max_states], at most V - 1), distinct random ids
// other than BOS, each with a transition row drawn from Dirichlet(alpha, ..., alpha); the
// walk starts at a uniformly chosen state. A small alpha makes each row peaked, so what
// followed a token before is a good guess of what follows it next.
void window_markov(int* window, int T, int V, int bos, int min_states, int max_states, double alpha, Rng& rng);

// Fills every row of the batch from the mix. stream may be empty only when
// mix.repeated_random + mix.previous_token + mix.markov == 1.
void batch_fill(Batch& batch, const std::vector<int>& stream, const DataMix& mix, int V, int bos, Rng& rng);


}  // namespace headlab::train
