// server/api/class_view_cache.h — the teacher's view of each class as last encoded, kept until
// the class changes (its version moves). A class of thirty polled by its teacher every few
// seconds, or a view opened in eight tabs, is then read from the store once per change, not
// once per poll; the store's reads stay bounded by the class's learners × challenges (each
// learner's checks of a challenge are kept up to ClassStore's cap).
//
//   if (auto hit = cache.find(code, version)) return *hit;   // the JSON, shared
//   cache.put(code, version, body);
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace headlab::server {

class ClassViewCache {
 public:
  std::shared_ptr<const std::string> find(const std::string& code, std::int64_t version) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = views_.find(code);
    if (it == views_.end() || it->second.first != version) return nullptr;
    return it->second.second;
  }
  void put(const std::string& code, std::int64_t version, std::shared_ptr<const std::string> body) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (views_.size() >= kMaxClasses && !views_.count(code)) views_.clear();  // bounded: start again
    views_[code] = {version, std::move(body)};
  }
  void forget(const std::string& code) {
    std::lock_guard<std::mutex> lock(mutex_);
    views_.erase(code);
  }

 private:
  static constexpr std::size_t kMaxClasses = 1000;
  std::mutex mutex_;
  std::map<std::string, std::pair<std::int64_t, std::shared_ptr<const std::string>>> views_;
};

}  // namespace headlab::server
