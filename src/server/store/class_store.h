// server/store/class_store.h — classes on the store layer (server/store/database.h), so on SQLite (a path) and
// on PostgreSQL (a postgresql:// URL) alike: a class, its learners (by a nickname they
// choose), the teacher's credential and sessions, and every check a learner of the class made
// (the evidence of the teacher's view). Its tables are migrations 2-4 and 7
// (server/store/schema.cpp); it reads progress and reveals (migrations 1, 5) of the same database.
//
//   auto store = ClassStore::open("headlab.db");               // or "postgresql://..."
//   auto made = (*store)->create_class("Period 3", "");        // made->secret: shown once
//   (*store)->join(made->info.code, "learner-id", "Ada");
//   (*store)->record_attempt("learner-id", "trained-heads", "pattern-quiz", false, "uniform");
//   auto token = (*store)->open_session(made->info.code);      // the teacher's cookie
//
// Contracts:
// - A learner id is in at most one class. Attempts of a learner in no class are not kept.
// - Joining carries the learner's progress over: every challenge they finished before
//   (the progress table) becomes a passing attempt marked kBeforeJoining, at the time it
//   was finished, so the teacher sees it and knows it was not done in class.
// - The teacher's secret or passphrase is kept only as an Argon2id hash (libsodium's
//   crypto_pwhash_str); a session token only as its BLAKE2b hash. Neither can be read back.
// - Leaving, removing a learner and deleting a class delete the rows in one committed
//   transaction. On SQLite the freed pages are zeroed (secure_delete) and a deleted class's
//   write-ahead log is checkpointed away, so its text is gone from the files. On PostgreSQL
//   no query, connection or server sees the rows again once the DELETE commits, and a
//   deleted class's tables are vacuumed at once (dead rows and index entries gone, their
//   space free); the old bytes can still sit in that free space until new rows overwrite it,
//   and in the server's WAL and backups. docs/school.md says what an operator runs to
//   remove them from the table files (VACUUM FULL of the class tables).
// - Every change to a class (join, leave, remove, attempt) raises its version by one, so a
//   teacher's page can ask "anything new since version N?" cheaply.
// - Times are ISO-8601 UTC text made here, session expiry is whole seconds since 1970.
// Thread-safe (the db layer's pool). Several servers may share one PostgreSQL database.
// Errors: io_error / unavailable / storage_full from the database (named, never with its
// password), invalid_argument / not_found as documented.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "server/store/nickname_rekey.h"
#include "util/result.h"

namespace headlab::server {

namespace db {
class Database;
}

struct ClassInfo {
  std::string code;        // the short join code, "K7QPM3": the class's key
  std::string name;        // "Period 3"
  std::string created_at;  // ISO-8601 UTC
  std::int64_t version = 0;
};

struct ClassMember {
  std::string learner;   // the browser's anonymous id; never shown to the teacher
  std::string nickname;  // chosen by the learner (NFKC), unique in the class by nickname_key
                         // (util/untrusted_text.h: case-folded NFKC)
  std::string joined_at;
  int carried_over = 0;  // join only: challenges finished before joining, now in the class
};

// A learner the teacher removed: kept out of the class (by learner id and by nickname)
// until the teacher lets them back in.
struct BannedLearner {
  std::string nickname;
  std::string banned_at;  // ISO-8601 UTC
};

struct Attempt {
  std::string learner, lesson, challenge;
  bool passed = false;
  std::string answer;  // what the learner answered, "" when the challenge was detected
  std::string at;      // ISO-8601 UTC, with milliseconds
  bool before_joining = false;  // a pass carried over from the learner's progress on joining
  std::string evidence;  // learner_attempts only: what the check saw (JSON), "" when not kept
};

// The answer column of a pass carried over on joining (Attempt::before_joining).
inline constexpr const char* kBeforeJoining = "(before joining)";

// A challenge whose answer the learner was shown (ProgressStore::note_reveal).
struct Reveal {
  std::string learner, lesson, challenge;
  std::string at;  // ISO-8601 UTC
};

struct NewClass {
  ClassInfo info;
  std::string secret;  // the generated secret, shown once; empty when a passphrase was set
};

struct TeacherSession {
  std::string token;  // in clear, only here: the store keeps its hash
  std::int64_t expires_at = 0;  // seconds since 1970
};

struct ClassStoreOptions {
  std::int64_t max_bytes = 0;           // > 0: writes past this size fail with storage_full
  std::int64_t session_seconds = 8 * 3600;  // a teacher session lasts this long
  // Argon2id at libsodium's minimum cost instead of its "interactive" one (64 MiB, ~0.1 s):
  // for tests only, where hundreds of hashes would take minutes.
  bool fast_hash_for_tests = false;
  // Milliseconds since 1970; the system clock when empty (tests move it to expire sessions).
  std::function<std::int64_t()> clock;
};

class ClassStore {
 public:
  // `target`: an SQLite path (the file is made) or a postgresql:// URL; the schema is
  // migrated to the newest version first. Errors: the database's, naming it.
  static Result<std::unique_ptr<ClassStore>> open(const std::string& target, ClassStoreOptions options = {});
  ~ClassStore();
  ClassStore(const ClassStore&) = delete;
  ClassStore& operator=(const ClassStore&) = delete;

  // What open() did to nickname keys stored before NFKC (nickname_rekey.h): all zero for a
  // current database.
  const NicknameRekey& nickname_rekey() const { return rekeyed_; }

  // A new class with a fresh join code. An empty passphrase: a secret is generated and
  // returned once. Errors: invalid_argument (name empty or over 80 characters, passphrase
  // shorter than 10 or longer than 200 bytes).
  Result<NewClass> create_class(const std::string& name, const std::string& passphrase);
  // Errors: not_found when no class has this code.
  Result<ClassInfo> find_class(const std::string& code);
  // Deletes the class, its learners, their attempts and its sessions. Errors: not_found.
  Status delete_class(const std::string& code);
  // Every class, oldest first (for `headlab class list`-like tools and tests).
  Result<std::vector<ClassInfo>> classes();

  // The nickname is normalised and checked by clean_nickname (util/untrusted_text.h).
  // Errors: not_found (no such code), invalid_argument (nickname empty, over 24 characters,
  // with invisible characters or mixed alphabets, taken in the class; the learner is in
  // another class already), forbidden (the teacher removed this learner or this nickname).
  // Joining the same class again under the same nickname returns the membership as it is.
  // A new member's progress is carried over (see the contracts above; carried_over counts it).
  Result<ClassMember> join(const std::string& code, const std::string& learner, const std::string& nickname);
  // The learner's class and membership, or nullopt when the learner is in no class.
  Result<std::optional<std::pair<ClassInfo, ClassMember>>> membership(const std::string& learner);
  // Deletes the learner's membership and attempts. Errors: not_found when in no class.
  Status leave(const std::string& learner);
  // The teacher removes a learner (by nickname, compared by nickname_key): their attempts go,
  // and the learner id and the nickname are banned from the class until unban_member.
  // Errors: not_found.
  Status remove_member(const std::string& code, const std::string& nickname);
  // Lets a removed learner (by the nickname they had) join again. Errors: not_found.
  Status unban_member(const std::string& code, const std::string& nickname);
  // The class's removed learners, oldest removal first.
  Result<std::vector<BannedLearner>> banned(const std::string& code);
  // The class's learners, in joining order.
  Result<std::vector<ClassMember>> members(const std::string& code);

  // Records one check a learner made; does nothing when the learner is in no class. A
  // non-empty request_id (at most 64 bytes) makes it idempotent: a second check of the same
  // learner with the same id (a retry) is not recorded again. Bounded: a check after the
  // learner passed the challenge, or past kMaxAttemptsPerChallenge of its checks, is not
  // recorded (the teacher's view reads every kept check; checks after a pass are not tries).
  // A look at the answer ("(revealed)") raises the version even when it is not recorded, so
  // the teacher's page shows its mark.
  // `evidence` (what the check saw, JSON made by the caller) is kept when it is at most
  // kMaxEvidenceBytes, else dropped (kept as ""): at most 100 checks x 2 KB per learner and
  // challenge.
  static constexpr int kMaxAttemptsPerChallenge = 100;
  static constexpr std::size_t kMaxEvidenceBytes = 2048;
  Status record_attempt(const std::string& learner, const std::string& lesson, const std::string& challenge,
                        bool passed, const std::string& answer, const std::string& request_id = "",
                        const std::string& evidence = "");
  // Records one passing attempt (no answer: detected) for each challenge of `challenges`
  // that the learner has no passing attempt for yet, in one transaction; does nothing when
  // the learner is in no class. Raises the version only when something was recorded.
  // evidence[i] (when given) is kept with challenges[i], as record_attempt keeps it.
  Status record_passes(const std::string& learner, const std::string& lesson,
                       const std::vector<std::string>& challenges, const std::vector<std::string>& evidence = {});
  // The class's attempts, oldest first (without their evidence).
  Result<std::vector<Attempt>> attempts(const std::string& code);
  // One learner's kept checks of one challenge, oldest first, with their evidence: what the
  // teacher sees on clicking a cell. Errors: not_found (nobody of that nickname in the class).
  Result<std::vector<Attempt>> learner_attempts(const std::string& code, const std::string& nickname,
                                                const std::string& lesson, const std::string& challenge);
  // The answers the class's learners were shown, oldest first.
  Result<std::vector<Reveal>> reveals(const std::string& code);

  // True when `secret` is the class's secret or passphrase (false for an unknown code).
  Result<bool> verify_teacher(const std::string& code, const std::string& secret);
  // A new teacher session for the class; expired sessions are deleted on the way.
  Result<TeacherSession> open_session(const std::string& code);
  // The code of the class a live session belongs to. Errors: unauthorized (unknown token,
  // or the session expired).
  Result<std::string> session_class(const std::string& token);
  Status close_session(const std::string& token);

  const std::string& path() const { return path_; }  // the target as given (a URL may hold a password)
  const std::string& display_name() const;          // for messages: the password hidden
  std::int64_t now_ms() const;

 private:
  ClassStore(std::unique_ptr<db::Database> db, std::string path, ClassStoreOptions options);
  // The database's error `e` while doing `doing`, naming the database; errors the store made
  // itself (not_found, invalid_argument, ...) pass as they are.
  Error failure(const std::string& doing, const Error& e) const;
  std::string now_iso() const;

  std::unique_ptr<db::Database> db_;
  std::string path_;
  ClassStoreOptions options_;
  NicknameRekey rekeyed_;
};

// "2026-12-01T22:41:07.120Z" for milliseconds since 1970.
std::string iso_utc(std::int64_t ms);

}  // namespace headlab::server
