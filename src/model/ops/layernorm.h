// model/ops/layernorm.h — LayerNorm over the last axis, before each sub-block and at the end.
//   forward:  mean = sum_i x_i / C;  rstd = 1 / sqrt(sum_i (x_i - mean)^2 / C + eps)
//             xhat_i = (x_i - mean) * rstd;  out_i = xhat_i * w_i + b_i
//   backward: dw_i += dout_i * xhat_i;  db_i += dout_i;  g_i = dout_i * w_i
//             dx_i += rstd * (g_i - mean_j(g_j) - xhat_i * mean_j(g_j * xhat_j))
// mean and rstd are saved by the forward for the backward; either may be null in the
// forward when no backward follows.
#pragma once

namespace headlab::model {

void layernorm_forward(float* out,          // (N, C)
                       float* mean,         // (N) or null
                       float* rstd,         // (N) or null
                       const float* inp,    // (N, C)
                       const float* weight, // (C)
                       const float* bias,   // (C)
                       int N, int C, float eps);
void layernorm_backward(float* dinp,          // (N, C)  +=
                        float* dweight,       // (C)     +=
                        float* dbias,         // (C)     +=
                        const float* dout,    // (N, C)
                        const float* inp,     // (N, C)
                        const float* weight,  // (C)
                        const float* mean,    // (N)
                        const float* rstd,    // (N)
                        int N, int C);

}  // namespace headlab::model
