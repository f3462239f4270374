// train/cross_entropy.cpp — softmax + cross-entropy, forward and backward side by side.
#include "train/cross_entropy.h"

#include <cmath>

namespace headlab::train {

void cross_entropy_forward(float* losses, float* probs, const float* logits, const int* targets,
                           int N, int V) {
  for (int n = 0; n < N; ++n) {
    const float* x = logits + static_cast<long long>(n) * V;
    float* p = probs + static_cast<long long>(n) * V;
    // subtract the row max: exp overflows
    float maxv = x[0];
    for (int v = 1; v < V; ++v) maxv = std::fmax(maxv, x[v]);
    double sum = 0.0;
    for (int v = 0; v < V; ++v) {
      p[v] = std::exp(x[v] - maxv);
      sum += p[v];
    }
    const float inv = static_cast<float>(1.0 / sum);
    for (int v = 0; v < V; ++v) p[v] *= inv;
    const int t = targets[n];
    // -log p computed from the logits, not log(p): p can underflow to 0
    losses[n] = t < 0 ? 0.0f : static_cast<float>(std::log(sum) - (x[t] - maxv));
  }
}

void cross_entropy_backward(float* dlogits, const float* dlosses, const float* probs,
                            const int* targets, int N, int V) {
  for (int n = 0; n < N; ++n) {
    const int t = targets[n];
    if (t < 0) continue;
    const float* p = probs + static_cast<long long>(n) * V;
    float* dx = dlogits + static_cast<long long>(n) * V;
    const float dloss = dlosses[n];
    for (int v = 0; v < V; ++v) dx[v] += (p[v] - (v == t ? 1.0f : 0.0f)) * dloss;
  }
}

}  // namespace headlab::train
