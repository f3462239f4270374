// model/ops/fast_exp.h — exp over a row, written so the compiler vectorises it: the
// softmax of every attention row is exp-bound at long contexts.
//   exp(x) = 2^n * p(r),  n = round(x / ln 2),  r = x - n ln 2 (two-part ln 2),
//   p a degree-6 polynomial (Cephes expf); relative error below 2e-7 on [-87, 0].
#pragma once

namespace headlab::model {

// row[i] = exp(row[i] - shift) for i < n, *sum = the sum of the results. Inputs below
// shift - 87 (and -inf) give 0.
void exp_shifted_inplace(float* row, int n, float shift, float* sum);

}  // namespace headlab::model
