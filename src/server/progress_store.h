// server/progress_store.h — learners' challenge progress in an embedded SQLite file.
//
//   auto store = ProgressStore::open("/home/me/.local/share/headlab/headlab.db");
//   auto fresh = (*store)->record("learner-id", "causal-mask", {"future-favourite"});
//
// One row per (learner, lesson, challenge) the learner completed. Writes are
// transactions in WAL mode: a write that returned ok survives a crash or restart.
// Thread-safe: one connection behind a mutex. Errors: io_error naming the file; storage_full
// when the file reached its cap or the disk is full.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "util/result.h"

struct sqlite3;

namespace headlab::server {

class ProgressStore {
 public:
  // Opens (creating the file, its folder and the schema when missing). max_bytes > 0 caps
  // the file's size: writes past it fail with storage_full (HTTP 507, as on a full disk),
  // reads go on.
  static Result<std::unique_ptr<ProgressStore>> open(const std::string& path, std::int64_t max_bytes = 0);
  ~ProgressStore();
  ProgressStore(const ProgressStore&) = delete;
  ProgressStore& operator=(const ProgressStore&) = delete;

  // The challenges the learner has completed in the lesson, in completion order.
  Result<std::vector<std::string>> completed(const std::string& learner, const std::string& lesson);

  // Marks challenges completed; returns those that were not completed before.
  Result<std::vector<std::string>> record(const std::string& learner, const std::string& lesson,
                                          const std::vector<std::string>& challenges);

  // Forgets the learner's progress in the lesson.
  Status reset(const std::string& learner, const std::string& lesson);

  const std::string& path() const { return path_; }

 private:
  ProgressStore(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  Status exec(const char* sql);
  Error sqlite_error(const std::string& doing) const;

  sqlite3* db_;
  std::string path_;
  std::int64_t max_bytes_ = 0;
  std::mutex mutex_;
};

// $XDG_DATA_HOME/headlab/headlab.db, else ~/.local/share/headlab/headlab.db.
std::string default_database_path();

}  // namespace headlab::server
