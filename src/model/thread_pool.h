// model/thread_pool.h — the engine's one pool of worker threads: every matrix product (each
// part a single-threaded sgemm, see blas.h), the attention heads and the trainer's
// element-wise ops are split over it. Workers sleep on a condition variable between jobs:
// they never spin, so they do not take the cores from the thread doing the work.
//
//   thread_pool_run(n_tasks, [&](int task) { work(task); });   // returns when all are done
//
// Size: HEADLAB_NUM_THREADS if set, else the number of cores. A call made while the pool is
// busy (from another thread, or nested) runs its tasks inline on the caller.
#pragma once

#include <functional>

namespace headlab::model {

void thread_pool_run(int n_tasks, const std::function<void(int task)>& fn);
int thread_pool_size();  // workers + the calling thread

}  // namespace headlab::model
