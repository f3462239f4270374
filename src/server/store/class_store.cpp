// server/store/class_store.cpp — the tables classes, class_members, class_attempts and
// teacher_sessions (migration 2, server/store/schema.cpp) through the db layer; libsodium for
// random codes, Argon2id credential hashes and token hashes.
#include "server/store/class_store.h"

#include <sodium.h>

#include <chrono>
#include <ctime>

#include "server/store/database.h"
#include "server/store/nickname_rekey.h"
#include "server/store/schema.h"
#include "util/untrusted_text.h"

namespace headlab::server {
namespace {

// No 0/O, 1/I/L: a code is read aloud and typed from a projector.
constexpr char kAlphabet[] = "ABCDEFGHJKMNPQRSTUVWXYZ23456789";
constexpr int kCodeLength = 6;

std::string random_chars(int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += kAlphabet[randombytes_uniform(sizeof kAlphabet - 1)];
  return out;
}

std::string hex(const unsigned char* bytes, std::size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < n; ++i) {
    out += digits[bytes[i] >> 4];
    out += digits[bytes[i] & 15];
  }
  return out;
}

// The stored form of a session token: BLAKE2b-256. A token has 256 random bits, so a fast
// hash is enough (a slow one guards guessable passphrases, not random tokens).
std::string token_hash(const std::string& token) {
  unsigned char out[crypto_generichash_BYTES];
  crypto_generichash(out, sizeof out, reinterpret_cast<const unsigned char*>(token.data()), token.size(), nullptr, 0);
  return hex(out, sizeof out);
}

std::size_t code_points(const std::string& s) {
  std::size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

std::string trim(const std::string& s) {
  auto a = s.find_first_not_of(" \t\r\n");
  if (a == std::string::npos) return "";
  auto b = s.find_last_not_of(" \t\r\n");
  return s.substr(a, b - a + 1);
}

bool has_control_characters(const std::string& s) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    auto b = static_cast<unsigned char>(s[i]);
    if (b < 0x20 || b == 0x7F) return true;
    if (b == 0xC2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) <= 0x9F &&
        static_cast<unsigned char>(s[i + 1]) >= 0x80)
      return true;  // C1 controls
  }
  return false;
}

// A failure the store decides inside a transaction body (an unknown code, a nickname taken):
// the body returns it, the transaction rolls back, and it reaches the caller as it is.
bool is_database_error(const Error& e) {
  return e.code == ErrorCode::io_error || e.code == ErrorCode::unavailable || e.code == ErrorCode::storage_full;
}

Error class_not_found(const std::string& code) {
  return Error{ErrorCode::not_found, "No class has the code '" + code.substr(0, 16) + "'. Check the code."};
}

ClassInfo class_info(const db::Row& row) { return {row.text(0), row.text(1), row.text(2), row.integer(3)}; }

// learner, lesson, challenge, passed, answer, at: a pass carried over on joining is marked so.
Attempt attempt_of(const db::Row& row) {
  Attempt a{row.text(0), row.text(1), row.text(2), row.integer(3) != 0, row.text(4), row.text(5), false, ""};
  if (a.passed && a.answer == kBeforeJoining) {
    a.before_joining = true;
    a.answer.clear();
  }
  return a;
}

Status bump_version(db::Session& tx, const std::string& code) {
  auto n = tx.exec("UPDATE classes SET version = version + 1 WHERE code = $1", {code});
  if (!n) return tl::unexpected(n.error());
  return {};
}

// The code of the class a learner is in, or an empty string when in none.
Result<std::string> class_of(db::Session& tx, const std::string& learner) {
  auto rows = tx.query("SELECT class_code FROM class_members WHERE learner = $1", {learner});
  if (!rows) return tl::unexpected(rows.error());
  return rows->empty() ? std::string() : rows->front().text(0);
}

// Deletes a learner's attempts and membership (leave, remove) and raises the class's version.
Status delete_learner(db::Session& tx, const std::string& code, const std::string& learner) {
  for (const char* sql : {"DELETE FROM class_attempts WHERE learner = $1", "DELETE FROM class_members WHERE learner = $1"})
    if (auto n = tx.exec(sql, {learner}); !n) return tl::unexpected(n.error());
  return bump_version(tx, code);
}

}  // namespace

std::string iso_utc(std::int64_t ms) {
  std::time_t s = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&s, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms % 1000));
  return buf;
}

ClassStore::ClassStore(std::unique_ptr<db::Database> db, std::string path, ClassStoreOptions options)
    : db_(std::move(db)), path_(std::move(path)), options_(std::move(options)) {}

ClassStore::~ClassStore() = default;

const std::string& ClassStore::display_name() const { return db_->name(); }

std::int64_t ClassStore::now_ms() const {
  if (options_.clock) return options_.clock();
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string ClassStore::now_iso() const { return iso_utc(now_ms()); }

Error ClassStore::failure(const std::string& doing, const Error& e) const {
  if (!is_database_error(e)) return e;
  if (e.code == ErrorCode::storage_full)
    return Error{ErrorCode::storage_full, "The class database " + db_->name() + " is full, so " + doing +
                                              " failed. What is saved already can still be read."};
  return Error{e.code, "Could not " + doing + " in the class database " + db_->name() + ": " + e.message + "."};
}

Result<std::unique_ptr<ClassStore>> ClassStore::open(const std::string& target, ClassStoreOptions options) {
  if (sodium_init() < 0) return make_error(ErrorCode::internal, "libsodium could not start (no source of randomness).");
  // secure_delete: deleted rows are overwritten with zeros in an SQLite file, not only
  // unlinked: "delete the class" means it.
  auto db = db::Database::open(target, {.what = "class database", .secure_delete = true});
  if (!db) return tl::unexpected(db.error());
  if (auto s = db::migrate(**db, db::headlab_migrations()); !s) {
    Error e = s.error();
    if (e.code == ErrorCode::io_error) e.message += " Is it a headlab database? Choose another with --db PATH.";
    return tl::unexpected(e);
  }
  // Keys stored before nicknames were NFKC case-folded, made current (nickname_rekey.h).
  auto rekeyed = rekey_nicknames(**db);
  if (!rekeyed) return tl::unexpected(rekeyed.error());
  if (auto s = (*db)->cap_size(options.max_bytes); !s) return tl::unexpected(s.error());
  std::unique_ptr<ClassStore> store(new ClassStore(std::move(*db), target, std::move(options)));
  store->rekeyed_ = *rekeyed;
  return store;
}

Result<NewClass> ClassStore::create_class(const std::string& raw_name, const std::string& passphrase) {
  std::string name = trim(raw_name);
  if (name.empty()) return make_error(ErrorCode::invalid_argument, "The class needs a name, like \"Period 3\".");
  if (Status s = check_shown_text(name, "The class name"); !s) return tl::unexpected(s.error());
  if (code_points(name) > 80 || has_control_characters(name))
    return make_error(ErrorCode::invalid_argument, "A class name is at most 80 characters, without control characters.");
  if (!passphrase.empty() && (passphrase.size() < 10 || passphrase.size() > 200))
    return make_error(ErrorCode::invalid_argument,
                      "A passphrase is 10 to 200 bytes long (a few words are easier to remember than symbols).");
  NewClass made;
  if (passphrase.empty()) {
    std::string s = random_chars(20);  // 20 of 31 symbols: 99 bits
    made.secret = s.substr(0, 5) + "-" + s.substr(5, 5) + "-" + s.substr(10, 5) + "-" + s.substr(15, 5);
  }
  const std::string& credential = passphrase.empty() ? made.secret : passphrase;
  char hash[crypto_pwhash_STRBYTES];
  const bool fast = options_.fast_hash_for_tests;
  if (crypto_pwhash_str_alg(hash, credential.data(), credential.size(),
                            fast ? crypto_pwhash_OPSLIMIT_MIN : crypto_pwhash_OPSLIMIT_INTERACTIVE,
                            fast ? crypto_pwhash_MEMLIMIT_MIN : crypto_pwhash_MEMLIMIT_INTERACTIVE,
                            crypto_pwhash_ALG_ARGON2ID13) != 0)
    return make_error(ErrorCode::unavailable, "Not enough memory to hash the teacher's secret right now; try again.");
  made.info.name = name;
  made.info.created_at = now_iso();
  for (int tries = 0; tries < 20; ++tries) {
    made.info.code = random_chars(kCodeLength);
    std::int64_t inserted = 0;
    // ON CONFLICT DO NOTHING rather than catching the violation: on PostgreSQL a failed
    // statement spoils the whole transaction.
    Status s = db_->transaction(db::Access::write, [&](db::Session& tx) -> Status {
      auto n = tx.exec(
          "INSERT INTO classes (code, name, credential_hash, created_at, version) VALUES ($1, $2, $3, $4, 0) "
          "ON CONFLICT DO NOTHING",
          {made.info.code, name, std::string(hash), made.info.created_at});
      if (!n) return tl::unexpected(n.error());
      inserted = *n;
      return {};
    });
    if (!s) return tl::unexpected(failure("create the class", s.error()));
    if (inserted == 1) return made;
    // the code was taken: draw another
  }
  return make_error(ErrorCode::unavailable, "Could not find a free class code; try again.");
}

Result<ClassInfo> ClassStore::find_class(const std::string& code) {
  auto rows = db_->query("SELECT code, name, created_at, version FROM classes WHERE code = $1", {code});
  if (!rows) return tl::unexpected(failure("read the class", rows.error()));
  if (rows->empty()) return tl::unexpected(class_not_found(code));
  return class_info(rows->front());
}

Result<std::vector<ClassInfo>> ClassStore::classes() {
  auto rows = db_->query("SELECT code, name, created_at, version FROM classes ORDER BY created_at, code");
  if (!rows) return tl::unexpected(failure("list the classes", rows.error()));
  std::vector<ClassInfo> out;
  out.reserve(rows->size());
  for (const db::Row& row : *rows) out.push_back(class_info(row));
  return out;
}

Status ClassStore::delete_class(const std::string& code) {
  Status s = db_->transaction(db::Access::write, [&](db::Session& tx) -> Status {
    std::int64_t deleted = 0;
    for (const char* sql : {"DELETE FROM class_attempts WHERE class_code = $1", "DELETE FROM class_members WHERE class_code = $1",
                            "DELETE FROM teacher_sessions WHERE class_code = $1", "DELETE FROM class_bans WHERE class_code = $1",
                            "DELETE FROM classes WHERE code = $1"}) {
      auto n = tx.exec(sql, {code});
      if (!n) return tl::unexpected(n.error());
      deleted = *n;
    }
    if (deleted == 0) return make_error(ErrorCode::not_found, "No class has the code '" + code.substr(0, 16) + "'.");
    return {};
  });
  if (!s) return tl::unexpected(failure("delete the class", s.error()));
  // SQLite: the old pages may still sit in the write-ahead log; fold it into the file now.
  // PostgreSQL: vacuum the class tables, so the dead rows and their index entries go (see
  // class_store.h for what that does and does not guarantee).
  // The delete is committed either way; a checkpoint or vacuum that fails now is done by the
  // engine's next automatic one, so it is not reported as a failed delete.
  (void)db_->forget_deleted({"class_attempts", "class_members", "teacher_sessions", "class_bans", "classes"});
  return {};
}

Result<ClassMember> ClassStore::join(const std::string& code, const std::string& learner, const std::string& raw_nickname) {
  auto clean = clean_nickname(raw_nickname);
  if (!clean) return tl::unexpected(clean.error());
  const std::string& nickname = clean->text;
  const std::string& key = clean->key;
  ClassMember m;
  Status s = db_->transaction(db::Access::write, [&](db::Session& tx) -> Status {
    m = ClassMember{learner, nickname, now_iso()};
    auto cls = tx.query("SELECT code FROM classes WHERE code = $1", {code});
    if (!cls) return tl::unexpected(cls.error());
    if (cls->empty()) return tl::unexpected(class_not_found(code));
    auto banned = tx.query("SELECT learner FROM class_bans WHERE class_code = $1 AND (learner = $2 OR nickname_key = $3)",
                           {code, learner, key});
    if (!banned) return tl::unexpected(banned.error());
    if (!banned->empty())
      return make_error(ErrorCode::forbidden,
                        banned->front().text(0) == learner
                            ? "The teacher removed you from this class; ask them to let you back in."
                            : "The teacher removed the learner called " + nickname +
                                  " from this class; that nickname cannot join until the teacher lets it back in.");
    auto mine = tx.query("SELECT class_code, nickname, joined_at FROM class_members WHERE learner = $1", {learner});
    if (!mine) return tl::unexpected(mine.error());
    if (!mine->empty()) {
      const db::Row& row = mine->front();
      ClassMember was{learner, row.text(1), row.text(2)};
      if (row.text(0) == code && nickname_key(was.nickname) == key) {
        m = was;  // the same again: the membership as it is
        return {};
      }
      return make_error(ErrorCode::invalid_argument, row.text(0) == code
                                                         ? "You are in this class already, as " + was.nickname + "."
                                                         : "You are in another class already; leave it first.");
    }
    auto n = tx.exec(
        "INSERT INTO class_members (learner, class_code, nickname, nickname_key, joined_at) VALUES ($1, $2, $3, $4, $5) "
        "ON CONFLICT DO NOTHING",
        {learner, code, nickname, key, m.joined_at});
    if (!n) return tl::unexpected(n.error());
    if (*n == 0)
      return make_error(ErrorCode::invalid_argument,
                        "Someone in this class is called " + nickname + " already; choose another nickname.");
    // What the learner finished before joining (the progress table, migration 1): a pass
    // each, at the time it was finished, marked as carried over. class_attempts is empty for
    // a new member (leaving and removal delete their attempts).
    auto carried = tx.exec(
        "INSERT INTO class_attempts (class_code, learner, lesson, challenge, passed, answer, at) "
        "SELECT $1, learner, lesson, challenge, 1, $3, completed_at FROM progress WHERE learner = $2",
        {code, learner, std::string(kBeforeJoining)});
    if (!carried) return tl::unexpected(carried.error());
    m.carried_over = static_cast<int>(*carried);
    return bump_version(tx, code);
  });
  if (!s) return tl::unexpected(failure("join the class", s.error()));
  return m;
}

Result<std::optional<std::pair<ClassInfo, ClassMember>>> ClassStore::membership(const std::string& learner) {
  auto rows = db_->query(
      "SELECT c.code, c.name, c.created_at, c.version, m.nickname, m.joined_at "
      "FROM class_members m JOIN classes c ON c.code = m.class_code WHERE m.learner = $1",
      {learner});
  if (!rows) return tl::unexpected(failure("read the class", rows.error()));
  if (rows->empty()) return std::optional<std::pair<ClassInfo, ClassMember>>();
  const db::Row& row = rows->front();
  ClassMember m{learner, row.text(4), row.text(5)};
  return std::optional<std::pair<ClassInfo, ClassMember>>(std::pair{class_info(row), std::move(m)});
}

Status ClassStore::leave(const std::string& learner) {
  Status s = db_->transaction(db::Access::write, [&](db::Session& tx) -> Status {
    auto code = class_of(tx, learner);
    if (!code) return tl::unexpected(code.error());
    if (code->empty()) return make_error(ErrorCode::not_found, "You are not in a class.");
    return delete_learner(tx, *code, learner);
  });
  if (!s) return tl::unexpected(failure("leave the class", s.error()));
  return {};
}

Status ClassStore::remove_member(const std::string& code, const std::string& nickname) {
  Status s = db_->transaction(db::Access::write, [&](db::Session& tx) -> Status {
    // The key itself first, then its marked forms (nickname_rekey.h), oldest member first.
    const std::string key = nickname_key(nickname);
    auto rows = tx.query(
        "SELECT learner, nickname, nickname_key FROM class_members WHERE class_code = $1 AND "
        "(nickname_key = $2 OR substr(nickname_key, 1, length($3)) = $3) ORDER BY nickname_key = $2 DESC, joined_at",
        {code, key, key + kMarkedKey});
    if (!rows) return tl::unexpected(rows.error());
    if (rows->empty())
      return make_error(ErrorCode::not_found, "Nobody in this class is called '" + nickname.substr(0, 32) + "'.");
    const db::Row& row = rows->front();
    auto n = tx.exec(
        "INSERT INTO class_bans (class_code, learner, nickname, nickname_key, banned_at) VALUES ($1, $2, $3, $4, $5) "
        "ON CONFLICT DO NOTHING",
        {code, row.text(0), row.text(1), nickname_key(row.text(1)), now_iso()});
    if (!n) return tl::unexpected(n.error());
    return delete_learner(tx, code, row.text(0));
  });
  if (!s) return tl::unexpected(failure("remove the learner", s.error()));
  return {};
}

Status ClassStore::unban_member(const std::string& code, const std::string& nickname) {
  Status s = db_->transaction(db::Access::write, [&](db::Session& tx) -> Status {
    auto n = tx.exec("DELETE FROM class_bans WHERE class_code = $1 AND nickname_key = $2", {code, nickname_key(nickname)});
    if (!n) return tl::unexpected(n.error());
    if (*n == 0)
      return make_error(ErrorCode::not_found,
                        "Nobody called '" + nickname.substr(0, 32) + "' was removed from this class.");
    return bump_version(tx, code);
  });
  if (!s) return tl::unexpected(failure("let the learner back in", s.error()));
  return {};
}

Result<std::vector<BannedLearner>> ClassStore::banned(const std::string& code) {
  auto rows = db_->query(
      "SELECT nickname, banned_at FROM class_bans WHERE class_code = $1 ORDER BY banned_at, nickname_key", {code});
  if (!rows) return tl::unexpected(failure("read the class", rows.error()));
  std::vector<BannedLearner> out;
  out.reserve(rows->size());
  for (const db::Row& row : *rows) out.push_back({row.text(0), row.text(1)});
  return out;
}

Result<std::vector<ClassMember>> ClassStore::members(const std::string& code) {
  auto rows = db_->query(
      "SELECT learner, nickname, joined_at FROM class_members WHERE class_code = $1 ORDER BY joined_at, nickname_key",
      {code});
  if (!rows) return tl::unexpected(failure("read the class", rows.error()));
  std::vector<ClassMember> out;
  out.reserve(rows->size());
  for (const db::Row& row : *rows) out.push_back({row.text(0), row.text(1), row.text(2)});
  return out;
}

Status ClassStore::record_attempt(const std::string& learner, const std::string& lesson, const std::string& challenge,
                                  bool passed, const std::string& answer, const std::string& request_id,
                                  const std::string& evidence) {
  const std::string at = now_iso();
  Status s = db_->transaction(db::Access::grow, [&](db::Session& tx) -> Status {
    auto in = class_of(tx, learner);
    if (!in) return tl::unexpected(in.error());
    if (in->empty()) return {};  // in no class: nothing to keep
    const std::string& code = *in;
    // A retry (the same learner and request id) meets class_attempts_by_request and is not
    // recorded again; a check without an id (NULL) never meets it.
    db::Value id = request_id.empty() ? db::Value{} : db::Value{request_id.substr(0, 64)};
    // Bounded per learner and challenge (the teacher's view reads them all): nothing after
    // the first pass (checks after it do not count as tries), at most kMaxAttemptsPerChallenge
    // before it. class_attempts_by_learner answers both subqueries.
    auto n = tx.exec(
        "INSERT INTO class_attempts (class_code, learner, lesson, challenge, passed, answer, at, request_id, evidence) "
        "SELECT $1, $2, $3, $4, $5, $6, $7, $8, $10 WHERE NOT EXISTS (SELECT 1 FROM class_attempts "
        "WHERE learner = $2 AND lesson = $3 AND challenge = $4 AND passed = 1) AND (SELECT COUNT(*) FROM "
        "class_attempts WHERE learner = $2 AND lesson = $3 AND challenge = $4) < $9 ON CONFLICT DO NOTHING",
        {code, learner, lesson, challenge, std::int64_t{passed ? 1 : 0}, answer.substr(0, 200), at, id,
         std::int64_t{kMaxAttemptsPerChallenge}, evidence.size() <= kMaxEvidenceBytes ? evidence : std::string()});
    if (!n) return tl::unexpected(n.error());
    // A look at the answer that is not kept (after a pass, past the bound) still changes what
    // the teacher sees: the cell's "answer shown" mark (reveals, read with the view).
    if (*n == 0 && answer != "(revealed)") return {};
    return bump_version(tx, code);
  });
  if (!s) return tl::unexpected(failure("record the check", s.error()));
  return {};
}

Status ClassStore::record_passes(const std::string& learner, const std::string& lesson,
                                 const std::vector<std::string>& challenges, const std::vector<std::string>& evidence) {
  const std::string at = now_iso();
  Status s = db_->transaction(db::Access::grow, [&](db::Session& tx) -> Status {
    auto in = class_of(tx, learner);
    if (!in) return tl::unexpected(in.error());
    if (in->empty()) return {};  // in no class: nothing to keep
    const std::string& code = *in;
    std::int64_t added = 0;
    for (std::size_t i = 0; i < challenges.size(); ++i) {
      const std::string& challenge = challenges[i];
      const std::string e = i < evidence.size() && evidence[i].size() <= kMaxEvidenceBytes ? evidence[i] : "";
      // class_attempts_by_learner (migration 3) answers the NOT EXISTS.
      auto n = tx.exec(
          "INSERT INTO class_attempts (class_code, learner, lesson, challenge, passed, answer, at, evidence) "
          "SELECT $1, $2, $3, $4, 1, '', $5, $6 WHERE NOT EXISTS (SELECT 1 FROM class_attempts "
          "WHERE learner = $2 AND lesson = $3 AND challenge = $4 AND passed = 1)",
          {code, learner, lesson, challenge, at, e});
      if (!n) return tl::unexpected(n.error());
      added += *n;
    }
    if (added == 0) return {};
    return bump_version(tx, code);
  });
  if (!s) return tl::unexpected(failure("record the check", s.error()));
  return {};
}

Result<std::vector<Attempt>> ClassStore::attempts(const std::string& code) {
  // Oldest first; attempts in the same millisecond in the order they were recorded: rowid in
  // SQLite, seq in PostgreSQL (see migration 2).
  const char* sql =
      db_->engine() == db::Engine::sqlite
          ? "SELECT learner, lesson, challenge, passed, answer, at FROM class_attempts WHERE class_code = $1 ORDER BY at, rowid"
          : "SELECT learner, lesson, challenge, passed, answer, at FROM class_attempts WHERE class_code = $1 ORDER BY at, seq";
  auto rows = db_->query(sql, {code});
  if (!rows) return tl::unexpected(failure("read the class", rows.error()));
  std::vector<Attempt> out;
  out.reserve(rows->size());
  for (const db::Row& row : *rows) out.push_back(attempt_of(row));
  return out;
}

Result<std::vector<Attempt>> ClassStore::learner_attempts(const std::string& code, const std::string& nickname,
                                                          const std::string& lesson, const std::string& challenge) {
  auto who = db_->query("SELECT learner FROM class_members WHERE class_code = $1 AND nickname_key = $2",
                        {code, nickname_key(nickname)});
  if (!who) return tl::unexpected(failure("read the class", who.error()));
  if (who->empty())
    return make_error(ErrorCode::not_found, "Nobody in this class is called '" + nickname.substr(0, 32) + "'.");
  const std::string learner = who->front().text(0);
  const char* sql =
      db_->engine() == db::Engine::sqlite
          ? "SELECT learner, lesson, challenge, passed, answer, at, evidence FROM class_attempts "
            "WHERE learner = $1 AND lesson = $2 AND challenge = $3 AND class_code = $4 ORDER BY at, rowid"
          : "SELECT learner, lesson, challenge, passed, answer, at, evidence FROM class_attempts "
            "WHERE learner = $1 AND lesson = $2 AND challenge = $3 AND class_code = $4 ORDER BY at, seq";
  auto rows = db_->query(sql, {learner, lesson, challenge, code});
  if (!rows) return tl::unexpected(failure("read the class", rows.error()));
  std::vector<Attempt> out;
  out.reserve(rows->size());
  for (const db::Row& row : *rows) {
    out.push_back(attempt_of(row));
    out.back().evidence = row.text(6);
  }
  return out;
}

Result<std::vector<Reveal>> ClassStore::reveals(const std::string& code) {
  // reveals' key (learner, lesson, challenge) answers the join by learner.
  auto rows = db_->query(
      "SELECT r.learner, r.lesson, r.challenge, r.revealed_at FROM reveals r JOIN class_members m "
      "ON m.learner = r.learner WHERE m.class_code = $1 ORDER BY r.revealed_at",
      {code});
  if (!rows) return tl::unexpected(failure("read the class", rows.error()));
  std::vector<Reveal> out;
  out.reserve(rows->size());
  for (const db::Row& row : *rows) out.push_back({row.text(0), row.text(1), row.text(2), row.text(3)});
  return out;
}

Result<bool> ClassStore::verify_teacher(const std::string& code, const std::string& secret) {
  auto rows = db_->query("SELECT credential_hash FROM classes WHERE code = $1", {code});
  if (!rows) return tl::unexpected(failure("check the teacher's secret", rows.error()));
  if (rows->empty()) return false;
  const std::string hash = rows->front().text(0);
  // No connection is held here: Argon2id takes a tenth of a second on purpose.
  return crypto_pwhash_str_verify(hash.c_str(), secret.data(), secret.size()) == 0;
}

Result<TeacherSession> ClassStore::open_session(const std::string& code) {
  unsigned char raw[32];
  randombytes_buf(raw, sizeof raw);
  const std::int64_t now_s = now_ms() / 1000;
  TeacherSession session{hex(raw, sizeof raw), now_s + options_.session_seconds};
  Status s = db_->transaction(db::Access::write, [&](db::Session& tx) -> Status {
    if (auto n = tx.exec("DELETE FROM teacher_sessions WHERE expires_at <= $1", {now_s}); !n) return tl::unexpected(n.error());
    auto n = tx.exec("INSERT INTO teacher_sessions (token_hash, class_code, expires_at) VALUES ($1, $2, $3)",
                     {token_hash(session.token), code, session.expires_at});
    if (!n) return tl::unexpected(n.error());
    return {};
  });
  if (!s) return tl::unexpected(failure("open a teacher session", s.error()));
  return session;
}

Result<std::string> ClassStore::session_class(const std::string& token) {
  const Error none{ErrorCode::unauthorized, "Log in as the class's teacher first (your session may have expired)."};
  if (token.empty()) return tl::unexpected(none);
  auto rows = db_->query("SELECT class_code FROM teacher_sessions WHERE token_hash = $1 AND expires_at > $2",
                         {token_hash(token), std::int64_t{now_ms() / 1000}});
  if (!rows) return tl::unexpected(failure("check the teacher session", rows.error()));
  if (rows->empty()) return tl::unexpected(none);
  return rows->front().text(0);
}

Status ClassStore::close_session(const std::string& token) {
  Status s = db_->transaction(db::Access::write, [&](db::Session& tx) -> Status {
    auto n = tx.exec("DELETE FROM teacher_sessions WHERE token_hash = $1", {token_hash(token)});
    if (!n) return tl::unexpected(n.error());
    return {};
  });
  if (!s) return tl::unexpected(failure("end the teacher session", s.error()));
  return {};
}

}  // namespace headlab::server
