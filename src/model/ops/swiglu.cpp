// model/ops/swiglu.cpp — the SwiGLU forward (see swiglu.h), with the vectorised exp.
#include "model/ops/swiglu.h"

#include <cstddef>

#include "model/ops/fast_exp.h"
#include "model/ops/gelu.h"

namespace headlab::model {

HEADLAB_MULTIVERSION
void swiglu_forward(float* out, const float* inp, int N, int F) {
  for (int n = 0; n < N; n++) {
    const float* gate = inp + std::size_t(n) * 2 * F;  // (F)
    const float* up = gate + F;                         // (F)
    float* o = out + std::size_t(n) * F;
    for (int i = 0; i < F; i++) o[i] = gate[i] / (1.0f + fast_exp(-gate[i])) * up[i];
  }
}

void geglu_forward(float* out, const float* inp, int N, int F) {
  for (int n = 0; n < N; n++) {
    const float* gate = inp + std::size_t(n) * 2 * F;  // (F)
    const float* up = gate + F;                         // (F)
    float* o = out + std::size_t(n) * F;
    gelu_forward(o, gate, F);
    for (int i = 0; i < F; i++) o[i] *= up[i];
  }
}

}  // namespace headlab::model
