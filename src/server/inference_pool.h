// server/inference_pool.h — a bounded pool for model work. One worker (the engine already
// uses both cores through OpenBLAS), a queue of at most `max_queue` jobs, and a deadline:
// a job still waiting when its request gives up is skipped, never run for nobody.
//
//   InferencePool pool({.max_queue = 8, .timeout_ms = 30000});
//   Result<Answer> a = pool.run<Answer>([&](model::Workspace& ws) { return work(ws); });
//   // unavailable when the queue is full or the deadline passed: the route answers 503
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <thread>

#include "model/forward.h"
#include "util/result.h"

namespace headlab::server {

struct InferencePoolOptions {
  int max_queue = 8;         // jobs waiting beyond the one running
  int timeout_ms = 30000;    // how long a request waits for its answer
};

class InferencePool {
 public:
  explicit InferencePool(InferencePoolOptions options);
  ~InferencePool();  // finishes the running job, drops the waiting ones

  // Runs fn(workspace) on the worker and waits for its Result.
  template <class T>
  Result<T> run(std::function<Result<T>(model::Workspace&)> fn) {
    auto promise = std::make_shared<std::promise<Result<T>>>();
    auto future = promise->get_future();
    auto job = std::make_shared<Job>();
    job->work = [promise, fn](model::Workspace& ws) { promise->set_value(fn(ws)); };
    job->drop = [promise] {
      promise->set_value(tl::unexpected(Error{ErrorCode::unavailable, "The server is shutting down."}));
    };
    if (auto s = enqueue(job); !s) return tl::unexpected(s.error());
    if (future.wait_for(std::chrono::milliseconds(options_.timeout_ms)) != std::future_status::ready) {
      job->abandoned = true;  // if it has not started, it never will
      return make_error(ErrorCode::unavailable,
                        "The model is busy: the answer took longer than " + std::to_string(options_.timeout_ms / 1000) +
                            " s. Try again in a moment, or with a shorter text.");
    }
    return future.get();
  }

  int queued() const;

 private:
  struct Job {
    std::function<void(model::Workspace&)> work;
    std::function<void()> drop;
    std::atomic<bool> abandoned{false};
  };
  Status enqueue(std::shared_ptr<Job> job);
  void worker_loop();

  InferencePoolOptions options_;
  mutable std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::shared_ptr<Job>> queue_;
  bool stopping_ = false;
  model::Workspace workspace_;
  std::thread worker_;
};

}  // namespace headlab::server
