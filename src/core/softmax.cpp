// core/softmax.cpp — see softmax.h for the formulas.
#include "core/softmax.h"

#include <cmath>
#include <limits>

namespace headlab::core {

void softmax_forward(Matrix& probs, const Matrix& x) {
  probs = Matrix(x.rows, x.cols);
  for (int i = 0; i < x.rows; ++i) {
    const double* xi = x.row(i);
    double* pi = probs.row(i);
    // subtract the row max: exp overflows for large scores
    double max = -std::numeric_limits<double>::infinity();
    for (int j = 0; j < x.cols; ++j) max = std::max(max, xi[j]);
    HEADLAB_CHECK(std::isfinite(max));
    double sum = 0.0;
    for (int j = 0; j < x.cols; ++j) {
      pi[j] = std::isinf(xi[j]) && xi[j] < 0 ? 0.0 : std::exp(xi[j] - max);
      sum += pi[j];
    }
    for (int j = 0; j < x.cols; ++j) pi[j] /= sum;
  }
}

void softmax_backward(Matrix& dx, const Matrix& dprobs, const Matrix& probs) {
  HEADLAB_CHECK(dprobs.rows == probs.rows && dprobs.cols == probs.cols);
  dx = Matrix(probs.rows, probs.cols);
  for (int i = 0; i < probs.rows; ++i) {
    double dot = 0.0;
    for (int j = 0; j < probs.cols; ++j) dot += probs.at(i, j) * dprobs.at(i, j);
    for (int j = 0; j < probs.cols; ++j) dx.at(i, j) = probs.at(i, j) * (dprobs.at(i, j) - dot);
  }
}

}  // namespace headlab::core
