// core/softmax.h — row-wise softmax, the last step of every attention head.
//   forward:  p_i  = exp(x_i - max x) / sum_j exp(x_j - max x)
//   backward: dx_i = p_i * (dp_i - sum_j p_j * dp_j)
// A score of -inf (a masked cell) becomes exactly 0. A row that is all -inf is a
// programmer error: the causal mask always leaves the diagonal visible.
#pragma once

#include "util/matrix.h"

namespace headlab::core {

void softmax_forward(Matrix& probs, const Matrix& x);                           // (T, T) each
void softmax_backward(Matrix& dx, const Matrix& dprobs, const Matrix& probs);  // (T, T) each

}  // namespace headlab::core
