// server/model_service/inference_pool.cpp — one worker thread, a queue per client taken in turns, abandoned
// jobs skipped, and the greediest client's newest job given up when a fairer one arrives.
#include "server/model_service/inference_pool.h"

namespace headlab::server {
namespace {
thread_local std::string t_client;
}  // namespace

InferencePool::ClientScope::ClientScope(std::string client) : previous_(std::move(t_client)) {
  t_client = std::move(client);
}
InferencePool::ClientScope::~ClientScope() { t_client = std::move(previous_); }
const std::string& InferencePool::current_client() { return t_client; }

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
  for (auto& [client, jobs] : waiting_)
    for (auto& job : jobs) job->drop("The server is shutting down.");
}

int InferencePool::queued() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return queued_;
}

Status InferencePool::enqueue(std::shared_ptr<Job> job) {
  std::shared_ptr<Job> evicted;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) return make_error(ErrorCode::unavailable, "The server is shutting down.");
    if (queued_ >= options_.max_queue) {
      // Full: the client with the most waiting jobs gives up its newest one, unless that
      // client is this one (or as greedy): then this job is refused.
      auto greediest = waiting_.end();
      for (auto it = waiting_.begin(); it != waiting_.end(); ++it)
        if (greediest == waiting_.end() || it->second.size() > greediest->second.size()) greediest = it;
      auto mine = waiting_.find(job->client);
      std::size_t my_count = mine == waiting_.end() ? 0 : mine->second.size();
      if (greediest == waiting_.end() || greediest->second.size() <= my_count + 1)
        return make_error(ErrorCode::unavailable, "The model is busy with " + std::to_string(queued_) +
                                                      " requests already; try again in a moment.");
      evicted = std::move(greediest->second.back());
      greediest->second.pop_back();
      --queued_;
      if (greediest->second.empty()) {
        std::erase(turns_, greediest->first);
        waiting_.erase(greediest);
      }
    }
    auto& mine = waiting_[job->client];
    if (mine.empty()) turns_.push_back(job->client);
    mine.push_back(std::move(job));
    ++queued_;
  }
  if (evicted)
    evicted->drop("The model is busy, and this client already has more requests waiting than any other; "
                  "try again in a moment.");
  ready_.notify_one();
  return {};
}

std::shared_ptr<InferencePool::Job> InferencePool::take_next() {
  std::string client = std::move(turns_.front());
  turns_.pop_front();
  auto it = waiting_.find(client);
  std::shared_ptr<Job> job = std::move(it->second.front());
  it->second.pop_front();
  --queued_;
  if (it->second.empty()) waiting_.erase(it);
  else turns_.push_back(std::move(client));  // its next job waits for the others' turns
  return job;
}

void InferencePool::worker_loop() {
  for (;;) {
    std::shared_ptr<Job> job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      ready_.wait(lock, [this] { return stopping_ || queued_ > 0; });
      if (stopping_) return;
      job = take_next();
    }
    if (job->abandoned) {
      job->drop("The request gave up waiting.");
      continue;
    }
    job->work(workspace_);
  }
}

}  // namespace headlab::server
