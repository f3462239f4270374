// model/thread_pool.h — the engine's one pool of worker threads: every matrix product (each
// part a single-threaded sgemm, see blas.h), the attention heads, the forward's and the
// trainer's element-wise ops are split over it. Workers sleep on a condition variable between jobs:
// they never spin, so they do not take the cores from the thread doing the work.
//
//   thread_pool_run(n_tasks, [&](int task) { work(task); });   // returns when all are done
//
// Size: HEADLAB_NUM_THREADS if set, else the number of cores. A call made while the pool is
// busy (from another thread, or nested) runs its tasks inline on the caller. The caller takes
// tasks too and waits only for the workers that joined: it does not wait out a late wake-up.
//
//   const int parts = thread_pool_parts(work, most);   // 1 when the work is small
//
// is how every caller sizes a job: `work` counts multiply-adds (an element-wise op's element
// counts kPoolElementWork times its work_per_item), and work below kPoolMinWork runs on the
// caller alone, since handing it to a sleeping worker costs more than doing it. One part gives
// the same values as HEADLAB_NUM_THREADS=1, which the tests hold bit-identical to any other count.
//
//   thread_pool_for_parts(n, [&](std::size_t i0, std::size_t i1) { op over [i0, i1) });
//
// splits [0, n) into contiguous parts, one per thread (each a long vectorised loop), or runs
// it on the caller when n * work_per_item * kPoolElementWork < kPoolMinWork. An element-wise
// or row-wise op split so gives the same values as one call over [0, n).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

namespace headlab::model {

void thread_pool_run(int n_tasks, const std::function<void(int task)>& fn);
int thread_pool_size();  // workers + the calling thread

// Below this much work (multiply-adds) a job runs on the caller: about 10 µs of one core's
// products here, what waking a sleeping worker costs on a busy machine (bench/README.md,
// 2026-12-06, has the measurement that chose it).
inline constexpr std::size_t kPoolMinWork = std::size_t(1) << 20;
// One element of an element-wise op, in multiply-adds: it reads and writes memory that a
// product's inputs reuse from cache. So 16,384 elements are worth a worker.
inline constexpr std::size_t kPoolElementWork = 64;

// The parts to split `work` into: 1 below kPoolMinWork, else the pool's size, at most `most`.
int thread_pool_parts(std::size_t work, int most);

template <class Op>
void thread_pool_for_parts(std::size_t n, const Op& op, std::size_t work_per_item = 1) {
  const int parts = thread_pool_parts(n * work_per_item * kPoolElementWork, thread_pool_size());
  if (parts == 1) {
    if (n > 0) op(std::size_t(0), n);
    return;
  }
  thread_pool_run(parts, [&](int t) {
    const std::size_t i0 = static_cast<std::size_t>(static_cast<std::uint64_t>(n) * t / parts);
    const std::size_t i1 = static_cast<std::size_t>(static_cast<std::uint64_t>(n) * (t + 1) / parts);
    if (i1 > i0) op(i0, i1);
  });
}

}  // namespace headlab::model
