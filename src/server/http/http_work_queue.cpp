// server/http/http_work_queue.cpp — a fixed set of threads over per-client queues taken in turns.
#include "server/http/http_work_queue.h"

namespace headlab::server {

HttpWorkQueue::HttpWorkQueue(int threads) {
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { worker_loop(); });
}

HttpWorkQueue::~HttpWorkQueue() {
  stop();
  for (auto& t : threads_) t.join();
}

void HttpWorkQueue::push(const std::string& client, std::function<void()> job) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) return;
    auto& mine = waiting_[client];
    if (mine.empty()) turns_.push_back(client);
    mine.push_back(std::move(job));
  }
  ready_.notify_one();
}

void HttpWorkQueue::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    waiting_.clear();
    turns_.clear();
  }
  ready_.notify_all();
}

void HttpWorkQueue::worker_loop() {
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      ready_.wait(lock, [this] { return stopping_ || !turns_.empty(); });
      if (stopping_) return;
      std::string client = std::move(turns_.front());
      turns_.pop_front();
      auto it = waiting_.find(client);
      job = std::move(it->second.front());
      it->second.pop_front();
      if (it->second.empty()) waiting_.erase(it);
      else turns_.push_back(std::move(client));
    }
    job();
  }
}

}  // namespace headlab::server
