// server/model_service/inference_pool.h — a bounded pool for model work. One worker (the engine already
// uses both cores through OpenBLAS), a queue of at most `max_queue` jobs, and a deadline:
// a job still waiting when its request gives up is skipped, never run for nobody.
// Fair between clients: waiting jobs are taken round-robin by client, and when the queue
// is full a job from a client with fewer waiting jobs than the greediest one takes the
// greediest client's newest place (that job answers 503), so many connections of one
// client cannot lock another out.
//
//   InferencePool pool({.max_queue = 8, .timeout_ms = 30000});
//   InferencePool::ClientScope as("192.0.2.7");   // whose requests this thread runs
//   Result<Answer> a = pool.run<Answer>([&](model::Workspace& ws) { return work(ws); });
//   // unavailable when the queue is full or the deadline passed: the route answers 503
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <map>
#include <mutex>
#include <string>
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
    job->client = current_client();
    job->work = [promise, fn](model::Workspace& ws) { promise->set_value(fn(ws)); };
    job->drop = [promise](const std::string& why) {
      promise->set_value(tl::unexpected(Error{ErrorCode::unavailable, why}));
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

  // Tags the model requests made on this thread with a client (the HTTP layer sets the
  // remote address) for as long as the scope lives. Untagged requests share one client "".
  class ClientScope {
   public:
    explicit ClientScope(std::string client);
    ~ClientScope();
    ClientScope(const ClientScope&) = delete;
    ClientScope& operator=(const ClientScope&) = delete;

   private:
    std::string previous_;
  };
  static const std::string& current_client();

 private:
  struct Job {
    std::string client;
    std::function<void(model::Workspace&)> work;
    std::function<void(const std::string& why)> drop;  // answers unavailable, with why
    std::atomic<bool> abandoned{false};
  };
  std::shared_ptr<Job> take_next();  // round-robin by client; call with mutex_ held
  Status enqueue(std::shared_ptr<Job> job);
  void worker_loop();

  InferencePoolOptions options_;
  mutable std::mutex mutex_;
  std::condition_variable ready_;
  std::map<std::string, std::deque<std::shared_ptr<Job>>> waiting_;  // by client, oldest first
  std::deque<std::string> turns_;  // clients with waiting jobs, whose turn is next first
  int queued_ = 0;                 // jobs in waiting_
  bool stopping_ = false;
  model::Workspace workspace_;
  std::thread worker_;
};

}  // namespace headlab::server
