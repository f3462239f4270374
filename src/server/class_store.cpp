// server/class_store.cpp — SQLite tables classes, class_members, class_attempts and
// teacher_sessions; libsodium for random codes, Argon2id credential hashes and token hashes.
#include "server/class_store.h"

#include <sodium.h>
#include <sqlite3.h>

#include <chrono>
#include <ctime>
#include <initializer_list>

#include "server/sqlite_db.h"

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

std::string ascii_lower(std::string s) {
  for (char& c : s)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return s;
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

// A prepared statement with its parameters bound in order: text, or integers.
struct Bound {
  SqliteStatement st;
  bool ok = false;
};

struct Param {
  enum { text, integer } kind;
  std::string s;
  std::int64_t i = 0;
  Param(const std::string& v) : kind(text), s(v) {}
  Param(const char* v) : kind(text), s(v) {}
  Param(std::int64_t v) : kind(integer), i(v) {}
  Param(int v) : kind(integer), i(v) {}
  Param(bool v) : kind(integer), i(v ? 1 : 0) {}
};

bool prepare(sqlite3* db, SqliteStatement& st, const char* sql, std::initializer_list<Param> params) {
  if (sqlite3_prepare_v2(db, sql, -1, &st.stmt, nullptr) != SQLITE_OK) return false;
  int at = 1;
  for (const Param& p : params) {
    int rc = p.kind == Param::text ? sqlite3_bind_text(st.stmt, at, p.s.c_str(), -1, SQLITE_TRANSIENT)
                                   : sqlite3_bind_int64(st.stmt, at, p.i);
    if (rc != SQLITE_OK) return false;
    ++at;
  }
  return true;
}

std::string column_text(sqlite3_stmt* st, int i) {
  const unsigned char* t = sqlite3_column_text(st, i);
  return t ? reinterpret_cast<const char*>(t) : "";
}

// Rolls back unless committed: every early return of a write leaves the file as it was.
class Transaction {
 public:
  explicit Transaction(sqlite3* db) : db_(db) { ok_ = sqlite3_exec(db, "BEGIN IMMEDIATE;", nullptr, nullptr, nullptr) == SQLITE_OK; }
  ~Transaction() {
    if (ok_ && !done_) sqlite3_exec(db_, "ROLLBACK;", nullptr, nullptr, nullptr);
  }
  bool started() const { return ok_; }
  bool commit() {
    done_ = sqlite3_exec(db_, "COMMIT;", nullptr, nullptr, nullptr) == SQLITE_OK;
    return done_;
  }

 private:
  sqlite3* db_;
  bool ok_ = false, done_ = false;
};

const char* kSchema[] = {
    "CREATE TABLE IF NOT EXISTS classes ("
    "  code TEXT PRIMARY KEY, name TEXT NOT NULL, credential_hash TEXT NOT NULL,"
    "  created_at TEXT NOT NULL, version INTEGER NOT NULL);",
    "CREATE TABLE IF NOT EXISTS class_members ("
    "  learner TEXT PRIMARY KEY, class_code TEXT NOT NULL, nickname TEXT NOT NULL,"
    "  nickname_key TEXT NOT NULL, joined_at TEXT NOT NULL, UNIQUE (class_code, nickname_key));",
    "CREATE TABLE IF NOT EXISTS class_attempts ("
    "  class_code TEXT NOT NULL, learner TEXT NOT NULL, lesson TEXT NOT NULL, challenge TEXT NOT NULL,"
    "  passed INTEGER NOT NULL, answer TEXT NOT NULL, at TEXT NOT NULL);",
    "CREATE INDEX IF NOT EXISTS class_attempts_by_class ON class_attempts (class_code, at);",
    "CREATE TABLE IF NOT EXISTS teacher_sessions ("
    "  token_hash TEXT PRIMARY KEY, class_code TEXT NOT NULL, expires_at INTEGER NOT NULL);",
};

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

ClassStore::ClassStore(sqlite3* db, std::string path, ClassStoreOptions options)
    : db_(db), path_(std::move(path)), options_(std::move(options)) {}

ClassStore::~ClassStore() { sqlite3_close(db_); }

std::int64_t ClassStore::now_ms() const {
  if (options_.clock) return options_.clock();
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string ClassStore::now_iso() const { return iso_utc(now_ms()); }

Error ClassStore::sqlite_error(const std::string& doing) const {
  if (sqlite3_errcode(db_) == SQLITE_FULL)
    return Error{ErrorCode::storage_full, "The class database " + path_ + " is full, so " + doing +
                                              " failed. What is saved already can still be read."};
  return Error{ErrorCode::io_error,
               "Could not " + doing + " in the class database " + path_ + ": " + sqlite3_errmsg(db_) + "."};
}

Status ClassStore::exec(const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "unknown error";
    sqlite3_free(err);
    return make_error(ErrorCode::io_error, "Class database " + path_ + ": " + msg + ".");
  }
  return {};
}

Result<std::unique_ptr<ClassStore>> ClassStore::open(const std::string& path, ClassStoreOptions options) {
  if (sodium_init() < 0) return make_error(ErrorCode::internal, "libsodium could not start (no source of randomness).");
  auto db = sqlite_open_durable(path, "class database");
  if (!db) return tl::unexpected(db.error());
  const std::int64_t max_bytes = options.max_bytes;
  std::unique_ptr<ClassStore> store(new ClassStore(*db, path, std::move(options)));
  // Deleted rows are overwritten with zeros, not only unlinked: "delete the class" means it.
  if (auto s = store->exec("PRAGMA secure_delete=ON;"); !s) return tl::unexpected(s.error());
  for (const char* sql : kSchema)
    if (auto s = store->exec(sql); !s)
      return make_error(ErrorCode::io_error, s.error().message + " Is it a headlab database? Choose another with --db PATH.");
  if (max_bytes > 0) {
    std::string sql = "PRAGMA max_page_count=" + std::to_string(std::max<std::int64_t>(1, max_bytes / 4096)) + ";";
    if (auto s = store->exec(sql.c_str()); !s) return tl::unexpected(s.error());
  }
  return store;
}

Status ClassStore::bump_version(const std::string& code) {
  SqliteStatement st;
  if (!prepare(db_, st, "UPDATE classes SET version = version + 1 WHERE code = ?1", {code}) ||
      sqlite3_step(st.stmt) != SQLITE_DONE)
    return tl::unexpected(sqlite_error("update the class"));
  return {};
}

Result<NewClass> ClassStore::create_class(const std::string& raw_name, const std::string& passphrase) {
  std::string name = trim(raw_name);
  if (name.empty()) return make_error(ErrorCode::invalid_argument, "The class needs a name, like \"Period 3\".");
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
  std::lock_guard<std::mutex> lock(mutex_);
  for (int tries = 0; tries < 20; ++tries) {
    made.info.code = random_chars(kCodeLength);
    SqliteStatement st;
    if (!prepare(db_, st,
                 "INSERT INTO classes (code, name, credential_hash, created_at, version) VALUES (?1, ?2, ?3, ?4, 0)",
                 {made.info.code, name, std::string(hash), made.info.created_at}))
      return tl::unexpected(sqlite_error("create the class"));
    int rc = sqlite3_step(st.stmt);
    if (rc == SQLITE_DONE) return made;
    if (rc != SQLITE_CONSTRAINT) return tl::unexpected(sqlite_error("create the class"));
    // the code was taken: draw another
  }
  return make_error(ErrorCode::unavailable, "Could not find a free class code; try again.");
}

Result<ClassInfo> ClassStore::find_class(const std::string& code) {
  std::lock_guard<std::mutex> lock(mutex_);
  SqliteStatement st;
  if (!prepare(db_, st, "SELECT code, name, created_at, version FROM classes WHERE code = ?1", {code}))
    return tl::unexpected(sqlite_error("read the class"));
  int rc = sqlite3_step(st.stmt);
  if (rc == SQLITE_DONE)
    return make_error(ErrorCode::not_found, "No class has the code '" + code.substr(0, 16) + "'. Check the code.");
  if (rc != SQLITE_ROW) return tl::unexpected(sqlite_error("read the class"));
  return ClassInfo{column_text(st.stmt, 0), column_text(st.stmt, 1), column_text(st.stmt, 2),
                   sqlite3_column_int64(st.stmt, 3)};
}

Result<std::vector<ClassInfo>> ClassStore::classes() {
  std::lock_guard<std::mutex> lock(mutex_);
  SqliteStatement st;
  if (!prepare(db_, st, "SELECT code, name, created_at, version FROM classes ORDER BY created_at, code", {}))
    return tl::unexpected(sqlite_error("list the classes"));
  std::vector<ClassInfo> out;
  int rc;
  while ((rc = sqlite3_step(st.stmt)) == SQLITE_ROW)
    out.push_back({column_text(st.stmt, 0), column_text(st.stmt, 1), column_text(st.stmt, 2),
                   sqlite3_column_int64(st.stmt, 3)});
  if (rc != SQLITE_DONE) return tl::unexpected(sqlite_error("list the classes"));
  return out;
}

Status ClassStore::delete_class(const std::string& code) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    Transaction tx(db_);
    if (!tx.started()) return tl::unexpected(sqlite_error("delete the class"));
    int deleted = 0;
    for (const char* sql : {"DELETE FROM class_attempts WHERE class_code = ?1", "DELETE FROM class_members WHERE class_code = ?1",
                            "DELETE FROM teacher_sessions WHERE class_code = ?1", "DELETE FROM classes WHERE code = ?1"}) {
      SqliteStatement st;
      if (!prepare(db_, st, sql, {code}) || sqlite3_step(st.stmt) != SQLITE_DONE)
        return tl::unexpected(sqlite_error("delete the class"));
      deleted = sqlite3_changes(db_);
    }
    if (deleted == 0) return make_error(ErrorCode::not_found, "No class has the code '" + code.substr(0, 16) + "'.");
    if (!tx.commit()) return tl::unexpected(sqlite_error("delete the class"));
    // The old pages may still sit in the write-ahead log: fold it into the file now.
    sqlite3_wal_checkpoint_v2(db_, nullptr, SQLITE_CHECKPOINT_TRUNCATE, nullptr, nullptr);
  }
  return {};
}

Result<ClassMember> ClassStore::join(const std::string& code, const std::string& learner, const std::string& raw_nickname) {
  std::string nickname = trim(raw_nickname);
  if (nickname.empty()) return make_error(ErrorCode::invalid_argument, "Choose a nickname (not your real name).");
  if (code_points(nickname) > 24 || has_control_characters(nickname))
    return make_error(ErrorCode::invalid_argument, "A nickname is at most 24 characters, without control characters.");
  std::lock_guard<std::mutex> lock(mutex_);
  Transaction tx(db_);
  if (!tx.started()) return tl::unexpected(sqlite_error("join the class"));
  {
    SqliteStatement st;
    if (!prepare(db_, st, "SELECT code FROM classes WHERE code = ?1", {code}))
      return tl::unexpected(sqlite_error("join the class"));
    int rc = sqlite3_step(st.stmt);
    if (rc == SQLITE_DONE)
      return make_error(ErrorCode::not_found, "No class has the code '" + code.substr(0, 16) + "'. Check the code.");
    if (rc != SQLITE_ROW) return tl::unexpected(sqlite_error("join the class"));
  }
  {
    SqliteStatement st;
    if (!prepare(db_, st, "SELECT class_code, nickname, joined_at FROM class_members WHERE learner = ?1", {learner}))
      return tl::unexpected(sqlite_error("join the class"));
    int rc = sqlite3_step(st.stmt);
    if (rc == SQLITE_ROW) {
      ClassMember m{learner, column_text(st.stmt, 1), column_text(st.stmt, 2)};
      if (column_text(st.stmt, 0) == code && ascii_lower(m.nickname) == ascii_lower(nickname)) return m;
      return make_error(ErrorCode::invalid_argument,
                        column_text(st.stmt, 0) == code
                            ? "You are in this class already, as " + m.nickname + "."
                            : "You are in another class already; leave it first.");
    }
    if (rc != SQLITE_DONE) return tl::unexpected(sqlite_error("join the class"));
  }
  ClassMember m{learner, nickname, now_iso()};
  SqliteStatement st;
  if (!prepare(db_, st,
               "INSERT INTO class_members (learner, class_code, nickname, nickname_key, joined_at) VALUES (?1, ?2, ?3, ?4, ?5)",
               {learner, code, nickname, ascii_lower(nickname), m.joined_at}))
    return tl::unexpected(sqlite_error("join the class"));
  int rc = sqlite3_step(st.stmt);
  if (rc == SQLITE_CONSTRAINT)
    return make_error(ErrorCode::invalid_argument, "Someone in this class is called " + nickname + " already; choose another nickname.");
  if (rc != SQLITE_DONE) return tl::unexpected(sqlite_error("join the class"));
  if (auto s = bump_version(code); !s) return tl::unexpected(s.error());
  if (!tx.commit()) return tl::unexpected(sqlite_error("join the class"));
  return m;
}

Result<std::optional<std::pair<ClassInfo, ClassMember>>> ClassStore::membership(const std::string& learner) {
  std::lock_guard<std::mutex> lock(mutex_);
  SqliteStatement st;
  if (!prepare(db_, st,
               "SELECT c.code, c.name, c.created_at, c.version, m.nickname, m.joined_at "
               "FROM class_members m JOIN classes c ON c.code = m.class_code WHERE m.learner = ?1",
               {learner}))
    return tl::unexpected(sqlite_error("read the class"));
  int rc = sqlite3_step(st.stmt);
  if (rc == SQLITE_DONE) return std::optional<std::pair<ClassInfo, ClassMember>>();
  if (rc != SQLITE_ROW) return tl::unexpected(sqlite_error("read the class"));
  ClassInfo c{column_text(st.stmt, 0), column_text(st.stmt, 1), column_text(st.stmt, 2), sqlite3_column_int64(st.stmt, 3)};
  ClassMember m{learner, column_text(st.stmt, 4), column_text(st.stmt, 5)};
  return std::optional<std::pair<ClassInfo, ClassMember>>(std::pair{std::move(c), std::move(m)});
}

Status ClassStore::leave(const std::string& learner) {
  std::lock_guard<std::mutex> lock(mutex_);
  Transaction tx(db_);
  if (!tx.started()) return tl::unexpected(sqlite_error("leave the class"));
  std::string code;
  {
    SqliteStatement st;
    if (!prepare(db_, st, "SELECT class_code FROM class_members WHERE learner = ?1", {learner}))
      return tl::unexpected(sqlite_error("leave the class"));
    int rc = sqlite3_step(st.stmt);
    if (rc == SQLITE_DONE) return make_error(ErrorCode::not_found, "You are not in a class.");
    if (rc != SQLITE_ROW) return tl::unexpected(sqlite_error("leave the class"));
    code = column_text(st.stmt, 0);
  }
  for (const char* sql : {"DELETE FROM class_attempts WHERE learner = ?1", "DELETE FROM class_members WHERE learner = ?1"}) {
    SqliteStatement st;
    if (!prepare(db_, st, sql, {learner}) || sqlite3_step(st.stmt) != SQLITE_DONE)
      return tl::unexpected(sqlite_error("leave the class"));
  }
  if (auto s = bump_version(code); !s) return s;
  if (!tx.commit()) return tl::unexpected(sqlite_error("leave the class"));
  return {};
}

Status ClassStore::remove_member(const std::string& code, const std::string& nickname) {
  std::lock_guard<std::mutex> lock(mutex_);
  Transaction tx(db_);
  if (!tx.started()) return tl::unexpected(sqlite_error("remove the learner"));
  std::string learner;
  {
    SqliteStatement st;
    if (!prepare(db_, st, "SELECT learner FROM class_members WHERE class_code = ?1 AND nickname_key = ?2",
                 {code, ascii_lower(trim(nickname))}))
      return tl::unexpected(sqlite_error("remove the learner"));
    int rc = sqlite3_step(st.stmt);
    if (rc == SQLITE_DONE)
      return make_error(ErrorCode::not_found, "Nobody in this class is called '" + nickname.substr(0, 32) + "'.");
    if (rc != SQLITE_ROW) return tl::unexpected(sqlite_error("remove the learner"));
    learner = column_text(st.stmt, 0);
  }
  for (const char* sql : {"DELETE FROM class_attempts WHERE learner = ?1", "DELETE FROM class_members WHERE learner = ?1"}) {
    SqliteStatement st;
    if (!prepare(db_, st, sql, {learner}) || sqlite3_step(st.stmt) != SQLITE_DONE)
      return tl::unexpected(sqlite_error("remove the learner"));
  }
  if (auto s = bump_version(code); !s) return s;
  if (!tx.commit()) return tl::unexpected(sqlite_error("remove the learner"));
  return {};
}

Result<std::vector<ClassMember>> ClassStore::members(const std::string& code) {
  std::lock_guard<std::mutex> lock(mutex_);
  SqliteStatement st;
  if (!prepare(db_, st,
               "SELECT learner, nickname, joined_at FROM class_members WHERE class_code = ?1 ORDER BY joined_at, nickname_key",
               {code}))
    return tl::unexpected(sqlite_error("read the class"));
  std::vector<ClassMember> out;
  int rc;
  while ((rc = sqlite3_step(st.stmt)) == SQLITE_ROW)
    out.push_back({column_text(st.stmt, 0), column_text(st.stmt, 1), column_text(st.stmt, 2)});
  if (rc != SQLITE_DONE) return tl::unexpected(sqlite_error("read the class"));
  return out;
}

Status ClassStore::record_attempt(const std::string& learner, const std::string& lesson, const std::string& challenge,
                                  bool passed, const std::string& answer) {
  std::lock_guard<std::mutex> lock(mutex_);
  Transaction tx(db_);
  if (!tx.started()) return tl::unexpected(sqlite_error("record the check"));
  std::string code;
  {
    SqliteStatement st;
    if (!prepare(db_, st, "SELECT class_code FROM class_members WHERE learner = ?1", {learner}))
      return tl::unexpected(sqlite_error("record the check"));
    int rc = sqlite3_step(st.stmt);
    if (rc == SQLITE_DONE) return {};  // in no class: nothing to keep
    if (rc != SQLITE_ROW) return tl::unexpected(sqlite_error("record the check"));
    code = column_text(st.stmt, 0);
  }
  SqliteStatement st;
  if (!prepare(db_, st,
               "INSERT INTO class_attempts (class_code, learner, lesson, challenge, passed, answer, at) "
               "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
               {code, learner, lesson, challenge, passed, answer.substr(0, 200), now_iso()}) ||
      sqlite3_step(st.stmt) != SQLITE_DONE)
    return tl::unexpected(sqlite_error("record the check"));
  if (auto s = bump_version(code); !s) return s;
  if (!tx.commit()) return tl::unexpected(sqlite_error("record the check"));
  return {};
}

Result<std::vector<Attempt>> ClassStore::attempts(const std::string& code) {
  std::lock_guard<std::mutex> lock(mutex_);
  SqliteStatement st;
  if (!prepare(db_, st,
               "SELECT learner, lesson, challenge, passed, answer, at FROM class_attempts WHERE class_code = ?1 ORDER BY at",
               {code}))
    return tl::unexpected(sqlite_error("read the class"));
  std::vector<Attempt> out;
  int rc;
  while ((rc = sqlite3_step(st.stmt)) == SQLITE_ROW)
    out.push_back({column_text(st.stmt, 0), column_text(st.stmt, 1), column_text(st.stmt, 2),
                   sqlite3_column_int64(st.stmt, 3) != 0, column_text(st.stmt, 4), column_text(st.stmt, 5)});
  if (rc != SQLITE_DONE) return tl::unexpected(sqlite_error("read the class"));
  return out;
}

Result<bool> ClassStore::verify_teacher(const std::string& code, const std::string& secret) {
  std::string hash;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    SqliteStatement st;
    if (!prepare(db_, st, "SELECT credential_hash FROM classes WHERE code = ?1", {code}))
      return tl::unexpected(sqlite_error("check the teacher's secret"));
    int rc = sqlite3_step(st.stmt);
    if (rc == SQLITE_DONE) return false;
    if (rc != SQLITE_ROW) return tl::unexpected(sqlite_error("check the teacher's secret"));
    hash = column_text(st.stmt, 0);
  }
  // Outside the lock: Argon2id takes a tenth of a second on purpose.
  return crypto_pwhash_str_verify(hash.c_str(), secret.data(), secret.size()) == 0;
}

Result<TeacherSession> ClassStore::open_session(const std::string& code) {
  unsigned char raw[32];
  randombytes_buf(raw, sizeof raw);
  TeacherSession s{hex(raw, sizeof raw), now_ms() / 1000 + options_.session_seconds};
  std::lock_guard<std::mutex> lock(mutex_);
  Transaction tx(db_);
  if (!tx.started()) return tl::unexpected(sqlite_error("open a teacher session"));
  {
    SqliteStatement st;
    if (!prepare(db_, st, "DELETE FROM teacher_sessions WHERE expires_at <= ?1", {now_ms() / 1000}) ||
        sqlite3_step(st.stmt) != SQLITE_DONE)
      return tl::unexpected(sqlite_error("open a teacher session"));
  }
  SqliteStatement st;
  if (!prepare(db_, st, "INSERT INTO teacher_sessions (token_hash, class_code, expires_at) VALUES (?1, ?2, ?3)",
               {token_hash(s.token), code, s.expires_at}) ||
      sqlite3_step(st.stmt) != SQLITE_DONE)
    return tl::unexpected(sqlite_error("open a teacher session"));
  if (!tx.commit()) return tl::unexpected(sqlite_error("open a teacher session"));
  return s;
}

Result<std::string> ClassStore::session_class(const std::string& token) {
  const Error none{ErrorCode::unauthorized, "Log in as the class's teacher first (your session may have expired)."};
  if (token.empty()) return tl::unexpected(none);
  std::lock_guard<std::mutex> lock(mutex_);
  SqliteStatement st;
  if (!prepare(db_, st, "SELECT class_code FROM teacher_sessions WHERE token_hash = ?1 AND expires_at > ?2",
               {token_hash(token), now_ms() / 1000}))
    return tl::unexpected(sqlite_error("check the teacher session"));
  int rc = sqlite3_step(st.stmt);
  if (rc == SQLITE_DONE) return tl::unexpected(none);
  if (rc != SQLITE_ROW) return tl::unexpected(sqlite_error("check the teacher session"));
  return column_text(st.stmt, 0);
}

Status ClassStore::close_session(const std::string& token) {
  std::lock_guard<std::mutex> lock(mutex_);
  SqliteStatement st;
  if (!prepare(db_, st, "DELETE FROM teacher_sessions WHERE token_hash = ?1", {token_hash(token)}) ||
      sqlite3_step(st.stmt) != SQLITE_DONE)
    return tl::unexpected(sqlite_error("end the teacher session"));
  return {};
}

}  // namespace headlab::server
