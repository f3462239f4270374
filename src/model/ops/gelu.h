// model/ops/gelu.h — GELU with the tanh approximation (GPT-2's "gelu_new"), inside the MLP.
//   forward:  out = 0.5 x (1 + tanh(s (x + 0.044715 x^3))),  s = sqrt(2/pi)
//   backward: dinp = dout * (0.5 (1 + tanh u) + 0.5 x (1 - tanh^2 u) s (1 + 3*0.044715 x^2))
#pragma once

namespace headlab::model {

void gelu_forward(float* out,        // (N)
                  const float* inp,  // (N)
                  int N);
void gelu_backward(float* dinp,        // (N)  written, not added
                   const float* inp,   // (N)
                   const float* dout,  // (N)
                   int N);

// The exact GELU with the error function (PyTorch's "gelu", GPT-NeoX / Pythia's hidden_act):
//   out = 0.5 x (1 + erf(x / sqrt 2))          (the trainer does not train it; attribution differentiates it)
void gelu_erf_forward(float* out,        // (N)
                      const float* inp,  // (N)
                      int N);

// Its backward: dinp = dout * (0.5 (1 + erf(x / sqrt 2)) + x exp(-x^2 / 2) / sqrt(2 pi))
void gelu_erf_backward(float* dinp,        // (N)  written, not added
                       const float* inp,   // (N)
                       const float* dout,  // (N)
                       int N);

}  // namespace headlab::model
