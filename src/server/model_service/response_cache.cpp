// server/model_service/response_cache.cpp — a byte-bounded LRU.
#include "server/model_service/response_cache.h"

namespace headlab::server {

std::optional<CachedAnswer> ResponseCache::get(const std::string& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = index_.find(key);
  if (it == index_.end()) return std::nullopt;
  order_.splice(order_.begin(), order_, it->second);
  return it->second->second;
}

void ResponseCache::put(const std::string& key, CachedAnswer answer) {
  std::size_t size = key.size() + answer.bytes();
  if (size > max_bytes_ / 4) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto it = index_.find(key); it != index_.end()) {
    bytes_ -= it->second->first.size() + it->second->second.bytes();
    order_.erase(it->second);
    index_.erase(it);
  }
  order_.emplace_front(key, std::move(answer));
  index_[key] = order_.begin();
  bytes_ += size;
  while (bytes_ > max_bytes_ && !order_.empty()) {
    auto& last = order_.back();
    bytes_ -= last.first.size() + last.second.bytes();
    index_.erase(last.first);
    order_.pop_back();
  }
}

ResponseCache::Flight ResponseCache::flight(const std::string& key, const std::string& request_id) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto [it, first] = flights_.try_emplace(key);
  if (first) {
    it->second = std::make_shared<InFlight>();
    it->second->lead_id = request_id;
  }
  return Flight{first, it->second};
}

void ResponseCache::land(const std::string& key, const Flight& flight, std::optional<CachedAnswer> answer) {
  if (answer) put(key, *answer);  // before the flight ends: a request after it finds the answer kept
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = flights_.find(key); it != flights_.end() && it->second == flight.in) flights_.erase(it);
  }
  {
    std::lock_guard<std::mutex> lock(flight.in->mutex);
    flight.in->done = true;
    flight.in->answer = std::move(answer);
  }
  flight.in->landed.notify_all();
}

std::optional<CachedAnswer> ResponseCache::Flight::wait(std::chrono::steady_clock::time_point deadline) const {
  std::unique_lock<std::mutex> lock(in->mutex);
  if (!in->landed.wait_until(lock, deadline, [&] { return in->done; })) return std::nullopt;
  return in->answer;
}

std::size_t ResponseCache::bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return bytes_;
}

}  // namespace headlab::server
