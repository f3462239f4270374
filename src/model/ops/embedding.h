// model/ops/embedding.h — token + position embedding, the first step of the forward.
//   forward:  out[b,t,:] = wte[inp[b,t], :] + wpe[t, :]
//   backward: dwte[inp[b,t], :] += dout[b,t,:];  dwpe[t, :] += dout[b,t,:]
// Token ids must be in [0, V): the caller validates them (forward() does).
#pragma once

namespace headlab::model {

void embedding_forward(float* out,                        // (B, T, C)
                       const int* inp,                    // (B, T) token ids
                       const float* wte,                  // (V, C)
                       const float* wpe,                  // (maxT, C), T <= maxT
                       int B, int T, int C);
void embedding_backward(float* dwte,                      // (V, C)     +=
                        float* dwpe,                      // (maxT, C)  +=
                        const float* dout,                // (B, T, C)
                        const int* inp,                   // (B, T)
                        int B, int T, int C);

}  // namespace headlab::model
