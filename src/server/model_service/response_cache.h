// server/model_service/response_cache.h — answers of identical model requests, least recently used
// first out, bounded by the bytes it holds. Keys are the route and the request's
// canonical JSON, so field order and white space do not matter. An answer is kept once, with
// its gzip made once beside it, and shared (not copied) by every connection that sends it.
// Identical requests in flight are answered once: the first to miss leads (computes the
// answer and puts it), the ones that arrive meanwhile follow (wait for the lead's answer,
// without a place in the model's queue); a follower whose lead failed computes its own.
//
//   auto f = cache.flight(key);            // f.lead: compute, then cache.land(key, f, answer)
//   if (!f.lead) answer = f.wait(deadline); // the lead's answer, or none (failed, too late)
#pragma once

#include <chrono>
#include <condition_variable>

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
  struct InFlight {
    std::mutex mutex;
    std::condition_variable landed;
    bool done = false;
    std::optional<CachedAnswer> answer;  // none: the lead failed
    std::string lead_id;                 // the lead's request id (its queue place), "" if none
  };
  struct Flight {
    bool lead = false;
    std::shared_ptr<InFlight> in;
    // A follower's wait for the lead's answer; none when the lead failed or the deadline passed.
    std::optional<CachedAnswer> wait(std::chrono::steady_clock::time_point deadline) const;
  };
  // `request_id`: a lead's, kept so that followers can report its queue place.
  Flight flight(const std::string& key, const std::string& request_id = "");
  // The lead's answer (none: it failed): kept (put) when there is one, and given to its followers.
  void land(const std::string& key, const Flight& flight, std::optional<CachedAnswer> answer);

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
  std::unordered_map<std::string, std::shared_ptr<InFlight>> flights_;
  mutable std::mutex mutex_;
};

}  // namespace headlab::server
