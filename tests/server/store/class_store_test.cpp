// ClassStore: classes, learners by nickname, hashed credentials, expiring sessions,
// attempts, and deletions that really delete — on both engines: SQLite (always) and
// PostgreSQL (the cluster HEADLAB_TEST_POSTGRES_URL names; skipped, saying so, without one).
#include "server/store/class_store.h"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <chrono>
#include <fstream>
#include <iterator>
#include <thread>

#include "server/store/database.h"
#include "server/store/migrations.h"
#include "server/store/schema.h"
#include "server/api/handlers/class_handlers.h"
#include "server/store/progress_store.h"
#include "server/store/store_testing.h"
#include "testing/test_server.h"

using namespace headlab;
using namespace headlab::server;
using headlab::testing::StoreDatabase;
using headlab::testing::temp_path;

namespace {

class ClassStoreOn : public ::testing::TestWithParam<db::Engine> {};

std::string engine_label(const ::testing::TestParamInfo<db::Engine>& info) {
  return info.param == db::Engine::sqlite ? "SQLite" : "PostgreSQL";
}

ClassStoreOptions test_options(std::shared_ptr<std::atomic<std::int64_t>> now) {
  ClassStoreOptions o;
  o.fast_hash_for_tests = true;
  o.session_seconds = 3600;
  o.clock = [now] { return now->load(); };
  return o;
}

// A fresh database on the test's engine and a store on it, with a clock the test moves.
struct Fixture {
  StoreDatabase fresh;
  std::string path;  // the target: an SQLite path or a PostgreSQL URL
  std::shared_ptr<std::atomic<std::int64_t>> now = std::make_shared<std::atomic<std::int64_t>>(1'800'000'000'000);
  std::unique_ptr<ClassStore> store;
  explicit Fixture(db::Engine engine) : fresh(engine), path(fresh.target()) {
    if (!fresh.available()) return;
    auto s = ClassStore::open(path, test_options(now));
    if (!s) throw std::runtime_error(s.error().message);
    store = std::move(*s);
  }
  bool sqlite() const { return fresh.engine() == db::Engine::sqlite; }
  ClassInfo make(const std::string& name = "Period 3") {
    auto c = store->create_class(name, "");
    if (!c) throw std::runtime_error(c.error().message);
    return c->info;
  }
};

#define CLASS_FIXTURE(f)          \
  Fixture f(GetParam());          \
  HEADLAB_REQUIRE_DATABASE(f.fresh)

// Every byte of an SQLite database file and its write-ahead log.
std::string file_bytes(const std::string& path) {
  std::string out;
  for (const std::string& p : {path, path + "-wal"}) {
    std::ifstream f(p, std::ios::binary);
    out.append(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  }
  return out;
}

// The first cell of `sql`'s first row, read on a connection of its own (not the store's).
std::string one_text(const std::string& target, const std::string& sql) {
  auto db = db::Database::open(target);
  if (!db) return "cannot open: " + db.error().message;
  auto rows = (*db)->query(sql);
  if (!rows) return "cannot read: " + rows.error().message;
  return rows->empty() ? "" : rows->front().text(0);
}

std::int64_t count_rows(const std::string& target, const std::string& table) {
  return std::stoll("0" + one_text(target, "SELECT COUNT(*) FROM " + table));
}

// PostgreSQL: whether `table` has been vacuumed by hand (not autovacuum) since the database
// was made. Vacuum statistics reach the shared counters at once from PostgreSQL 15; an older
// server sends them a moment later, hence the short wait.
bool vacuumed(const std::string& target, const std::string& table) {
  for (int i = 0; i < 40; ++i) {
    if (std::stoll("0" + one_text(target, "SELECT vacuum_count FROM pg_stat_user_tables WHERE relname = '" + table + "'")) > 0)
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

// PostgreSQL: how many files of the class tables (the tables, their indexes and TOAST) hold
// `text`, after a CHECKPOINT wrote the shared buffers out; read by the server itself
// (pg_read_binary_file, a superuser's right). -1 when it may not.
int pg_files_holding(const std::string& target, const std::string& text) {
  auto db = db::Database::open(target);
  if (!db || !(*db)->exec("CHECKPOINT")) return -1;
  auto rows = (*db)->query(
      "WITH t AS (SELECT oid, reltoastrelid FROM pg_class WHERE relnamespace = 'public'::regnamespace AND relname IN "
      "('classes', 'class_members', 'class_attempts', 'teacher_sessions', 'class_bans')), "
      "rel AS (SELECT oid FROM t UNION SELECT indexrelid FROM pg_index WHERE indrelid IN (SELECT oid FROM t) "
      "UNION SELECT reltoastrelid FROM t WHERE reltoastrelid <> 0) "
      "SELECT COUNT(*) FROM rel WHERE position(convert_to($1, 'UTF8') IN pg_read_binary_file(pg_relation_filepath(oid))) > 0",
      {text});
  if (!rows) return -1;
  return static_cast<int>(rows->front().integer(0));
}

}  // namespace

TEST_P(ClassStoreOn, CreatesAClassWithASixCharacterCodeAndASecretShownOnce) {
  CLASS_FIXTURE(f);
  auto c = f.store->create_class("  Period 3 ", "");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->info.name, "Period 3");
  EXPECT_EQ(c->info.code.size(), 6u);
  EXPECT_EQ(c->secret.size(), 23u);  // four groups of five, dashes between
  auto found = f.store->find_class(c->info.code);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->name, "Period 3");
  EXPECT_EQ(found->created_at, "2027-01-15T08:00:00.000Z");
}

TEST_P(ClassStoreOn, KeepsOnlyAnArgon2idHashOfTheSecret) {
  CLASS_FIXTURE(f);
  auto c = f.store->create_class("Period 3", "");
  ASSERT_TRUE(c);
  EXPECT_EQ(one_text(f.path, "SELECT credential_hash FROM classes").rfind("$argon2id$", 0), 0u);
  if (f.sqlite()) EXPECT_EQ(file_bytes(f.path).find(c->secret), std::string::npos);
}

TEST_P(ClassStoreOn, VerifiesTheSecretOrThePassphraseAndNothingElse) {
  CLASS_FIXTURE(f);
  auto made = f.store->create_class("Period 3", "");
  auto with_pass = f.store->create_class("Period 4", "correct horse battery");
  ASSERT_TRUE(made && with_pass);
  EXPECT_TRUE(with_pass->secret.empty());
  EXPECT_TRUE(*f.store->verify_teacher(made->info.code, made->secret));
  EXPECT_FALSE(*f.store->verify_teacher(made->info.code, made->secret + "x"));
  EXPECT_TRUE(*f.store->verify_teacher(with_pass->info.code, "correct horse battery"));
  EXPECT_FALSE(*f.store->verify_teacher(with_pass->info.code, made->secret));
  EXPECT_FALSE(*f.store->verify_teacher(made->info.code, "correct horse battery"));
  EXPECT_FALSE(*f.store->verify_teacher("NOSUCH", made->secret));
}

TEST_P(ClassStoreOn, RefusesAnEmptyNameAndAShortPassphrase) {
  CLASS_FIXTURE(f);
  EXPECT_EQ(f.store->create_class("   ", "").error().code, ErrorCode::invalid_argument);
  EXPECT_EQ(f.store->create_class(std::string(81, 'a'), "").error().code, ErrorCode::invalid_argument);
  EXPECT_EQ(f.store->create_class("Period\x1b[2J", "").error().code, ErrorCode::invalid_argument);
  EXPECT_EQ(f.store->create_class("Period 3", "short").error().code, ErrorCode::invalid_argument);
}

// A class name is shown to every learner who joins: a direction control (U+202E turns the text
// after it around) and bytes that are not UTF-8 are refused by name; emoji and other alphabets
// are names like any other.
TEST_P(ClassStoreOn, RefusesADirectionControlOrBrokenUtf8InAClassNameSayingWhich) {
  CLASS_FIXTURE(f);
  auto rlo = f.store->create_class("\u202e3 doirep", "");
  ASSERT_FALSE(rlo);
  EXPECT_NE(rlo.error().message.find("U+202E"), std::string::npos) << rlo.error().message;
  auto broken = f.store->create_class("a\xff" "b", "");
  ASSERT_FALSE(broken);
  EXPECT_NE(broken.error().message.find("not valid UTF-8"), std::string::npos) << broken.error().message;
  EXPECT_TRUE(f.store->create_class("Klasse 7b \u00e9\u00e8 \u0424\u0438\u0437\u0438\u043a\u0430 \U0001F469\u200D\U0001F4BB", ""));
}

TEST_P(ClassStoreOn, NicknamesAreUniqueInAClassIgnoringCase) {
  CLASS_FIXTURE(f);
  ClassInfo a = f.make("A"), b = f.make("B");
  ASSERT_TRUE(f.store->join(a.code, "learner-0001", "Ada"));
  auto taken = f.store->join(a.code, "learner-0002", "ada");
  ASSERT_FALSE(taken);
  EXPECT_EQ(taken.error().code, ErrorCode::invalid_argument);
  EXPECT_NE(taken.error().message.find("choose another nickname"), std::string::npos);
  EXPECT_TRUE(f.store->join(b.code, "learner-0002", "Ada"));  // another class: free
}

TEST_P(ClassStoreOn, RefusesABadNicknameAndAnUnknownCode) {
  CLASS_FIXTURE(f);
  ClassInfo a = f.make();
  EXPECT_EQ(f.store->join(a.code, "learner-0001", "  ").error().code, ErrorCode::invalid_argument);
  EXPECT_EQ(f.store->join(a.code, "learner-0001", std::string(25, 'x')).error().code, ErrorCode::invalid_argument);
  EXPECT_EQ(f.store->join(a.code, "learner-0001", "A\nB").error().code, ErrorCode::invalid_argument);
  EXPECT_EQ(f.store->join("NOSUCH", "learner-0001", "Ada").error().code, ErrorCode::not_found);
}

TEST_P(ClassStoreOn, ALearnerIsInOneClassAtATime) {
  CLASS_FIXTURE(f);
  ClassInfo a = f.make("A"), b = f.make("B");
  ASSERT_TRUE(f.store->join(a.code, "learner-0001", "Ada"));
  EXPECT_TRUE(f.store->join(a.code, "learner-0001", "ADA"));  // the same again: as it is
  auto other = f.store->join(b.code, "learner-0001", "Ada");
  ASSERT_FALSE(other);
  EXPECT_NE(other.error().message.find("leave it first"), std::string::npos);
  auto m = f.store->membership("learner-0001");
  ASSERT_TRUE(m && *m);
  EXPECT_EQ((*m)->first.code, a.code);
  EXPECT_EQ((*m)->second.nickname, "Ada");
}

TEST_P(ClassStoreOn, KeepsNoAttemptsOfALearnerInNoClass) {
  CLASS_FIXTURE(f);
  ClassInfo a = f.make();
  ASSERT_TRUE(f.store->record_attempt("learner-0001", "trained-heads", "pattern-quiz", false, "uniform"));
  EXPECT_EQ(count_rows(f.path, "class_attempts"), 0);
  ASSERT_TRUE(f.store->join(a.code, "learner-0001", "Ada"));
  ASSERT_TRUE(f.store->record_attempt("learner-0001", "trained-heads", "pattern-quiz", false, "uniform"));
  auto attempts = f.store->attempts(a.code);
  ASSERT_EQ(attempts->size(), 1u);
  EXPECT_EQ((*attempts)[0].answer, "uniform");
  EXPECT_FALSE((*attempts)[0].passed);
}

TEST_P(ClassStoreOn, LeavingDeletesTheLearnersAttemptsOnly) {
  CLASS_FIXTURE(f);
  ClassInfo a = f.make();
  f.store->join(a.code, "learner-0001", "Ada");
  f.store->join(a.code, "learner-0002", "Bo");
  f.store->record_attempt("learner-0001", "trained-heads", "pattern-quiz", true, "below-diagonal");
  f.store->record_attempt("learner-0002", "trained-heads", "pattern-quiz", true, "below-diagonal");
  ASSERT_TRUE(f.store->leave("learner-0001"));
  EXPECT_EQ(f.store->leave("learner-0001").error().code, ErrorCode::not_found);
  EXPECT_FALSE(*f.store->membership("learner-0001"));
  EXPECT_EQ(f.store->attempts(a.code)->size(), 1u);
  EXPECT_EQ(f.store->members(a.code)->size(), 1u);
}

TEST_P(ClassStoreOn, RemovingALearnerByNicknameDeletesTheirAttempts) {
  CLASS_FIXTURE(f);
  ClassInfo a = f.make();
  f.store->join(a.code, "learner-0001", "Ada");
  f.store->record_attempt("learner-0001", "trained-heads", "pattern-quiz", true, "below-diagonal");
  ASSERT_TRUE(f.store->remove_member(a.code, "ada"));
  EXPECT_TRUE(f.store->attempts(a.code)->empty());
  EXPECT_EQ(f.store->remove_member(a.code, "Ada").error().code, ErrorCode::not_found);
}

TEST_P(ClassStoreOn, ARemovedLearnerIsKeptOutUntilTheTeacherLetsThemBackIn) {
  CLASS_FIXTURE(f);
  ClassInfo a = f.make("A"), b = f.make("B");
  ASSERT_TRUE(f.store->join(a.code, "learner-0001", "Ada"));
  ASSERT_TRUE(f.store->remove_member(a.code, "ADA"));
  auto again = f.store->join(a.code, "learner-0001", "Ada");
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, ErrorCode::forbidden);
  EXPECT_NE(again.error().message.find("let you back in"), std::string::npos) << again.error().message;
  EXPECT_EQ(f.store->join(a.code, "learner-0001", "Bea").error().code, ErrorCode::forbidden);  // same browser
  EXPECT_EQ(f.store->join(a.code, "learner-0002", "ada").error().code, ErrorCode::forbidden);  // same name
  EXPECT_TRUE(f.store->join(b.code, "learner-0001", "Ada"));  // another class: free
  ASSERT_TRUE(f.store->leave("learner-0001"));
  auto banned = f.store->banned(a.code);
  ASSERT_TRUE(banned);
  ASSERT_EQ(banned->size(), 1u);
  EXPECT_EQ((*banned)[0].nickname, "Ada");
  ASSERT_TRUE(f.store->unban_member(a.code, "ada"));
  EXPECT_TRUE(f.store->banned(a.code)->empty());
  EXPECT_TRUE(f.store->join(a.code, "learner-0001", "Ada"));
  EXPECT_EQ(f.store->unban_member(a.code, "Ada").error().code, ErrorCode::not_found);
}

TEST_P(ClassStoreOn, ARetriedCheckWithTheSameRequestIdIsRecordedOnce) {
  CLASS_FIXTURE(f);
  ClassInfo a = f.make();
  ASSERT_TRUE(f.store->join(a.code, "learner-0001", "Ada"));
  ASSERT_TRUE(f.store->join(a.code, "learner-0002", "Bo"));
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(f.store->record_attempt("learner-0001", "trained-heads", "pattern-quiz", false, "uniform", "req-1"));
  const std::int64_t version = f.store->find_class(a.code)->version;
  ASSERT_TRUE(f.store->record_attempt("learner-0001", "trained-heads", "pattern-quiz", false, "uniform", "req-1"));
  EXPECT_EQ(f.store->find_class(a.code)->version, version) << "a retry changes nothing";
  // another id, another learner with the same id, and checks without one all count
  ASSERT_TRUE(f.store->record_attempt("learner-0001", "trained-heads", "pattern-quiz", false, "uniform", "req-2"));
  ASSERT_TRUE(f.store->record_attempt("learner-0002", "trained-heads", "pattern-quiz", false, "uniform", "req-1"));
  ASSERT_TRUE(f.store->record_attempt("learner-0001", "trained-heads", "pattern-quiz", false, "uniform"));
  ASSERT_TRUE(f.store->record_attempt("learner-0001", "trained-heads", "pattern-quiz", false, "uniform"));
  EXPECT_EQ(f.store->attempts(a.code)->size(), 5u);
}

TEST_P(ClassStoreOn, NicknamesAreUniqueByTheirNfkcCaseFoldedForm) {
  CLASS_FIXTURE(f);
  ClassInfo a = f.make();
  auto wide = f.store->join(a.code, "learner-0001", "\xEF\xBC\xA1\xEF\xBD\x84\xEF\xBD\x81");  // Ａｄａ
  ASSERT_TRUE(wide) << wide.error().message;
  EXPECT_EQ(wide->nickname, "Ada");
  EXPECT_EQ(f.store->join(a.code, "learner-0002", "ADA").error().code, ErrorCode::invalid_argument);
  ASSERT_TRUE(f.store->join(a.code, "learner-0003", "\xC3\x89mile"));             // Émile
  EXPECT_FALSE(f.store->join(a.code, "learner-0004", "\xC3\xA9MILE"));            // éMILE
  EXPECT_FALSE(f.store->join(a.code, "learner-0004", "E\xCC\x81mile"));           // E + combining acute
}

TEST_P(ClassStoreOn, RefusesInvisibleAndMixedAlphabetNicknamesSayingWhichCharacter) {
  CLASS_FIXTURE(f);
  ClassInfo a = f.make();
  ASSERT_TRUE(f.store->join(a.code, "learner-0001", "Ada"));
  auto zw = f.store->join(a.code, "learner-0002", "Ada\xE2\x80\x8B");
  ASSERT_FALSE(zw);
  EXPECT_EQ(zw.error().code, ErrorCode::invalid_argument);
  EXPECT_NE(zw.error().message.find("U+200B"), std::string::npos) << zw.error().message;
  auto cyr = f.store->join(a.code, "learner-0002", "\xD0\x90" "da");  // Cyrillic А, then "da"
  ASSERT_FALSE(cyr);
  EXPECT_NE(cyr.error().message.find("Cyrillic"), std::string::npos) << cyr.error().message;
  EXPECT_EQ(f.store->join(a.code, "learner-0002", "A\xC2\x9B" "da").error().code, ErrorCode::invalid_argument);
  EXPECT_EQ(f.store->members(a.code)->size(), 1u);
}

TEST_P(ClassStoreOn, DeletingAClassLeavesNoTraceOfItInTheFile) {
  CLASS_FIXTURE(f);
  ClassInfo a = f.make("Deleted class"), keep = f.make("Kept class");
  f.store->join(a.code, "learner-0001", "Zanzibar-nick");
  f.store->join(keep.code, "learner-0002", "Bo");
  f.store->record_attempt("learner-0001", "trained-heads", "pattern-quiz", false, "first-column-answer");
  ASSERT_TRUE(f.store->join(a.code, "learner-0003", "Removed-nick"));
  ASSERT_TRUE(f.store->remove_member(a.code, "Removed-nick"));  // a ban row, with the nickname
  ASSERT_TRUE(f.store->open_session(a.code));
  ASSERT_TRUE(f.store->delete_class(a.code));
  EXPECT_EQ(f.store->find_class(a.code).error().code, ErrorCode::not_found);
  EXPECT_EQ(f.store->delete_class(a.code).error().code, ErrorCode::not_found);
  EXPECT_EQ(count_rows(f.path, "classes"), 1);
  EXPECT_EQ(count_rows(f.path, "class_members"), 1);
  EXPECT_EQ(count_rows(f.path, "class_attempts"), 0);
  EXPECT_EQ(count_rows(f.path, "teacher_sessions"), 0);
  EXPECT_EQ(count_rows(f.path, "class_bans"), 0);
  // PostgreSQL: the committed DELETE is the guarantee (the rows above), and the class tables
  // were vacuumed after it (class_store.h; see the next test for the bytes). SQLite: the bytes
  // themselves are gone from the file and its log.
  if (!f.sqlite()) {
    for (const char* table : {"classes", "class_members", "class_attempts", "teacher_sessions", "class_bans"})
      EXPECT_TRUE(vacuumed(f.path, table)) << table << " was not vacuumed after the delete";
    return;
  }
  const std::string bytes = file_bytes(f.path);
  EXPECT_EQ(bytes.find("Zanzibar-nick"), std::string::npos);
  EXPECT_EQ(bytes.find("Removed-nick"), std::string::npos);
  EXPECT_EQ(bytes.find("first-column-answer"), std::string::npos);
  EXPECT_EQ(bytes.find("Deleted class"), std::string::npos);
  EXPECT_NE(bytes.find("Kept class"), std::string::npos);
}

// What docs/school.md tells a PostgreSQL operator to run so a deleted class's bytes leave the
// table files too (a plain VACUUM frees the space, but old bytes can stay in it until new rows
// land there): VACUUM FULL of the class tables rewrites them and their indexes.
TEST(ClassStorePostgres, TheOperatorsVacuumFullLeavesNoByteOfADeletedClassInTheTableFiles) {
  Fixture f(db::Engine::postgresql);
  HEADLAB_REQUIRE_DATABASE(f.fresh);
  ClassInfo a = f.make("Deleted class"), keep = f.make("Kept class");
  f.store->join(a.code, "learner-0001", "Zanzibar-nick");
  f.store->join(keep.code, "learner-0002", "Bo");
  f.store->record_attempt("learner-0001", "trained-heads", "pattern-quiz", false, "first-column-answer");
  ASSERT_TRUE(f.store->join(a.code, "learner-0003", "Removed-nick"));
  ASSERT_TRUE(f.store->remove_member(a.code, "Removed-nick"));
  const int before = pg_files_holding(f.path, "anzibar-nick");
  if (before < 0) GTEST_SKIP() << "this PostgreSQL does not let the test user read its files (pg_read_binary_file)";
  ASSERT_GE(before, 1) << "the check must see the nickname in the files before the delete";
  ASSERT_TRUE(f.store->delete_class(a.code));
  auto db = db::Database::open(f.path);
  ASSERT_TRUE(db);
  ASSERT_TRUE((*db)->exec("VACUUM FULL classes, class_members, class_attempts, teacher_sessions, class_bans"));
  EXPECT_EQ(pg_files_holding(f.path, "anzibar-nick"), 0);
  EXPECT_EQ(pg_files_holding(f.path, "emoved-nick"), 0);
  EXPECT_EQ(pg_files_holding(f.path, "first-column-answer"), 0);
  EXPECT_EQ(pg_files_holding(f.path, "Deleted class"), 0);
  EXPECT_GE(pg_files_holding(f.path, "Kept class"), 1);
}

TEST_P(ClassStoreOn, SessionsExpireAndTheirTokensAreStoredOnlyHashed) {
  CLASS_FIXTURE(f);
  ClassInfo a = f.make();
  auto s = f.store->open_session(a.code);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->token.size(), 64u);
  EXPECT_EQ(*f.store->session_class(s->token), a.code);
  EXPECT_EQ(count_rows(f.path, "teacher_sessions WHERE token_hash = '" + s->token + "'"), 0);
  if (f.sqlite()) EXPECT_EQ(file_bytes(f.path).find(s->token), std::string::npos);
  *f.now += 3600 * 1000 - 1000;
  EXPECT_TRUE(f.store->session_class(s->token));
  *f.now += 1000;
  EXPECT_EQ(f.store->session_class(s->token).error().code, ErrorCode::unauthorized);
  EXPECT_EQ(f.store->session_class("").error().code, ErrorCode::unauthorized);
  EXPECT_EQ(f.store->session_class("learner-0001").error().code, ErrorCode::unauthorized);
}

TEST_P(ClassStoreOn, ClosingASessionEndsItAtOnce) {
  CLASS_FIXTURE(f);
  ClassInfo a = f.make();
  auto s = f.store->open_session(a.code);
  ASSERT_TRUE(f.store->close_session(s->token));
  EXPECT_EQ(f.store->session_class(s->token).error().code, ErrorCode::unauthorized);
}

TEST_P(ClassStoreOn, EveryChangeToAClassRaisesItsVersion) {
  CLASS_FIXTURE(f);
  ClassInfo a = f.make();
  auto version = [&] { return f.store->find_class(a.code)->version; };
  EXPECT_EQ(version(), 0);
  f.store->join(a.code, "learner-0001", "Ada");
  EXPECT_EQ(version(), 1);
  f.store->record_attempt("learner-0001", "trained-heads", "pattern-quiz", false, "uniform");
  EXPECT_EQ(version(), 2);
  f.store->join(a.code, "learner-0002", "Bo");
  f.store->leave("learner-0002");
  EXPECT_EQ(version(), 4);
  f.store->remove_member(a.code, "Ada");
  EXPECT_EQ(version(), 5);
}

TEST_P(ClassStoreOn, KeepsClassesAcrossReopening) {
  StoreDatabase fresh(GetParam());
  HEADLAB_REQUIRE_DATABASE(fresh);
  const std::string path = fresh.target();
  std::string code, secret;
  {
    ClassStoreOptions o;
    o.fast_hash_for_tests = true;
    auto s = ClassStore::open(path, o);
    ASSERT_TRUE(s) << s.error().message;
    auto c = (*s)->create_class("Period 3", "");
    code = c->info.code;
    secret = c->secret;
    (*s)->join(code, "learner-0001", "Ada");
  }
  auto s = ClassStore::open(path);
  ASSERT_TRUE(s);
  EXPECT_TRUE(*(*s)->verify_teacher(code, secret));
  EXPECT_EQ((*s)->members(code)->size(), 1u);
}

// Issue 24: keys stored before nicknames were NFKC case-folded (the ASCII lower case of the
// text) let a new join take a member's name ("Ａｄａ" kept "ａｄａ"; "Ada" then joined). Opening the
// store recomputes them; two that now collide both stay, the later one's key marked, and
// neither name can be joined again.
TEST_P(ClassStoreOn, OpeningRekeysNicknamesStoredBeforeNfkcKeepingBothOfAClash) {
  StoreDatabase fresh(GetParam());
  HEADLAB_REQUIRE_DATABASE(fresh);
  const std::string path = fresh.target();
  ClassStoreOptions o;
  o.fast_hash_for_tests = true;
  std::string code;
  {
    auto s = ClassStore::open(path, o);
    ASSERT_TRUE(s) << s.error().message;
    code = (*s)->create_class("Period 3", "")->info.code;
    ASSERT_TRUE((*s)->join(code, "learner-0001", "Ada"));
    ASSERT_TRUE((*s)->join(code, "learner-0002", "Ada2"));
    ASSERT_TRUE((*s)->join(code, "learner-0003", "Grace"));
    ASSERT_TRUE((*s)->record_attempt("learner-0002", "causal-mask", "pattern-quiz", false, "x"));
    ASSERT_TRUE((*s)->remove_member(code, "Grace"));
  }
  {  // as the old code stored them: learner-0001 joined first as "ａｄａ" (fullwidth, kept as
     // typed, keyed by its ASCII lower case), learner-0002 later as "Ada"; a ban keyed so too
    auto db = db::Database::open(path);
    ASSERT_TRUE(db);
    const std::string wide = "\xEF\xBD\x81\xEF\xBD\x84\xEF\xBD\x81";  // ａｄａ
    ASSERT_TRUE((*db)->exec("UPDATE class_members SET nickname = $1, nickname_key = $1 WHERE learner = 'learner-0001'",
                            {wide}));
    ASSERT_TRUE((*db)->exec("UPDATE class_members SET nickname = 'Ada', nickname_key = 'ada' WHERE learner = 'learner-0002'"));
    ASSERT_TRUE((*db)->exec("UPDATE class_bans SET nickname = 'GRACE', nickname_key = 'GRACE'"));
  }
  auto s = ClassStore::open(path, o);
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ((*s)->nickname_rekey().rekeyed, 2);
  EXPECT_EQ((*s)->nickname_rekey().marked, 1);
  EXPECT_EQ((*s)->nickname_rekey().bans, 1);
  EXPECT_EQ(one_text(path, "SELECT nickname_key FROM class_members WHERE learner = 'learner-0001'"), "ada");
  EXPECT_EQ(one_text(path, "SELECT nickname_key FROM class_members WHERE learner = 'learner-0002'"), "ada\x1f" "1");
  auto members = (*s)->members(code);
  ASSERT_TRUE(members);
  EXPECT_EQ(members->size(), 2u) << "no member lost";
  EXPECT_EQ(count_rows(path, "class_attempts"), 1) << "the later one keeps its attempts";
  EXPECT_EQ((*s)->join(code, "learner-0009", "ADA").error().code, ErrorCode::invalid_argument) << "the name stays taken";
  EXPECT_EQ((*s)->join(code, "learner-0009", "grace").error().code, ErrorCode::forbidden) << "the ban holds by its new key";
  // A removal by the name takes the first, then the marked one.
  ASSERT_TRUE((*s)->remove_member(code, "Ada"));
  ASSERT_TRUE((*s)->remove_member(code, "Ada"));
  EXPECT_EQ((*s)->members(code)->size(), 0u);
  // Opening again finds nothing to do.
  auto again = ClassStore::open(path, o);
  ASSERT_TRUE(again);
  EXPECT_EQ((*again)->nickname_rekey().rekeyed + (*again)->nickname_rekey().bans, 0);
}

INSTANTIATE_TEST_SUITE_P(BothEngines, ClassStoreOn, ::testing::Values(db::Engine::sqlite, db::Engine::postgresql),
                         engine_label);

// A file the class code made before its tables were migration 2, committed as that code's
// binary wrote it (tests/server/store/class_fixture_make.sh says how): with no migrations at all
// (before_migrations) or with migration 1 applied (migration_1). It opens, keeps its class,
// learner, checks and progress, takes new ones, and ends at the newest schema version.
void expect_old_class_file_opens(const std::string& fixture, int version_before) {
  const std::string path = temp_path("old-classes.db");
  std::filesystem::copy_file(HEADLAB_SOURCE_DIR "/tests/server/store/" + fixture, path);
  {
    auto db = db::Database::open(path);
    ASSERT_TRUE(db);
    EXPECT_EQ(*db::schema_version(**db), version_before) << fixture;
  }
  auto store = ClassStore::open(path, test_options(std::make_shared<std::atomic<std::int64_t>>(1'800'000'000'000)));
  ASSERT_TRUE(store) << store.error().message;
  auto all = (*store)->classes();
  ASSERT_TRUE(all);
  ASSERT_EQ(all->size(), 1u);
  const ClassInfo old = all->front();
  EXPECT_EQ(old.name, "Old class");
  EXPECT_EQ(old.version, 3);  // the join, the wrong answer, the induction challenge
  EXPECT_TRUE(*(*store)->verify_teacher(old.code, "old passphrase 1234")) << "its Argon2id hash still verifies";
  EXPECT_FALSE(*(*store)->verify_teacher(old.code, "old passphrase 12345"));
  ASSERT_EQ((*store)->members(old.code)->size(), 1u);
  EXPECT_EQ((*store)->members(old.code)->front().nickname, "Ada");
  EXPECT_EQ((*store)->attempts(old.code)->size(), 2u);
  auto view = build_class_view(**store, old.code);
  ASSERT_TRUE(view);
  for (const LearnerLessonRow& l : view->learners.at(0).lessons)
    for (const ChallengeCell& c : l.challenges) {
      if (c.challenge == "pattern-quiz") {
        EXPECT_FALSE(c.done);
        EXPECT_EQ(c.tries, 1);
      }
      if (c.challenge == "induction-next-word") {
        EXPECT_TRUE(c.done);
      }
    }
  // new checks go in, and the one already passed is not noted twice (migration 3's index)
  ASSERT_TRUE((*store)->record_attempt("learner-old-1", "trained-heads", "pattern-quiz", true, "below-diagonal"));
  ASSERT_TRUE((*store)->record_passes("learner-old-1", "causal-mask", {"induction-next-word"}));
  EXPECT_EQ((*store)->attempts(old.code)->size(), 3u);
  auto db = db::Database::open(path);
  ASSERT_TRUE(db);
  EXPECT_EQ(*db::schema_version(**db), db::headlab_migrations().back().version);
  auto progress = ProgressStore::open(path);
  ASSERT_TRUE(progress) << "the progress store opens the same file";
  EXPECT_EQ(*(*progress)->completed("learner-old-1", "causal-mask"), std::vector<std::string>{"induction-next-word"});
}

TEST(ClassStoreMigration, AFileMadeByTheClassCodeBeforeMigrationsKeepsItsClasses) {
  expect_old_class_file_opens("class_fixture_before_migrations.db", 0);
}

TEST(ClassStoreMigration, AFileAtVersionOneWithTheClassTablesKeepsItsClasses) {
  expect_old_class_file_opens("class_fixture_migration_1.db", 1);
}

// Issue 24: the teacher's view reads every kept check, and one learner could add ~1,000 a
// second. Kept checks are bounded by the class's learners × challenges: none after a pass,
// at most kMaxAttemptsPerChallenge before it.
TEST_P(ClassStoreOn, KeepsAtMostAHundredChecksPerLearnerAndChallengeAndNoneAfterAPass) {
  CLASS_FIXTURE(f);
  ClassInfo a = f.make();
  ASSERT_TRUE(f.store->join(a.code, "learner-0001", "Ada"));
  for (int i = 0; i < ClassStore::kMaxAttemptsPerChallenge + 50; ++i)
    ASSERT_TRUE(f.store->record_attempt("learner-0001", "trained-heads", "pattern-quiz", false, "uniform"));
  ASSERT_TRUE(f.store->record_attempt("learner-0001", "trained-heads", "find-sink", true, "sink"));
  for (int i = 0; i < 20; ++i)
    ASSERT_TRUE(f.store->record_attempt("learner-0001", "trained-heads", "find-sink", false, "reads-first"));
  auto attempts = f.store->attempts(a.code);
  ASSERT_TRUE(attempts) << attempts.error().message;
  EXPECT_EQ(attempts->size(), std::size_t(ClassStore::kMaxAttemptsPerChallenge) + 1);
}

// What a check saw is kept with it for the teacher's click on a cell, up to kMaxEvidenceBytes
// (a larger one is dropped, the check still kept), and only read for one learner's challenge.
TEST_P(ClassStoreOn, KeepsEachChecksEvidenceUpToItsBoundForOneLearnersChallenge) {
  CLASS_FIXTURE(f);
  ClassInfo a = f.make();
  ASSERT_TRUE(f.store->join(a.code, "learner-0001", "Ada"));
  ASSERT_TRUE(f.store->join(a.code, "learner-0002", "Bo"));
  const std::string small = R"({"text":"the cat sat","layer":1,"head":3,"why":"0.12 against 0.14"})";
  const std::string big = "{\"text\":\"" + std::string(ClassStore::kMaxEvidenceBytes, 'x') + "\"}";
  ASSERT_TRUE(f.store->record_attempt("learner-0001", "trained-heads", "find-induction", false, "L1 H3", "", small));
  ASSERT_TRUE(f.store->record_attempt("learner-0001", "trained-heads", "find-induction", false, "L1 H4", "", big));
  ASSERT_TRUE(f.store->record_passes("learner-0001", "causal-mask", {"future-favourite"}, {R"({"query":2})"}));
  ASSERT_TRUE(f.store->record_attempt("learner-0002", "trained-heads", "find-induction", true, "L1 H4", "", small));
  auto mine = f.store->learner_attempts(a.code, "ADA", "trained-heads", "find-induction");
  ASSERT_TRUE(mine) << mine.error().message;
  ASSERT_EQ(mine->size(), 2u);
  EXPECT_EQ((*mine)[0].evidence, small);
  EXPECT_EQ((*mine)[0].answer, "L1 H3");
  EXPECT_EQ((*mine)[1].evidence, "");  // over the bound: dropped, the check kept
  EXPECT_EQ((*mine)[1].answer, "L1 H4");
  EXPECT_EQ(f.store->learner_attempts(a.code, "Ada", "causal-mask", "future-favourite")->at(0).evidence, R"({"query":2})");
  EXPECT_EQ(f.store->learner_attempts(a.code, "Nobody", "trained-heads", "find-induction").error().code,
            ErrorCode::not_found);
  auto all = f.store->attempts(a.code);  // kept: a range-for over *temporary would read a destroyed Result
  ASSERT_TRUE(all) << all.error().message;
  for (const Attempt& at : *all) EXPECT_EQ(at.evidence, "");  // the grid does not read it
}

// Joining carries what the learner finished before into the class, at the time it was
// finished and marked as such; the class sees the learner's reveals, from before or after.
TEST_P(ClassStoreOn, JoiningCarriesProgressOverAndTheClassSeesItsLearnersReveals) {
  CLASS_FIXTURE(f);
  ClassInfo a = f.make();
  auto progress = ProgressStore::open(f.path);
  ASSERT_TRUE(progress) << progress.error().message;
  ASSERT_TRUE((*progress)->record("learner-0001", "trained-heads", {"pattern-quiz"}));
  ASSERT_TRUE((*progress)->note_reveal("learner-0001", "trained-heads", "find-sink"));
  ASSERT_TRUE((*progress)->note_reveal("learner-0009", "trained-heads", "find-sink"));  // in no class
  auto m = f.store->join(a.code, "learner-0001", "Ada");
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_EQ(m->carried_over, 1);
  auto attempts = f.store->attempts(a.code);
  ASSERT_EQ(attempts->size(), 1u);
  EXPECT_TRUE((*attempts)[0].passed);
  EXPECT_TRUE((*attempts)[0].before_joining);
  EXPECT_EQ((*attempts)[0].answer, "");
  EXPECT_EQ((*attempts)[0].challenge, "pattern-quiz");
  // a carried-over pass is a pass: later checks of it are not kept
  ASSERT_TRUE(f.store->record_attempt("learner-0001", "trained-heads", "pattern-quiz", false, "uniform"));
  EXPECT_EQ(f.store->attempts(a.code)->size(), 1u);
  auto reveals = f.store->reveals(a.code);
  ASSERT_TRUE(reveals) << reveals.error().message;
  ASSERT_EQ(reveals->size(), 1u);
  EXPECT_EQ((*reveals)[0].learner, "learner-0001");
  EXPECT_EQ((*reveals)[0].challenge, "find-sink");
  // leaving deletes the carried-over rows with the rest; joining again carries them again
  ASSERT_TRUE(f.store->leave("learner-0001"));
  EXPECT_EQ(f.store->join(a.code, "learner-0001", "Ada")->carried_over, 1);
}

// A look at the answer after a pass is not kept as a try, but the teacher's page must learn of
// it (its "answer shown" mark): the class's version rises all the same.
TEST_P(ClassStoreOn, ALookAtTheAnswerAfterAPassRaisesTheVersionWithoutKeepingATry) {
  CLASS_FIXTURE(f);
  ClassInfo a = f.make();
  ASSERT_TRUE(f.store->join(a.code, "learner-0001", "Ada"));
  ASSERT_TRUE(f.store->record_attempt("learner-0001", "trained-heads", "pattern-quiz", true, "below-diagonal"));
  const std::int64_t before = f.store->find_class(a.code)->version;
  ASSERT_TRUE(f.store->record_attempt("learner-0001", "trained-heads", "pattern-quiz", false, "uniform"));
  EXPECT_EQ(f.store->find_class(a.code)->version, before);  // a check after a pass: nothing new
  ASSERT_TRUE(f.store->record_attempt("learner-0001", "trained-heads", "pattern-quiz", false, "(revealed)"));
  EXPECT_EQ(f.store->find_class(a.code)->version, before + 1);
  EXPECT_EQ(f.store->attempts(a.code)->size(), 1u);
}
