// model/ops/gelu.cpp — GELU (tanh approximation) forward and backward (see gelu.h).
#include "model/ops/gelu.h"

#include <cmath>

#include "model/ops/fast_exp.h"

namespace headlab::model {

namespace {
constexpr float kGeluScale = 0.7978845608028654f;  // sqrt(2 / pi)
}

// The forward runs over every MLP activation of the inference path: a vectorised tanh.
HEADLAB_MULTIVERSION
void gelu_forward(float* out, const float* inp, int N) {
  for (int i = 0; i < N; i++) {
    float x = inp[i];
    float cube = 0.044715f * x * x * x;
    out[i] = 0.5f * x * (1.0f + fast_tanh(kGeluScale * (x + cube)));
  }
}

// The backward, over every MLP activation of a training step: the same vectorised tanh.
HEADLAB_MULTIVERSION
void gelu_backward(float* dinp, const float* inp, const float* dout, int N) {
  for (int i = 0; i < N; i++) {
    float x = inp[i];
    float cube = 0.044715f * x * x * x;
    float tanh_out = fast_tanh(kGeluScale * (x + cube));
    float sech2 = 1.0f - tanh_out * tanh_out;
    float local_grad =
        0.5f * (1.0f + tanh_out) + x * 0.5f * sech2 * kGeluScale * (1.0f + 3.0f * 0.044715f * x * x);
    dinp[i] = local_grad * dout[i];
  }
}

void gelu_erf_forward(float* out, const float* inp, int N) {
  for (int i = 0; i < N; i++) out[i] = 0.5f * inp[i] * (1.0f + std::erf(inp[i] * 0.70710678118654752f));
}

void gelu_erf_backward(float* dinp, const float* inp, const float* dout, int N) {
  for (int i = 0; i < N; i++) {
    const double x = inp[i];
    const double local = 0.5 * (1.0 + std::erf(x * 0.70710678118654752)) + x * std::exp(-0.5 * x * x) * 0.3989422804014327;
    dinp[i] = static_cast<float>(local * dout[i]);
  }
}

}  // namespace headlab::model
