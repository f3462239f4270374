// train/adamw.h — the optimiser (Loshchilov & Hutter 2019) and gradient clipping.
//   m = b1 m + (1 - b1) g;   v = b2 v + (1 - b2) g^2;   (t counts steps from 1)
//   p -= lr * ( (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps) + weight_decay * p )
// exactly torch.optim.AdamW's update (decay decoupled from the gradient).
#pragma once

#include <cstddef>

namespace headlab::train {

struct AdamWOptions {
  float beta1 = 0.9f;
  float beta2 = 0.95f;
  float eps = 1e-8f;
};

void adamw_update(float* params,       // (N)  updated in place
                  float* m,            // (N)  first moment, updated
                  float* v,            // (N)  second moment, updated
                  const float* grads,  // (N)
                  std::size_t N, float lr, float weight_decay, int t, const AdamWOptions& o);

// The global L2 norm of the gradient, and the factor that clips it to max_norm
// (torch.nn.utils.clip_grad_norm_: min(1, max_norm / (norm + 1e-6))).
double grad_norm(const float* grads, std::size_t N);
double grad_sum_of_squares(const float* grads, std::size_t N);  // grad_norm squared, for parts
float clip_factor(double norm, float max_norm);

}  // namespace headlab::train
