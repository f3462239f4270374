// model/ops/swiglu.cpp — the SwiGLU forward (see swiglu.h), with the vectorised exp.
#include "model/ops/swiglu.h"

#include <cmath>
#include <cstddef>
#include <vector>

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

void swiglu_backward(float* dinp, const float* dout, const float* inp, int N, int F) {
  for (int n = 0; n < N; n++) {
    const float* gate = inp + std::size_t(n) * 2 * F;
    const float* up = gate + F;
    const float* d = dout + std::size_t(n) * F;
    float* dgate = dinp + std::size_t(n) * 2 * F;
    float* dup = dgate + F;
    for (int i = 0; i < F; i++) {
      const double g = gate[i], sig = 1.0 / (1.0 + std::exp(-g));
      dgate[i] = static_cast<float>(double(d[i]) * up[i] * sig * (1.0 + g * (1.0 - sig)));
      dup[i] = static_cast<float>(double(d[i]) * g * sig);
    }
  }
}

void geglu_backward(float* dinp, const float* dout, const float* inp, int N, int F) {
  for (int n = 0; n < N; n++) {
    const float* gate = inp + std::size_t(n) * 2 * F;
    const float* up = gate + F;
    const float* d = dout + std::size_t(n) * F;
    float* dgate = dinp + std::size_t(n) * 2 * F;
    float* dup = dgate + F;
    std::vector<float> ones(F), act(F);
    for (int i = 0; i < F; i++) ones[i] = d[i] * up[i];
    gelu_backward(dgate, gate, ones.data(), F);  // d up a'(gate)
    gelu_forward(act.data(), gate, F);
    for (int i = 0; i < F; i++) dup[i] = d[i] * act[i];
  }
}

}  // namespace headlab::model
