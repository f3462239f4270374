// model/ops/rmsnorm.h — RMSNorm over the last axis (Zhang & Sennrich 2019), the norm of
// Llama, Mistral and Qwen2 blocks: no mean is subtracted and there is no bias.
//   forward:  rstd = 1 / sqrt(sum_i x_i^2 / C + eps);  out_i = x_i * rstd * w_i
// Gemma's variant multiplies by (1 + w_i) (the weights are stored as offsets from 1):
//   out_i = x_i * rstd * (1 + w_i)                    (plus_one = true)
// (The trainer trains GPT-2's LayerNorm blocks; the backward below is the input's, for attribution.)
#pragma once

namespace headlab::model {

void rmsnorm_forward(float* out,           // (N, C)
                     const float* inp,     // (N, C)
                     const float* weight,  // (C)
                     int N, int C, float eps, bool plus_one = false);

// backward (w' = w, or 1 + w with plus_one; s = rstd):
//   g_i = dout_i w'_i;   dx_i += s g_i - x_i s^3 mean_j(g_j x_j)
// (the input's gradient only: headlab's backward is for attribution, not training the norm)
void rmsnorm_backward(float* dinp,          // (N, C)  +=
                      const float* dout,    // (N, C)
                      const float* inp,     // (N, C)
                      const float* weight,  // (C)
                      int N, int C, float eps, bool plus_one = false);

}  // namespace headlab::model
