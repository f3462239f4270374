// train/cross_entropy.cpp — softmax + cross-entropy, forward and backward side by side.
// Both run over every logit of a step ((B*T, V): at V = 4,096 they are as big as the
// unembedding product), so their loops vectorise: the model's fast exp, 16-lane reductions.
#include "train/cross_entropy.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

#include "model/ops/fast_exp.h"

namespace headlab::train {

namespace {

HEADLAB_MULTIVERSION
void scale_row(float* p, int n, float s) {
  for (int i = 0; i < n; i++) p[i] *= s;
}

}  // namespace

void cross_entropy_forward(float* losses, float* probs, const float* logits, const int* targets,
                           int N, int V) {
  for (int n = 0; n < N; ++n) {
    const float* x = logits + static_cast<std::size_t>(n) * V;
    float* p = probs + static_cast<std::size_t>(n) * V;
    // subtract the row max: exp overflows
    const float maxv = model::row_max(x, V);
    std::copy(x, x + V, p);
    float sum = 0.0f;
    model::exp_shifted_inplace(p, V, maxv, &sum);
    scale_row(p, V, 1.0f / sum);
    const int t = targets[n];
    // -log p computed from the logits, not log(p): p can underflow to 0
    losses[n] = t < 0 ? 0.0f : std::log(sum) - (x[t] - maxv);
  }
}

HEADLAB_MULTIVERSION
void cross_entropy_backward(float* dlogits, const float* dlosses, const float* probs,
                            const int* targets, int N, int V) {
  for (int n = 0; n < N; ++n) {
    const int t = targets[n];
    float* dx = dlogits + static_cast<std::size_t>(n) * V;
    if (t < 0) {
      std::fill(dx, dx + V, 0.0f);
      continue;
    }
    const float* p = probs + static_cast<std::size_t>(n) * V;
    const float dloss = dlosses[n];
    for (int v = 0; v < V; ++v) dx[v] = p[v] * dloss;
    dx[t] -= dloss;
  }
}

}  // namespace headlab::train
