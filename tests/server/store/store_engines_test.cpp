// What differs between the engines: which --db means which, SQLite's placeholders, files made
// before migrations, and PostgreSQL's connection failures and reconnects.
#include <gtest/gtest.h>

#include <sqlite3.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "server/store/database.h"
#include "server/store/migrations.h"
#include "server/store/schema.h"
#include "server/store/sqlite_engine.h"
#include "server/store/target.h"
#include "server/store/feedback_store.h"
#include "server/store/progress_store.h"
#include "server/store/rate_store.h"
#include "server/store/sqlite_db.h"
#include "server/store/store_testing.h"
#include "testing/process.h"

using namespace headlab;
using namespace headlab::server;
using headlab::testing::StoreDatabase;
using headlab::testing::temp_path;

namespace {

// A loopback port nothing listens on (bound, then closed).
int closed_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

// The CREATE TABLE statements of a file, by table name, straight from sqlite_master.
std::string schema_of(const std::string& path) {
  sqlite3* db = nullptr;
  sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
  sqlite3_stmt* st = nullptr;
  std::string out;
  sqlite3_prepare_v2(db, "SELECT name, sql FROM sqlite_master WHERE name IN ('progress', 'feedback') ORDER BY name", -1,
                     &st, nullptr);
  while (sqlite3_step(st) == SQLITE_ROW)
    out += std::string(reinterpret_cast<const char*>(sqlite3_column_text(st, 0))) + ": " +
           reinterpret_cast<const char*>(sqlite3_column_text(st, 1)) + "\n";
  sqlite3_finalize(st);
  sqlite3_close(db);
  return out;
}

}  // namespace

TEST(StoreTarget, APathIsSQLiteAndAPostgresUrlIsPostgreSQL) {
  EXPECT_EQ(db::parse_target("class.db")->engine, db::Engine::sqlite);
  EXPECT_EQ(db::parse_target("/var/lib/headlab/x.db")->engine, db::Engine::sqlite);
  EXPECT_EQ(db::parse_target("postgresql://headlab@db:5432/headlab")->engine, db::Engine::postgresql);
  EXPECT_EQ(db::parse_target("postgres://headlab@db/headlab")->engine, db::Engine::postgresql);
}

TEST(StoreTarget, OtherUrlsAndAnEmptyTargetAreRefused) {
  auto mysql = db::parse_target("mysql://root:pw@db/headlab");
  ASSERT_FALSE(mysql);
  EXPECT_EQ(mysql.error().code, ErrorCode::invalid_argument);
  EXPECT_NE(mysql.error().message.find("postgresql://"), std::string::npos);
  EXPECT_EQ(mysql.error().message.find("pw"), std::string::npos) << "the password is hidden";
  EXPECT_FALSE(db::parse_target(""));
  EXPECT_FALSE(db::parse_target("PostgreSQL://headlab@db/headlab")) << "libpq reads the scheme in lower case only";
}

TEST(StoreTarget, TextThatOnlyLooksLikeAPostgresUrlIsRefusedByNameNotTakenForAFile) {
  for (const char* t : {"postgresql:/headlab@db/headlab", "postgresql:headlab", "postgres:/db/headlab",
                        "PostgreSQL://headlab@db/headlab", "POSTGRES://db/headlab", "postgresql:"}) {
    auto r = db::parse_target(t);
    ASSERT_FALSE(r) << t;
    EXPECT_EQ(r.error().code, ErrorCode::invalid_argument) << t;
    EXPECT_NE(r.error().message.find("looks like a PostgreSQL URL"), std::string::npos) << r.error().message;
    EXPECT_NE(r.error().message.find("postgresql://USER@HOST:PORT/NAME"), std::string::npos) << r.error().message;
  }
  // a file whose name only begins with the word is a file
  EXPECT_EQ(db::parse_target("postgresql-notes.db")->engine, db::Engine::sqlite);
  EXPECT_EQ(db::parse_target("./postgresql:x.db")->engine, db::Engine::sqlite);
}

// Where every store's SQLite file is opened: a URL given to it by mistake makes no folder.
TEST(SqliteEngine, APostgresUrlIsNeverOpenedAsAFileNorMakesAFolder) {
  const std::filesystem::path dir = std::filesystem::path(temp_path("x")).parent_path();
  const std::filesystem::path was = std::filesystem::current_path();
  std::filesystem::current_path(dir);  // the folder would appear here, relative to the working directory
  for (const char* url : {"postgresql://headlab@127.0.0.1:5432/headlab", "PostgreSQL:/headlab@db/headlab"}) {
    auto opened = sqlite_open_durable(url, "class database");
    EXPECT_FALSE(opened) << url;
    if (opened) sqlite3_close(*opened);
    else EXPECT_EQ(opened.error().code, ErrorCode::invalid_argument) << opened.error().message;
  }
  for (const char* url : {"postgresql:/headlab@127.0.0.1:5432/headlab", "Postgres://headlab@db/headlab"}) {
    EXPECT_FALSE(ProgressStore::open(url)) << url;
    EXPECT_FALSE(FeedbackStore::open(url)) << url;
  }
  std::filesystem::current_path(was);
  EXPECT_TRUE(std::filesystem::is_empty(dir)) << "something was made in " << dir;
}

TEST(StoreTarget, PasswordsNeverReachMessages) {
  EXPECT_EQ(db::redact_url("postgresql://teacher:s3cret@db:5432/headlab"), "postgresql://teacher:***@db:5432/headlab");
  EXPECT_EQ(db::redact_url("postgresql://teacher@db/headlab?password=s3cret&sslmode=require"),
            "postgresql://teacher@db/headlab?password=***&sslmode=require");
  EXPECT_EQ(db::redact_url("postgresql://db/headlab"), "postgresql://db/headlab");
  EXPECT_EQ(db::redact_url("class.db"), "class.db");
  auto down = ProgressStore::open("postgresql://teacher:s3cret@127.0.0.1:" + std::to_string(closed_port()) + "/x");
  ASSERT_FALSE(down);
  EXPECT_EQ(down.error().message.find("s3cret"), std::string::npos) << down.error().message;
}

TEST(SqliteEngine, DollarPlaceholdersBecomeNumberedOnesOutsideQuotes) {
  EXPECT_EQ(db::sqlite_placeholders("SELECT a FROM t WHERE b = $1 AND c = $12"), "SELECT a FROM t WHERE b = ?1 AND c = ?12");
  EXPECT_EQ(db::sqlite_placeholders("SELECT '$1', \"$2\" WHERE x = $3"), "SELECT '$1', \"$2\" WHERE x = ?3");
  EXPECT_EQ(db::sqlite_placeholders("SELECT 'it''s $1' || $2"), "SELECT 'it''s $1' || ?2");
}

// tests/server/store/store_fixture_main.db was written by main's headlab before migrations existed
// (tests/server/store/store_fixture_make.sh): one progress row, one note.
TEST(SqliteEngine, AFileMadeBeforeMigrationsOpensUnchangedWithItsRows) {
  std::string path = temp_path("main.db");
  std::filesystem::copy_file(HEADLAB_SOURCE_DIR "/tests/server/store/store_fixture_main.db", path);
  const std::string before = schema_of(path);
  ASSERT_NE(before.find("progress"), std::string::npos) << before;
  {
    auto progress = ProgressStore::open(path);
    ASSERT_TRUE(progress) << progress.error().message;
    EXPECT_EQ(*(*progress)->completed("learner-fixture-1", "causal-mask"), std::vector<std::string>{"induction-next-word"});
    ASSERT_TRUE((*progress)->record("learner-fixture-1", "causal-mask", {"future-favourite"}));
    auto feedback = FeedbackStore::open(path);
    ASSERT_TRUE(feedback) << feedback.error().message;
    auto notes = (*feedback)->list();
    ASSERT_TRUE(notes);
    ASSERT_EQ(notes->size(), 1u);
    EXPECT_EQ(notes->front().message, "Row 6 looks wrong");
    EXPECT_EQ(notes->front().created_at.size(), 20u) << "as main wrote it: " << notes->front().created_at;
    auto added = (*feedback)->add({"causal-mask", "a second note", "", 0, ""});
    ASSERT_TRUE(added);
    EXPECT_EQ(*added, 2);
  }
  EXPECT_EQ(schema_of(path), before) << "the tables are as main's binary made them";
  auto db = db::Database::open(path);
  ASSERT_TRUE(db);
  EXPECT_EQ(*db::schema_version(**db), db::headlab_migrations().back().version);  // every migration, 1 included
}

TEST(SqliteEngine, AFreshFileHasTheTablesOfAFileMadeBeforeMigrations) {
  std::string old_file = temp_path("main.db");
  std::filesystem::copy_file(HEADLAB_SOURCE_DIR "/tests/server/store/store_fixture_main.db", old_file);
  std::string fresh = temp_path("fresh.db");
  ASSERT_TRUE(ProgressStore::open(fresh));
  EXPECT_EQ(schema_of(fresh), schema_of(old_file));
}

TEST(PostgresEngine, AServerThatIsDownIsOneLineNamingHostPortAndTheFix) {
  const int port = closed_port();
  auto store = ProgressStore::open("postgresql://headlab@127.0.0.1:" + std::to_string(port) + "/headlab");
  ASSERT_FALSE(store);
  const std::string& m = store.error().message;
  EXPECT_EQ(store.error().code, ErrorCode::unavailable);
  EXPECT_NE(m.find("127.0.0.1"), std::string::npos) << m;
  EXPECT_NE(m.find("port " + std::to_string(port)), std::string::npos) << m;
  EXPECT_NE(m.find("Is PostgreSQL running"), std::string::npos) << m;
  EXPECT_EQ(m.find('\n'), std::string::npos) << "one line: " << m;
}

TEST(PostgresEngine, ServeStopsWithThatLineWhenItsPostgreSQLIsDown) {
  const int port = closed_port();
  auto r = headlab::testing::headlab_run("serve --no-model --port 0 --db postgresql://headlab:s3cret@127.0.0.1:" +
                                         std::to_string(port) + "/headlab");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_EQ(r.out.rfind("headlab: error: Cannot connect to PostgreSQL at 127.0.0.1 port " + std::to_string(port), 0), 0u)
      << r.out;
  EXPECT_EQ(r.out.find('\n'), r.out.size() - 1) << "one line: " << r.out;
  EXPECT_EQ(r.out.find("s3cret"), std::string::npos) << r.out;
}

TEST(PostgresEngine, AnUnreadableUrlIsRefusedWithTheShapeOfAGoodOne) {
  auto store = ProgressStore::open("postgresql://headlab@127.0.0.1:notaport/headlab");
  ASSERT_FALSE(store);
  EXPECT_NE(store.error().message.find("postgresql://"), std::string::npos) << store.error().message;
  EXPECT_EQ(store.error().message.find('\n'), std::string::npos) << store.error().message;
}

TEST(PostgresEngine, AMissingDatabaseOrUserSaysHowToCreateIt) {
  std::string url = headlab::testing::test_postgres_url();
  if (url.empty()) GTEST_SKIP() << "PostgreSQL SKIPPED: HEADLAB_TEST_POSTGRES_URL is not set (scripts/test sets it)";
  auto no_db = ProgressStore::open(headlab::testing::url_with_database(url, "headlab_no_such_database"));
  ASSERT_FALSE(no_db);
  EXPECT_NE(no_db.error().message.find("createdb"), std::string::npos) << no_db.error().message;
  EXPECT_EQ(no_db.error().message.find('\n'), std::string::npos) << no_db.error().message;
  std::string other_user = url;
  other_user.replace(other_user.find("://") + 3, other_user.find('@') - other_user.find("://") - 3, "nobody_here");
  auto no_user = ProgressStore::open(other_user);
  ASSERT_FALSE(no_user);
  EXPECT_NE(no_user.error().message.find("createuser"), std::string::npos) << no_user.error().message;
}

// The server restarted or an administrator ended the session: the next write reconnects.
TEST(PostgresEngine, ADroppedConnectionReconnectsAndTheWriteGoesThrough) {
  StoreDatabase fresh(db::Engine::postgresql);
  HEADLAB_REQUIRE_DATABASE(fresh);
  auto store = ProgressStore::open(fresh.target());
  ASSERT_TRUE(store) << store.error().message;
  auto feedback = FeedbackStore::open(fresh.target());
  ASSERT_TRUE(feedback) << feedback.error().message;
  ASSERT_TRUE((*store)->record("learner-1", "causal-mask", {"a"}));
  ASSERT_TRUE((*feedback)->add({"causal-mask", "before", "", 0, ""}));
  auto name = fresh.target().substr(fresh.target().rfind('/') + 1);
  auto killed = fresh.admin()->query(
      "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", {name});
  ASSERT_TRUE(killed) << killed.error().message;
  ASSERT_GE(killed->size(), 2u) << "both stores' connections were ended";
  auto again = (*store)->record("learner-1", "causal-mask", {"b"});
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(*again, std::vector<std::string>{"b"});
  ASSERT_TRUE((*store)->reset("learner-2", "causal-mask"));
  EXPECT_EQ(*(*store)->completed("learner-1", "causal-mask"), (std::vector<std::string>{"a", "b"}));
  auto note = (*feedback)->add({"causal-mask", "after", "", 0, ""});
  ASSERT_TRUE(note) << note.error().message;
  EXPECT_EQ((*feedback)->list()->size(), 2u) << "the note was saved once";
}

// The rate limits several servers share (rate_store.h), on both engines: two RateStores on one
// database stand for two servers.
class RateStoreOn : public ::testing::TestWithParam<db::Engine> {};

TEST_P(RateStoreOn, TwoStoresOnOneDatabaseCountOneMinuteOfWritesTogether) {
  StoreDatabase fresh(GetParam());
  HEADLAB_REQUIRE_DATABASE(fresh);
  auto a = RateStore::open(fresh.target());
  auto b = RateStore::open(fresh.target());
  ASSERT_TRUE(a && b);
  const std::int64_t minute = 60'000;
  const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::system_clock::now().time_since_epoch()).count() % minute;
  if (now > 58'000) std::this_thread::sleep_for(std::chrono::milliseconds(minute - now + 50));  // one window
  int allowed = 0;
  for (int i = 0; i < 7; ++i) {
    auto v = (i % 2 ? **b : **a).count("progress-write 192.0.2.7", 5, minute);
    ASSERT_TRUE(v) << v.error().message;
    allowed += v->allowed;
    if (!v->allowed) EXPECT_GT(v->retry_after_ms, 0);
  }
  EXPECT_EQ(allowed, 5) << "5 in all, not 5 per store";
  auto other = (*a)->count("progress-write 192.0.2.8", 5, minute);
  EXPECT_TRUE(other && other->allowed) << "another key counts on its own";
}

TEST_P(RateStoreOn, AKeysStateIsKeptForTheNextStepAndForgotten) {
  StoreDatabase fresh(GetParam());
  HEADLAB_REQUIRE_DATABASE(fresh);
  auto a = RateStore::open(fresh.target());
  auto b = RateStore::open(fresh.target());
  ASSERT_TRUE(a && b);
  auto bump = [](RateStore::KeyState& s, std::int64_t now) {
    s.last_at = now;
    return static_cast<int>(++s.failures);
  };
  EXPECT_EQ(*(*a)->update("login-wait K7QPM3 192.0.2.7", bump), 1);
  EXPECT_EQ(*(*b)->update("login-wait K7QPM3 192.0.2.7", bump), 2) << "the other store sees the first's step";
  ASSERT_TRUE((*b)->forget("login-wait K7QPM3 192.0.2.7"));
  EXPECT_EQ(*(*a)->update("login-wait K7QPM3 192.0.2.7", bump), 1) << "forgotten: from the start again";
}

INSTANTIATE_TEST_SUITE_P(BothEngines, RateStoreOn, ::testing::Values(db::Engine::sqlite, db::Engine::postgresql),
                         [](const ::testing::TestParamInfo<db::Engine>& info) {
                           return std::string(info.param == db::Engine::sqlite ? "SQLite" : "PostgreSQL");
                         });
