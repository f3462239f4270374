// core/causal_mask.h — the causal mask: query i may not see key j > i.
//   masked(i, j) = -inf  where j > i,   scores(i, j) elsewhere
#pragma once

#include "util/matrix.h"

namespace headlab::core {

// True where the mask hides key j from query i.
inline bool is_future(int query, int key) { return key > query; }

// Sets every future cell of scores (T, T) to -inf, in place.
void causal_mask_apply(Matrix& scores);

}  // namespace headlab::core
