// model/ops/swiglu.h — the gated MLP activation of Llama, Mistral and Qwen2 (Shazeer 2020):
//   out[n, i] = silu(gate[n, i]) * up[n, i],   silu(g) = g / (1 + exp(-g))
// where each input row holds [gate (F); up (F)] side by side, as c_fc's rows are stacked.
// (Inference only.)
#pragma once

namespace headlab::model {

void swiglu_forward(float* out,        // (N, F)
                    const float* inp,  // (N, 2F): gate at [0, F), up at [F, 2F)
                    int N, int F);

}  // namespace headlab::model
