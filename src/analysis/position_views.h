// analysis/position_views.h — the numbers of the word-order lesson, computed by the engine:
// a layer-0 head's content-only pattern (no positions, no mask), the similarity of position
// vectors (the model's learned wpe, or Vaswani et al. 2017's sinusoids), q.k after the
// engine's own rotary code (model/ops/rope.h), and the wavelengths of RoPE's pairs.
//
//   auto p = content_only_pattern(params, ids, /*head=*/2);     // (T, T), rows sum to 1
//   auto s = position_similarity(params.t.wpe, params.config.n_ctx, params.config.n_embd);
//   auto d = rope_dots(q, k, 10000.0f, {{5, 2}, {9, 6}});        // equal: the same offset 3
//   auto w = rope_wavelengths(500000.0, 128);                     // Llama 3's 64 pairs
#pragma once

#include <span>
#include <utility>
#include <vector>

#include "model/parameters.h"
#include "util/result.h"

namespace headlab::analysis {

// Layer 0, head `head`, on the token embeddings alone: x = ln_1(wte[ids]), q = x W_Q + b,
// k = x W_K + b, p = softmax(q.k * scale) over every key (no causal mask, no positions).
// Permuting ids permutes the rows and columns of p the same way: order is invisible.
// Errors: invalid_argument (no ids, an id outside the vocabulary, no such head),
// unsupported (a model whose first norm is not LayerNorm).
Result<std::vector<float>> content_only_pattern(const model::Parameters& params, std::span<const int> ids,
                                                int head);  // (T, T) row-major

// Cosine similarity of every pair of rows of P: (N, N) row-major. P is (N, C).
std::vector<float> position_similarity(const float* P, int N, int C);

// Vaswani et al. 2017: PE[t][2i] = sin(t / 10000^(2i/C)), PE[t][2i+1] = cos(the same). (N, C)
std::vector<float> sinusoidal_positions(int N, int C);

struct RopeDot {
  int m = 0, n = 0;        // q at position m, k at position n
  std::vector<float> q, k;  // (HS) each, after the rotation
  double dot = 0.0;        // q_m . k_n
};

// Rotates q to each pair's m and k to its n with model::rope_forward (NeoX halves, the whole
// head) and takes their dot products. Errors: invalid_argument (q and k of different or odd
// sizes, more than 512 channels, a position outside [0, kMaxRopePosition], more than 256
// pairs, theta not above 1).
inline constexpr int kMaxRopePosition = 8192;
Result<std::vector<RopeDot>> rope_dots(const std::vector<float>& q, const std::vector<float>& k, float theta,
                                       const std::vector<std::pair<int, int>>& pairs);

struct RopePair {
  int i = 0;                 // the pair (channels i and i + HS/2)
  double frequency = 0.0;    // radians per token: theta^(-2i/HS)
  double wavelength = 0.0;   // tokens per full turn: 2 pi / frequency
};

// Errors: invalid_argument, with what to type instead (theta not a number above 1 or above
// 1e9, head size not an even whole number from 2 to 1024).
Result<std::vector<RopePair>> rope_wavelengths(double theta, int head_size);

}  // namespace headlab::analysis
