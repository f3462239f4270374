// server/model_service/response_cache.h — answers of identical model requests, least recently used
// first out, bounded by the bytes it holds. Keys are the route and the request's
// canonical JSON, so field order and white space do not matter.
#pragma once

#include <cstddef>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

namespace headlab::server {

class ResponseCache {
 public:
  explicit ResponseCache(std::size_t max_bytes) : max_bytes_(max_bytes) {}
  std::optional<std::string> get(const std::string& key);
  void put(const std::string& key, std::string body);  // bodies over a quarter of the bound are not kept
  std::size_t bytes() const;

 private:
  using Entry = std::pair<std::string, std::string>;  // key, body
  std::size_t max_bytes_;
  std::size_t bytes_ = 0;
  std::list<Entry> order_;  // most recent first
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;
  mutable std::mutex mutex_;
};

}  // namespace headlab::server
