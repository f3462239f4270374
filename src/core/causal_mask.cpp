// core/causal_mask.cpp — -inf above the diagonal; softmax turns it into exactly 0.
#include "core/causal_mask.h"

#include <limits>

namespace headlab::core {

void causal_mask_apply(Matrix& scores) {
  for (int i = 0; i < scores.rows; ++i)
    for (int j = i + 1; j < scores.cols; ++j) scores.at(i, j) = -std::numeric_limits<double>::infinity();
}

}  // namespace headlab::core
