// server/store/progress_store.cpp — one table (server/store/schema.cpp), one transaction per write.
#include "server/store/progress_store.h"

#include <chrono>
#include <cstdlib>
#include <filesystem>

#include "server/store/class_store.h"  // iso_utc
#include "server/store/database.h"
#include "server/store/schema.h"

namespace headlab::server {
std::string default_database_path() {
  const char* xdg = std::getenv("XDG_DATA_HOME");
  std::filesystem::path base;
  if (xdg && *xdg) base = xdg;
  else if (const char* home = std::getenv("HOME"); home && *home) base = std::filesystem::path(home) / ".local/share";
  else base = ".";
  return (base / "headlab" / "headlab.db").string();
}

ProgressStore::ProgressStore(std::unique_ptr<db::Database> db, std::string path)
    : db_(std::move(db)), path_(std::move(path)) {}

ProgressStore::~ProgressStore() = default;

const std::string& ProgressStore::display_name() const { return db_->name(); }

Error ProgressStore::failure(const std::string& doing, const Error& e) const {
  if (e.code == ErrorCode::storage_full) {
    // The cap's own refusal names the sizes (PostgreSQL: database.h, cap_size).
    const bool cap = e.message.find("--db-max-mb") != std::string::npos;
    std::string why = cap ? " (" + e.message + ")"
                      : db_->engine() == db::Engine::postgresql ? " (the database server's disk has no room left)"
                      : max_bytes_ > 0 ? " (it may grow to " + std::to_string(max_bytes_ >> 20) +
                                             " MB; `headlab serve --db-max-mb` raises that)"
                                       : " (the disk has no room left)";
    return Error{ErrorCode::storage_full, "The progress database " + db_->name() + " is full" + why +
                                              ", so new progress cannot be saved. Progress already saved is kept "
                                              "and can be read."};
  }
  return Error{e.code, "Could not " + doing + " in the progress database " + db_->name() + ": " + e.message + "."};
}

Result<std::unique_ptr<ProgressStore>> ProgressStore::open(const std::string& path, std::int64_t max_bytes) {
  auto db = db::Database::open(path, {.what = "progress database"});
  if (!db) return tl::unexpected(db.error());
  if (auto s = db::migrate(**db, db::headlab_migrations()); !s) {
    Error e = s.error();
    if (e.code == ErrorCode::io_error) e.message += " Is it a headlab database? Choose another with --db PATH.";
    return tl::unexpected(e);
  }
  if (auto s = (*db)->cap_size(max_bytes); !s) return tl::unexpected(s.error());
  std::unique_ptr<ProgressStore> store(new ProgressStore(std::move(*db), path));
  store->max_bytes_ = max_bytes;
  return store;
}

Result<std::vector<std::string>> ProgressStore::completed(const std::string& learner, const std::string& lesson) {
  // Completion order; ties (one write's challenges) in insertion order: rowid in SQLite,
  // seq in PostgreSQL (see migration 1).
  const char* sql = db_->engine() == db::Engine::sqlite
                        ? "SELECT challenge FROM progress WHERE learner = $1 AND lesson = $2 ORDER BY completed_at, rowid"
                        : "SELECT challenge FROM progress WHERE learner = $1 AND lesson = $2 ORDER BY completed_at, seq";
  auto rows = db_->query(sql, {learner, lesson});
  if (!rows) return tl::unexpected(failure("read progress", rows.error()));
  std::vector<std::string> out;
  out.reserve(rows->size());
  for (const db::Row& row : *rows) out.push_back(row.text(0));
  return out;
}

Result<std::vector<std::string>> ProgressStore::record(const std::string& learner, const std::string& lesson,
                                                       const std::vector<std::string>& challenges) {
  std::vector<std::string> fresh;
  if (challenges.empty()) return fresh;
  Status s = db_->transaction(db::Access::grow, [&](db::Session& tx) -> Status {
    fresh.clear();  // a retry after a dropped connection starts again
    for (const std::string& c : challenges) {
      auto n = tx.exec("INSERT INTO progress (learner, lesson, challenge) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
                       {learner, lesson, c});
      if (!n) return tl::unexpected(n.error());
      if (*n > 0) fresh.push_back(c);
    }
    return {};
  });
  if (!s) return tl::unexpected(failure("save progress", s.error()));
  return fresh;
}

Status ProgressStore::reset(const std::string& learner, const std::string& lesson) {
  // A transaction, not a lone statement: it runs again if the link to PostgreSQL drops.
  Status s = db_->transaction(db::Access::write, [&](db::Session& tx) -> Status {
    auto n = tx.exec("DELETE FROM progress WHERE learner = $1 AND lesson = $2", {learner, lesson});
    if (!n) return tl::unexpected(n.error());
    return {};
  });
  if (!s) return tl::unexpected(failure("reset progress", s.error()));
  return {};
}

Status ProgressStore::note_reveal(const std::string& learner, const std::string& lesson, const std::string& challenge) {
  Status s = db_->transaction(db::Access::grow, [&](db::Session& tx) -> Status {
    auto n = tx.exec("INSERT INTO reveals (learner, lesson, challenge, revealed_at) VALUES ($1, $2, $3, $4) "
                     "ON CONFLICT DO NOTHING",
                     {learner, lesson, challenge, iso_utc(std::chrono::duration_cast<std::chrono::milliseconds>(
                                                             std::chrono::system_clock::now().time_since_epoch())
                                                             .count())});
    if (!n) return tl::unexpected(n.error());
    return {};
  });
  if (!s) return tl::unexpected(failure("remember that the answer was shown", s.error()));
  return {};
}

Result<bool> ProgressStore::note_guess(const std::string& learner, const std::string& lesson,
                                       const std::string& challenge, const std::string& key) {
  if (key.size() > kMaxGuessKeyBytes)
    return make_error(ErrorCode::invalid_argument, "A guess's evidence key is longer than " +
                                                       std::to_string(kMaxGuessKeyBytes) + " bytes.");
  bool first = false;
  Status s = db_->transaction(db::Access::grow, [&](db::Session& tx) -> Status {
    auto seen = tx.query("SELECT 1 FROM guesses WHERE learner = $1 AND lesson = $2 AND challenge = $3 AND evidence = $4",
                         {learner, lesson, challenge, key});
    if (!seen) return tl::unexpected(seen.error());
    if (!seen->empty()) return {};
    auto count = tx.query("SELECT COUNT(*) FROM guesses WHERE learner = $1 AND lesson = $2 AND challenge = $3",
                          {learner, lesson, challenge});
    if (!count) return tl::unexpected(count.error());
    if (!count->empty() && count->front().integer(0) >= kMaxGuessesPerChallenge) return {};
    auto n = tx.exec("INSERT INTO guesses (learner, lesson, challenge, evidence, guessed_at) VALUES ($1, $2, $3, $4, $5) "
                     "ON CONFLICT DO NOTHING",
                     {learner, lesson, challenge, key,
                      iso_utc(std::chrono::duration_cast<std::chrono::milliseconds>(
                                  std::chrono::system_clock::now().time_since_epoch())
                                  .count())});
    if (!n) return tl::unexpected(n.error());
    first = *n > 0;  // another server may have taken the same key in between: then not first
    return {};
  });
  if (!s) return tl::unexpected(failure("remember a guess", s.error()));
  return first;
}

Result<bool> ProgressStore::revealed(const std::string& learner, const std::string& lesson, const std::string& challenge) {
  auto rows = db_->query("SELECT 1 FROM reveals WHERE learner = $1 AND lesson = $2 AND challenge = $3",
                         {learner, lesson, challenge});
  if (!rows) return tl::unexpected(failure("read what answers were shown", rows.error()));
  return !rows->empty();
}

}  // namespace headlab::server
