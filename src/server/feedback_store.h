// server/feedback_store.h — "Spotted a mistake? Tell us.": learners' notes about a lesson,
// kept in the same SQLite file as progress (its own connection and table).
//
//   auto store = FeedbackStore::open(path);
//   auto id = (*store)->add({"causal-mask", "Row 6 ...", ""});
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

struct sqlite3;

namespace headlab::server {

struct Feedback {
  std::string lesson;
  std::string message;
  std::string contact;     // optional
  std::int64_t id = 0;     // set by the store
  std::string created_at;  // set by the store, ISO 8601 UTC
};

// True when `text` (UTF-8) holds nothing but Unicode White_Space code points.
bool is_only_white_space(std::string_view text);

class FeedbackStore {
 public:
  // max_bytes > 0: the file's cap, as ProgressStore::open (the cap is per connection in SQLite).
  static Result<std::unique_ptr<FeedbackStore>> open(const std::string& path, std::int64_t max_bytes = 0);
  ~FeedbackStore();
  FeedbackStore(const FeedbackStore&) = delete;
  FeedbackStore& operator=(const FeedbackStore&) = delete;

  // Errors: invalid_argument when a field holds a NUL or the message is only white space
  // (Unicode White_Space: NBSP and ideographic spaces too); io_error naming the file (full
  // disk, read-only).
  Result<std::int64_t> add(const Feedback& f);
  // Newest first.
  Result<std::vector<Feedback>> list(int limit = 1000);

 private:
  FeedbackStore(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  sqlite3* db_;
  std::string path_;
  std::mutex mutex_;
};

}  // namespace headlab::server
