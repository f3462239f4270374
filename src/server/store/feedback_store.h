// server/store/feedback_store.h — "Spotted a mistake? Tell us.": learners' notes about a lesson,
// kept in the same database as progress (an SQLite file or PostgreSQL: server/store/database.h), in its
// own table and connections.
//
//   auto store = FeedbackStore::open(path);
//   auto id = (*store)->add({"causal-mask", "Row 6 ...", ""});
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace headlab::server {

namespace db {
class Database;
}

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
  // `path`: a file or a postgresql:// URL, as ProgressStore::open (migrations included).
  // max_bytes > 0: an SQLite file's cap, as ProgressStore::open (the cap is per connection).
  static Result<std::unique_ptr<FeedbackStore>> open(const std::string& path, std::int64_t max_bytes = 0);
  ~FeedbackStore();
  FeedbackStore(const FeedbackStore&) = delete;
  FeedbackStore& operator=(const FeedbackStore&) = delete;

  // Errors: invalid_argument when a field holds a NUL or the message is only white space
  // (Unicode White_Space: NBSP and ideographic spaces too); storage_full (full disk or cap);
  // io_error naming the database (read-only, ...); unavailable (PostgreSQL unreachable).
  Result<std::int64_t> add(const Feedback& f);
  // add()'s invalid_argument checks alone, so that a caller can refuse a note before counting
  // it against a rate limit.
  static Status check(const Feedback& f);
  // Newest first.
  Result<std::vector<Feedback>> list(int limit = 1000);

 private:
  explicit FeedbackStore(std::unique_ptr<db::Database> db);
  std::unique_ptr<db::Database> db_;
};

}  // namespace headlab::server
