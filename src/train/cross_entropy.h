// train/cross_entropy.h — the loss: softmax over the vocabulary, then -log p[target].
//   forward:  probs[n, :] = softmax(logits[n, :]);  losses[n] = -log probs[n, target[n]]
//   backward: dlogits[n, v] = (probs[n, v] - [v == target[n]]) * dlosses[n]   (written, not added)
// (softmax and cross-entropy fused, as in llm.c: the gradient through both is p - onehot.)
// A target of -1 is ignored: loss 0 and no gradient (padding, positions not scored).
#pragma once

namespace headlab::train {

void cross_entropy_forward(float* losses,        // (N)
                           float* probs,         // (N, V)
                           const float* logits,  // (N, V)
                           const int* targets,   // (N) in [0, V) or -1
                           int N, int V);
void cross_entropy_backward(float* dlogits,        // (N, V)  overwritten
                            const float* dlosses,  // (N)
                            const float* probs,    // (N, V)
                            const int* targets,    // (N)
                            int N, int V);

}  // namespace headlab::train
