// research/composition.h — how heads compose, read from the weights alone (Elhage et al.
// 2021, "A Mathematical Framework for Transformer Circuits"; TransformerLens's
// `all_composition_scores` and FactoredMatrix). In TL's orientation (x @ W, row vectors):
//   W_Q, W_K, W_V (C, HS) per head (GQA: a query head's K/V head's), W_O (HS, C)
//   OV = W_V W_O (C, C),  QK = W_Q W_K^T (C, C)
//   score(A, B) = ||A B||_F / (||A||_F ||B||_F),  A = the sender's OV, and B the receiver's
//     Q-composition QK,  K-composition QK^T,  V-composition OV
// for every sender in an earlier layer than the receiver; (L, NH, L, NH) zero elsewhere.
// Computed exactly without any C x C matrix: with G = W^T W = R^T R (R (HS, HS)),
// ||W_V M W_K^T||_F = ||R_V M R_K^T||_F, so each pair costs one (HS, C) x (C, HS) product.
//
// The random baseline: the same score for Gaussian W_V, W_O, W_Q, W_K of the heads' shapes
// (the score does not depend on their scale; Q, K and V scores of random matrices are
// identically distributed, so one baseline serves all three), mean and standard deviation
// over `baseline_samples` draws from `seed`.
//
// --fold-ln (TL's processed weights: fold_ln + center_writing_weights): ln_1's weight
// folded into W_Q, W_K, W_V (Gemma: 1 + w), then, with LayerNorm only, the reading weights
// centred over C (the norm removes the mean anyway) and W_O centred over C (what the next
// norm would remove). Raw weights by default. Neither includes biases, the rotary, q/k
// norms or Gemma's post-attention norm (TL's OV and QK do not either).
//
//   Result<CompositionScores> s = composition_scores(params, {.fold_ln = false});
//   s->at(CompositionKind::k, 0, 3, 1, 2);   // previous-token head 0.3 -> induction head 1.2
//   Result<HeadCircuits> c = head_circuits(params, 1, 2, {.top = 10});
//   c->copying_score;                        // sum(lambda) / sum(|lambda|) of W_E W_V W_O W_U
#pragma once

#include <complex>
#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "model/parameters.h"
#include "util/result.h"

namespace headlab::research {

enum class CompositionKind { q, k, v };
std::string_view composition_kind_name(CompositionKind k);  // "q", "k", "v"

struct CompositionOptions {
  bool fold_ln = false;
  int baseline_samples = 64;  // 1..10000
  std::uint64_t seed = 27;
  std::function<void(int done, int total)> progress = nullptr;  // receiver layers done, of L - 1; null: none
};

struct CompositionScores {
  int L = 0, NH = 0;
  bool fold_ln = false;
  std::vector<float> q, k, v;  // (L, NH, L, NH): [sender layer][sender head][receiver layer][receiver head]
  float baseline_mean = 0.0f;  // the random baseline (see above)
  float baseline_std = 0.0f;
  int baseline_samples = 0;
  const std::vector<float>& of(CompositionKind kind) const;
  float at(CompositionKind kind, int l1, int h1, int l2, int h2) const {
    return of(kind)[((std::size_t(l1) * NH + h1) * L + l2) * NH + h2];
  }
};

// What composition_scores runs, step by step, in multiply-adds at a BLAS kernel's pace (a plain
// loop's step and a Gaussian draw count as the multiply-adds a kernel does in their time), so
// that a caller can bound its work: the sum tracks the time within a small factor on any shape.
//   weights   reading every head's W_Q, W_K, W_V, W_O (and folding ln_1), twice  ~ 2 L (4 C NH HS)
//   factors   a sender factor per head, three receiver factors per head past layer 0: a QR of a
//             (C, HS) matrix (HS^2 (C - HS/3)) and a triangular product (C HS^2 / 2) each
//   products  the scores: 3 C HS^2 per pair of heads in different layers
//   baseline  per sample: 4 C HS Gaussian draws, two factors and one (HS, C) x (C, HS) product
struct CompositionCost {
  double weights = 0, factors = 0, products = 0, baseline = 0;
  double total() const { return weights + factors + products + baseline; }
};
CompositionCost composition_cost(const model::ModelConfig& config, const CompositionOptions& options);

// Errors: invalid_argument (baseline_samples outside 1..10000).
Result<CompositionScores> composition_scores(const model::Parameters& params, const CompositionOptions& options);

// One head's weights in TL's orientation, float32, raw or processed (fold_ln as above). The layer and
// head must exist (model::check_layer_head): a programmer's error otherwise.
struct HeadWeights {
  int C = 0, HS = 0;
  std::vector<float> W_Q, W_K, W_V;  // (C, HS) each
  std::vector<float> W_O;            // (HS, C)
};
HeadWeights head_weights(const model::Parameters& params, int layer, int head, bool fold_ln);

// ---- a head's full circuits over the vocabulary -----------------------------------------
//   OV circuit  W_E W_V W_O W_U        (V, V): [source token][output token] — what attending to
//                                       a token does to each output logit
//   QK circuit  W_E W_Q W_K^T W_E^T    (V, V): [query token][key token] — the attention score
// (embeddings without positions; with fold_ln W_E is centred and ln_final folded into W_U.)
// Copying score (Elhage et al.): sum(lambda) / sum(|lambda|) over the OV circuit's nonzero
// eigenvalues, which are those of the small (HS, HS) W_O W_U W_E W_V: no (V, V) eigensolve.

struct TokenPair {
  int row = 0, col = 0;  // OV: (source, output); QK: (query, key)
  float value = 0.0f;
};

struct CircuitOptions {
  int top = 10;  // token pairs listed per circuit, 1..1000
  bool fold_ln = false;
  std::function<void(int done, int total)> progress = nullptr;  // vocabulary rows scanned (both circuits: 2 V); null: none
};

struct HeadCircuits {
  int layer = 0, head = 0;
  bool fold_ln = false;
  std::vector<TokenPair> ov_top;  // (top) largest entries, largest first
  std::vector<TokenPair> qk_top;
  double copying_score = 0;
  std::vector<std::complex<double>> ov_eigenvalues;  // (HS) largest |lambda| first
  // The share of source tokens whose largest OV output is the token itself (ARENA's
  // "top-1 accuracy" of a copying head's OV circuit).
  float ov_self_top1 = 0.0f;
};

// The work head_circuits runs, counted as composition_cost counts: the vocabulary factors
// (4 V C HS), the two (V, V) circuits streamed in blocks (2 V^2 HS) and scanned for their top
// pairs (2 V^2 plain steps), the OV eigenvalues (V HS^2 and an (HS, HS) eigensolve).
double head_circuits_cost(const model::ModelConfig& config);

// Errors: invalid_argument (a layer or head that does not exist, top outside 1..1000),
// internal (LAPACK's eigensolver failed).
Result<HeadCircuits> head_circuits(const model::Parameters& params, int layer, int head, const CircuitOptions& options);

// The copying score alone (no (V, V) pass: 2 V C HS multiply-adds). Errors: as head_circuits'.
Result<double> copying_score(const model::Parameters& params, int layer, int head, bool fold_ln);
// The work of copying_score for one head, counted as composition_cost counts (its layer's weights
// read, 2 V C HS, the OV eigenvalues).
double copying_score_cost(const model::ModelConfig& config);

}  // namespace headlab::research
