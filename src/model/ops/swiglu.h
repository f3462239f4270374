// model/ops/swiglu.h — the gated MLP activations (Shazeer 2020, "GLU variants"): SwiGLU of
// Llama, Mistral and Qwen, GeGLU of Gemma:
//   SwiGLU: out[n, i] = silu(gate[n, i]) * up[n, i],   silu(g) = g / (1 + exp(-g))
//   GeGLU:  out[n, i] = gelu_tanh(gate[n, i]) * up[n, i]   (model/ops/gelu.h's tanh GELU)
// where each input row holds [gate (F); up (F)] side by side, as c_fc's rows are stacked.
// (Not trained; the backward below is the input's, for attribution.)
#pragma once

namespace headlab::model {

void swiglu_forward(float* out,        // (N, F)
                    const float* inp,  // (N, 2F): gate at [0, F), up at [F, 2F)
                    int N, int F);
void geglu_forward(float* out,        // (N, F)
                   const float* inp,  // (N, 2F): gate at [0, F), up at [F, 2F)
                   int N, int F);

// backward (written, not added), a = silu or gelu_tanh:
//   dgate[n, i] = dout[n, i] up[n, i] a'(gate[n, i]);   dup[n, i] = dout[n, i] a(gate[n, i])
//   silu'(g) = sigmoid(g) (1 + g (1 - sigmoid(g)))
void swiglu_backward(float* dinp,        // (N, 2F): dgate at [0, F), dup at [F, 2F)
                     const float* dout,  // (N, F)
                     const float* inp,   // (N, 2F)
                     int N, int F);
void geglu_backward(float* dinp,        // (N, 2F)
                    const float* dout,  // (N, F)
                    const float* inp,   // (N, 2F)
                    int N, int F);

}  // namespace headlab::model
