// server/store/progress_store.h — learners' challenge progress, in an SQLite file (the default) or a
// PostgreSQL database shared by several servers (server/store/database.h).
//
//   auto store = ProgressStore::open("/home/me/.local/share/headlab/headlab.db");
//   auto store = ProgressStore::open("postgresql://headlab@db.school:5432/headlab");
//   auto fresh = (*store)->record("learner-id", "causal-mask", {"future-favourite"});
//
// One row per (learner, lesson, challenge) the learner completed. Each write is one
// transaction, committed durably (SQLite: WAL, synchronous=FULL): a write that returned ok
// survives a crash or restart. Thread-safe. Errors: io_error naming the database;
// storage_full when the file reached its cap or the disk is full; unavailable when
// PostgreSQL cannot be reached.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "util/result.h"

namespace headlab::server {

namespace db {
class Database;
}

class ProgressStore {
 public:
  // Opens `path`: a file (creating it and its folder) or a postgresql:// URL, and applies the
  // schema migrations it lacks (server/store/schema.h). max_bytes > 0 caps an SQLite file's size:
  // writes past it fail with storage_full (HTTP 507, as on a full disk), reads go on.
  static Result<std::unique_ptr<ProgressStore>> open(const std::string& path, std::int64_t max_bytes = 0);
  ~ProgressStore();
  ProgressStore(const ProgressStore&) = delete;
  ProgressStore& operator=(const ProgressStore&) = delete;

  // The challenges the learner has completed in the lesson, in completion order.
  Result<std::vector<std::string>> completed(const std::string& learner, const std::string& lesson);

  // Marks challenges completed; returns those that were not completed before.
  Result<std::vector<std::string>> record(const std::string& learner, const std::string& lesson,
                                          const std::vector<std::string>& challenges);

  // Forgets the learner's progress in the lesson (not the answers they asked to see).
  Status reset(const std::string& learner, const std::string& lesson);

  // Remembers that the learner was shown the answer of a challenge; kept for good (a reload
  // or a reset of the lesson does not forget it), so the challenge is never credited after.
  Status note_reveal(const std::string& learner, const std::string& lesson, const std::string& challenge);
  // True when note_reveal was called for the learner's challenge.
  Result<bool> revealed(const std::string& learner, const std::string& lesson, const std::string& challenge);

  // Remembers the learner's answer to a guessing challenge on one piece of evidence (`key`, at
  // most kMaxGuessKeyBytes: the verdict's course::Verdict::guess) and says whether it is the
  // first answer on it. Only a first answer may earn credit: a wrong one is told how far off it
  // is, so a second on the same evidence could be steered there. Bounded: past
  // kMaxGuessesPerChallenge keys for the learner's challenge nothing more is kept and every
  // answer counts as not first.
  static constexpr int kMaxGuessesPerChallenge = 300;
  static constexpr std::size_t kMaxGuessKeyBytes = 200;
  Result<bool> note_guess(const std::string& learner, const std::string& lesson, const std::string& challenge,
                          const std::string& key);

  // What open() was given (a URL with its password, if it has one): FeedbackStore opens the same.
  const std::string& path() const { return path_; }
  // For messages and logs: the path, or the URL with its password hidden.
  const std::string& display_name() const;

 private:
  ProgressStore(std::unique_ptr<db::Database> db, std::string path);
  Error failure(const std::string& doing, const Error& e) const;

  std::unique_ptr<db::Database> db_;
  std::string path_;
  std::int64_t max_bytes_ = 0;
};

// $XDG_DATA_HOME/headlab/headlab.db, else ~/.local/share/headlab/headlab.db.
std::string default_database_path();

}  // namespace headlab::server
