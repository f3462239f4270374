// util/matrix.h — a small dense row-major matrix of doubles for the core's (T, T) grids.
// The engine has its own float tensors; this one is for exact, readable teaching maths.
#pragma once

#include <cstddef>
#include <vector>

#include "util/check.h"

namespace headlab {

struct Matrix {
  int rows = 0;
  int cols = 0;
  std::vector<double> data;  // (rows, cols), row-major

  Matrix() = default;
  Matrix(int r, int c, double fill = 0.0) : rows(r), cols(c), data(std::size_t(r) * c, fill) {
    HEADLAB_CHECK(r >= 0 && c >= 0);
  }
  double& at(int i, int j) {
    HEADLAB_CHECK(i >= 0 && i < rows && j >= 0 && j < cols);
    return data[std::size_t(i) * cols + j];
  }
  double at(int i, int j) const {
    HEADLAB_CHECK(i >= 0 && i < rows && j >= 0 && j < cols);
    return data[std::size_t(i) * cols + j];
  }
  const double* row(int i) const { return data.data() + std::size_t(i) * cols; }
  double* row(int i) { return data.data() + std::size_t(i) * cols; }
};

}  // namespace headlab
