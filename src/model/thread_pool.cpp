// model/thread_pool.cpp — a fixed pool of sleeping workers (see thread_pool.h).
#include "model/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

namespace headlab::model {

namespace {

class ThreadPool {
 public:
  explicit ThreadPool(int threads) {
    for (int i = 1; i < threads; i++) workers_.emplace_back([this] { work(); });
  }
  ~ThreadPool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    wake_.notify_all();
    for (auto& t : workers_) t.join();
  }
  int size() const { return static_cast<int>(workers_.size()) + 1; }

  // The caller takes tasks too, and when it runs out it waits only for the workers that joined
  // the job: a worker still waking when the tasks are gone finds the job closed and sleeps again,
  // so a small job is not held up by a sleeping worker's wake-up (tens of µs on a busy machine).
  void run(int n_tasks, const std::function<void(int)>& fn) {
    std::unique_lock<std::mutex> busy(run_mu_, std::try_to_lock);
    if (!busy.owns_lock() || workers_.empty() || n_tasks <= 1) {
      for (int i = 0; i < n_tasks; i++) fn(i);
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      fn_ = &fn;
      n_tasks_ = n_tasks;
      next_.store(0);
      open_ = true;
      generation_++;
    }
    wake_.notify_all();
    take_tasks(fn, n_tasks);  // returns when every task is taken, by this thread or a worker
    std::unique_lock<std::mutex> lock(mu_);
    open_ = false;
    done_.wait(lock, [this] { return active_ == 0; });
    fn_ = nullptr;
  }

 private:
  void take_tasks(const std::function<void(int)>& fn, int n) {
    for (int i = next_.fetch_add(1); i < n; i = next_.fetch_add(1)) fn(i);
  }
  void work() {
    unsigned long seen = 0;
    for (;;) {
      const std::function<void(int)>* fn;
      int n;
      {
        std::unique_lock<std::mutex> lock(mu_);
        wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
        if (stop_) return;
        seen = generation_;
        if (!open_) continue;  // woke after the caller took the last task
        active_++;
        fn = fn_;
        n = n_tasks_;
      }
      take_tasks(*fn, n);
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (--active_ == 0) done_.notify_one();
      }
    }
  }

  std::vector<std::thread> workers_;
  std::mutex run_mu_;  // one job at a time
  std::mutex mu_;
  std::condition_variable wake_, done_;
  const std::function<void(int)>* fn_ = nullptr;
  int n_tasks_ = 0;
  int active_ = 0;    // workers inside the current job
  bool open_ = false;  // the current job still takes workers
  unsigned long generation_ = 0;
  bool stop_ = false;
  std::atomic<int> next_{0};
};

int configured_threads() {
  if (const char* env = std::getenv("HEADLAB_NUM_THREADS")) {
    int n = std::atoi(env);
    if (n >= 1 && n <= 256) return n;
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

ThreadPool& pool() {
  static ThreadPool p(configured_threads());
  return p;
}

}  // namespace

void thread_pool_run(int n_tasks, const std::function<void(int)>& fn) { pool().run(n_tasks, fn); }
int thread_pool_size() { return pool().size(); }

int thread_pool_parts(std::size_t work, int most) {
  if (work < kPoolMinWork) return 1;
  return std::max(1, std::min(pool().size(), most));
}

}  // namespace headlab::model
