// model/ops/embedding.cpp — token + position embedding (see embedding.h).
#include "model/ops/embedding.h"

#include <cstddef>

namespace headlab::model {

void embedding_forward(float* out, const int* inp, const float* wte, const float* wpe, int B, int T,
                       int C) {
  for (int b = 0; b < B; b++) {
    for (int t = 0; t < T; t++) {
      float* out_bt = out + (std::size_t(b) * T + t) * C;
      const float* wte_ix = wte + std::size_t(inp[b * T + t]) * C;
      const float* wpe_t = wpe + std::size_t(t) * C;
      for (int i = 0; i < C; i++) out_bt[i] = wte_ix[i] + wpe_t[i];
    }
  }
}

void embedding_backward(float* dwte, float* dwpe, const float* dout, const int* inp, int B, int T,
                        int C) {
  for (int b = 0; b < B; b++) {
    for (int t = 0; t < T; t++) {
      const float* dout_bt = dout + (std::size_t(b) * T + t) * C;
      float* dwte_ix = dwte + std::size_t(inp[b * T + t]) * C;
      float* dwpe_t = dwpe + std::size_t(t) * C;
      for (int i = 0; i < C; i++) {
        dwte_ix[i] += dout_bt[i];
        dwpe_t[i] += dout_bt[i];
      }
    }
  }
}

}  // namespace headlab::model
