// server/inference_pool.cpp — one worker thread, a bounded deque, abandoned jobs skipped.
#include "server/inference_pool.h"

namespace headlab::server {

InferencePool::InferencePool(InferencePoolOptions options) : options_(options) {
  worker_ = std::thread([this] { worker_loop(); });
}

InferencePool::~InferencePool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  ready_.notify_all();
  worker_.join();
  for (auto& job : queue_) job->drop();
}

int InferencePool::queued() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<int>(queue_.size());
}

Status InferencePool::enqueue(std::shared_ptr<Job> job) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) return make_error(ErrorCode::unavailable, "The server is shutting down.");
    if (static_cast<int>(queue_.size()) >= options_.max_queue)
      return make_error(ErrorCode::unavailable, "The model is busy with " + std::to_string(queue_.size()) +
                                                    " requests already; try again in a moment.");
    queue_.push_back(std::move(job));
  }
  ready_.notify_one();
  return {};
}

void InferencePool::worker_loop() {
  for (;;) {
    std::shared_ptr<Job> job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      ready_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    if (job->abandoned) {
      job->drop();
      continue;
    }
    job->work(workspace_);
  }
}

}  // namespace headlab::server
