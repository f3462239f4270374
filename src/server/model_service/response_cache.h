// server/model_service/response_cache.h — answers of identical model requests, least recently used
// first out, bounded by the bytes it holds. Keys are the route and the request's
// canonical JSON, so field order and white space do not matter. An answer is kept once, with
// its gzip made once beside it, and shared (not copied) by every connection that sends it.
#pragma once

#include <cstddef>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

namespace headlab::server {

struct CachedAnswer {
  std::shared_ptr<const std::string> body;
  std::shared_ptr<const std::string> gzip;  // null: none made (small, or zlib failed)
  std::size_t bytes() const { return (body ? body->size() : 0) + (gzip ? gzip->size() : 0); }
};

class ResponseCache {
 public:
  explicit ResponseCache(std::size_t max_bytes) : max_bytes_(max_bytes) {}
  std::optional<CachedAnswer> get(const std::string& key);
  void put(const std::string& key, CachedAnswer answer);  // answers over a quarter of the bound are not kept
  void put(const std::string& key, std::string body) {
    put(key, CachedAnswer{std::make_shared<const std::string>(std::move(body)), nullptr});
  }
  std::size_t bytes() const;

 private:
  using Entry = std::pair<std::string, CachedAnswer>;  // key, answer
  std::size_t max_bytes_;
  std::size_t bytes_ = 0;
  std::list<Entry> order_;  // most recent first
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;
  mutable std::mutex mutex_;
};

}  // namespace headlab::server
