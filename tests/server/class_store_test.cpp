// ClassStore: classes, learners by nickname, hashed credentials, expiring sessions,
// attempts, and deletions that really delete.
#include "server/class_store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <atomic>
#include <fstream>
#include <iterator>

#include "testing/test_server.h"

using namespace headlab;
using namespace headlab::server;
using headlab::testing::temp_path;

namespace {

struct Fixture {
  std::string path = temp_path("classes.db");
  std::shared_ptr<std::atomic<std::int64_t>> now = std::make_shared<std::atomic<std::int64_t>>(1'800'000'000'000);
  std::unique_ptr<ClassStore> store;
  Fixture() {
    ClassStoreOptions o;
    o.fast_hash_for_tests = true;
    o.session_seconds = 3600;
    o.clock = [now = now] { return now->load(); };
    auto s = ClassStore::open(path, o);
    if (!s) throw std::runtime_error(s.error().message);
    store = std::move(*s);
  }
  ClassInfo make(const std::string& name = "Period 3") {
    auto c = store->create_class(name, "");
    if (!c) throw std::runtime_error(c.error().message);
    return c->info;
  }
};

// Every byte of the database file and its write-ahead log.
std::string file_bytes(const std::string& path) {
  std::string out;
  for (const std::string& p : {path, path + "-wal"}) {
    std::ifstream f(p, std::ios::binary);
    out.append(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  }
  return out;
}

std::int64_t count_rows(const std::string& path, const std::string& table) {
  sqlite3* db = nullptr;
  sqlite3_open(path.c_str(), &db);
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db, ("SELECT COUNT(*) FROM " + table).c_str(), -1, &st, nullptr);
  sqlite3_step(st);
  std::int64_t n = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(db);
  return n;
}

std::string one_text(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  sqlite3_open(path.c_str(), &db);
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr);
  std::string out;
  if (sqlite3_step(st) == SQLITE_ROW) out = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
  sqlite3_finalize(st);
  sqlite3_close(db);
  return out;
}

}  // namespace

TEST(ClassStore, CreatesAClassWithASixCharacterCodeAndASecretShownOnce) {
  Fixture f;
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

TEST(ClassStore, KeepsOnlyAnArgon2idHashOfTheSecret) {
  Fixture f;
  auto c = f.store->create_class("Period 3", "");
  ASSERT_TRUE(c);
  EXPECT_EQ(one_text(f.path, "SELECT credential_hash FROM classes").rfind("$argon2id$", 0), 0u);
  EXPECT_EQ(file_bytes(f.path).find(c->secret), std::string::npos);
}

TEST(ClassStore, VerifiesTheSecretOrThePassphraseAndNothingElse) {
  Fixture f;
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

TEST(ClassStore, RefusesAnEmptyNameAndAShortPassphrase) {
  Fixture f;
  EXPECT_EQ(f.store->create_class("   ", "").error().code, ErrorCode::invalid_argument);
  EXPECT_EQ(f.store->create_class(std::string(81, 'a'), "").error().code, ErrorCode::invalid_argument);
  EXPECT_EQ(f.store->create_class("Period\x1b[2J", "").error().code, ErrorCode::invalid_argument);
  EXPECT_EQ(f.store->create_class("Period 3", "short").error().code, ErrorCode::invalid_argument);
}

TEST(ClassStore, NicknamesAreUniqueInAClassIgnoringCase) {
  Fixture f;
  ClassInfo a = f.make("A"), b = f.make("B");
  ASSERT_TRUE(f.store->join(a.code, "learner-0001", "Ada"));
  auto taken = f.store->join(a.code, "learner-0002", "ada");
  ASSERT_FALSE(taken);
  EXPECT_EQ(taken.error().code, ErrorCode::invalid_argument);
  EXPECT_NE(taken.error().message.find("choose another nickname"), std::string::npos);
  EXPECT_TRUE(f.store->join(b.code, "learner-0002", "Ada"));  // another class: free
}

TEST(ClassStore, RefusesABadNicknameAndAnUnknownCode) {
  Fixture f;
  ClassInfo a = f.make();
  EXPECT_EQ(f.store->join(a.code, "learner-0001", "  ").error().code, ErrorCode::invalid_argument);
  EXPECT_EQ(f.store->join(a.code, "learner-0001", std::string(25, 'x')).error().code, ErrorCode::invalid_argument);
  EXPECT_EQ(f.store->join(a.code, "learner-0001", "A\nB").error().code, ErrorCode::invalid_argument);
  EXPECT_EQ(f.store->join("NOSUCH", "learner-0001", "Ada").error().code, ErrorCode::not_found);
}

TEST(ClassStore, ALearnerIsInOneClassAtATime) {
  Fixture f;
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

TEST(ClassStore, KeepsNoAttemptsOfALearnerInNoClass) {
  Fixture f;
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

TEST(ClassStore, LeavingDeletesTheLearnersAttemptsOnly) {
  Fixture f;
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

TEST(ClassStore, RemovingALearnerByNicknameDeletesTheirAttempts) {
  Fixture f;
  ClassInfo a = f.make();
  f.store->join(a.code, "learner-0001", "Ada");
  f.store->record_attempt("learner-0001", "trained-heads", "pattern-quiz", true, "below-diagonal");
  ASSERT_TRUE(f.store->remove_member(a.code, "ada"));
  EXPECT_TRUE(f.store->attempts(a.code)->empty());
  EXPECT_EQ(f.store->remove_member(a.code, "Ada").error().code, ErrorCode::not_found);
}

TEST(ClassStore, DeletingAClassLeavesNoTraceOfItInTheFile) {
  Fixture f;
  ClassInfo a = f.make("Deleted class"), keep = f.make("Kept class");
  f.store->join(a.code, "learner-0001", "Zanzibar-nick");
  f.store->join(keep.code, "learner-0002", "Bo");
  f.store->record_attempt("learner-0001", "trained-heads", "pattern-quiz", false, "first-column-answer");
  ASSERT_TRUE(f.store->open_session(a.code));
  ASSERT_TRUE(f.store->delete_class(a.code));
  EXPECT_EQ(f.store->find_class(a.code).error().code, ErrorCode::not_found);
  EXPECT_EQ(f.store->delete_class(a.code).error().code, ErrorCode::not_found);
  EXPECT_EQ(count_rows(f.path, "classes"), 1);
  EXPECT_EQ(count_rows(f.path, "class_members"), 1);
  EXPECT_EQ(count_rows(f.path, "class_attempts"), 0);
  EXPECT_EQ(count_rows(f.path, "teacher_sessions"), 0);
  const std::string bytes = file_bytes(f.path);
  EXPECT_EQ(bytes.find("Zanzibar-nick"), std::string::npos);
  EXPECT_EQ(bytes.find("first-column-answer"), std::string::npos);
  EXPECT_EQ(bytes.find("Deleted class"), std::string::npos);
  EXPECT_NE(bytes.find("Kept class"), std::string::npos);
}

TEST(ClassStore, SessionsExpireAndTheirTokensAreStoredOnlyHashed) {
  Fixture f;
  ClassInfo a = f.make();
  auto s = f.store->open_session(a.code);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->token.size(), 64u);
  EXPECT_EQ(*f.store->session_class(s->token), a.code);
  EXPECT_EQ(file_bytes(f.path).find(s->token), std::string::npos);
  *f.now += 3600 * 1000 - 1000;
  EXPECT_TRUE(f.store->session_class(s->token));
  *f.now += 1000;
  EXPECT_EQ(f.store->session_class(s->token).error().code, ErrorCode::unauthorized);
  EXPECT_EQ(f.store->session_class("").error().code, ErrorCode::unauthorized);
  EXPECT_EQ(f.store->session_class("learner-0001").error().code, ErrorCode::unauthorized);
}

TEST(ClassStore, ClosingASessionEndsItAtOnce) {
  Fixture f;
  ClassInfo a = f.make();
  auto s = f.store->open_session(a.code);
  ASSERT_TRUE(f.store->close_session(s->token));
  EXPECT_EQ(f.store->session_class(s->token).error().code, ErrorCode::unauthorized);
}

TEST(ClassStore, EveryChangeToAClassRaisesItsVersion) {
  Fixture f;
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

TEST(ClassStore, KeepsClassesAcrossReopening) {
  std::string path = temp_path("reopen.db");
  std::string code, secret;
  {
    ClassStoreOptions o;
    o.fast_hash_for_tests = true;
    auto s = ClassStore::open(path, o);
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
