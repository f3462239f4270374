// model/ops/residual.h — the residual stream: each block adds its output to its input.
//   forward:  out = inp1 + inp2
//   backward: dinp1 = dout;  dinp2 = dout   (written, not added: in the training step each
//             is the first op to reach its gradient)
#pragma once

namespace headlab::model {

void residual_forward(float* out, const float* inp1, const float* inp2, int N);  // (N) each
void residual_backward(float* dinp1, float* dinp2, const float* dout, int N);    // (N) each

}  // namespace headlab::model
