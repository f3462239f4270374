// train/parallel.h — how the training step splits its work over headlab's one pool
// (model/thread_pool.h): contiguous parts, one per thread, so each part is a long
// vectorised loop or a single-threaded sgemm, and the split (and so every sum) is the
// same on every step of a run.
//
//   for_parts(n, [&](std::size_t i0, std::size_t i1) { op over [i0, i1) });
//
// Work smaller than kMinPartWork items runs on the caller: waking a worker costs more.
#pragma once

#include <cstddef>
#include <cstdint>

#include "model/thread_pool.h"

namespace headlab::train {

inline constexpr std::size_t kMinPartWork = model::kPoolMinWork / model::kPoolElementWork;

// Part `part` of `parts` of [0, n).
inline std::size_t split_at(std::size_t n, int part, int parts) {
  return static_cast<std::size_t>(static_cast<std::uint64_t>(n) * part / parts);
}

// op(i0, i1) over contiguous parts of [0, n), one per thread; `work_per_item` scales n to
// decide whether splitting is worth it.
template <class Op>
void for_parts(std::size_t n, const Op& op, std::size_t work_per_item = 1) {
  model::thread_pool_for_parts(n, op, work_per_item);
}

// Like for_parts, and tells op which part it runs (for per-part scratch and partial sums):
// op(part, i0, i1), part in [0, parts). Always uses `parts` parts.
template <class Op>
void for_numbered_parts(std::size_t n, int parts, const Op& op) {
  model::thread_pool_run(parts, [&](int t) {
    const std::size_t i0 = split_at(n, t, parts), i1 = split_at(n, t + 1, parts);
    op(t, i0, i1);
  });
}

}  // namespace headlab::train
