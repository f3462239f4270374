// The same claims about the stores, run on both engines: SQLite (always) and PostgreSQL (the
// cluster HEADLAB_TEST_POSTGRES_URL names; skipped, saying so, when none is given).
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <atomic>
#include <set>
#include <thread>

#include "server/store/database.h"
#include "server/store/migrations.h"
#include "server/store/schema.h"
#include "server/store/feedback_store.h"
#include "server/store/progress_store.h"
#include "server/store/store_testing.h"

using namespace headlab;
using namespace headlab::server;
using headlab::testing::StoreDatabase;

namespace {

class Store : public ::testing::TestWithParam<db::Engine> {};

std::string engine_label(const ::testing::TestParamInfo<db::Engine>& info) {
  return info.param == db::Engine::sqlite ? "SQLite" : "PostgreSQL";
}

std::vector<std::string> sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

}  // namespace

TEST_P(Store, ProgressRecordsEachChallengeOnceAndReportsOnlyNewOnes) {
  StoreDatabase fresh(GetParam());
  HEADLAB_REQUIRE_DATABASE(fresh);
  auto store = ProgressStore::open(fresh.target());
  ASSERT_TRUE(store) << store.error().message;
  auto first = (*store)->record("learner-1", "causal-mask", {"a", "b"});
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(*first, (std::vector<std::string>{"a", "b"}));
  auto second = (*store)->record("learner-1", "causal-mask", {"b", "c"});
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_EQ(*second, (std::vector<std::string>{"c"}));
  EXPECT_EQ(*(*store)->completed("learner-1", "causal-mask"), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_TRUE((*(*store)->completed("learner-1", "trained-heads")).empty());
}

TEST_P(Store, ProgressListsChallengesInCompletionOrder) {
  StoreDatabase fresh(GetParam());
  HEADLAB_REQUIRE_DATABASE(fresh);
  auto store = ProgressStore::open(fresh.target());
  ASSERT_TRUE(store) << store.error().message;
  ASSERT_TRUE((*store)->record("learner-1", "causal-mask", {"zeta", "alpha"}));
  ASSERT_TRUE((*store)->record("learner-1", "causal-mask", {"mu"}));
  EXPECT_EQ(*(*store)->completed("learner-1", "causal-mask"), (std::vector<std::string>{"zeta", "alpha", "mu"}));
}

TEST_P(Store, ProgressKeepsWritesAcrossReopening) {
  StoreDatabase fresh(GetParam());
  HEADLAB_REQUIRE_DATABASE(fresh);
  {
    auto store = ProgressStore::open(fresh.target());
    ASSERT_TRUE(store) << store.error().message;
    ASSERT_TRUE((*store)->record("learner-1", "causal-mask", {"future-favourite"}));
  }
  auto store = ProgressStore::open(fresh.target());
  ASSERT_TRUE(store) << store.error().message;
  EXPECT_EQ(*(*store)->completed("learner-1", "causal-mask"), std::vector<std::string>{"future-favourite"});
}

TEST_P(Store, ProgressResetForgetsOnlyThatLearnerAndLesson) {
  StoreDatabase fresh(GetParam());
  HEADLAB_REQUIRE_DATABASE(fresh);
  auto store = ProgressStore::open(fresh.target());
  ASSERT_TRUE(store) << store.error().message;
  ASSERT_TRUE((*store)->record("learner-1", "causal-mask", {"a"}));
  ASSERT_TRUE((*store)->record("learner-1", "trained-heads", {"a"}));
  ASSERT_TRUE((*store)->record("learner-2", "causal-mask", {"a"}));
  ASSERT_TRUE((*store)->reset("learner-1", "causal-mask"));
  EXPECT_TRUE((*(*store)->completed("learner-1", "causal-mask")).empty());
  EXPECT_EQ((*(*store)->completed("learner-1", "trained-heads")).size(), 1u);
  EXPECT_EQ((*(*store)->completed("learner-2", "causal-mask")).size(), 1u);
}

TEST_P(Store, OnlyTheFirstGuessOnAPieceOfEvidenceIsFirstAndTheGuessesAreBoundedPerChallenge) {
  StoreDatabase fresh(GetParam());
  HEADLAB_REQUIRE_DATABASE(fresh);
  auto store = ProgressStore::open(fresh.target());
  ASSERT_TRUE(store) << store.error().message;
  EXPECT_TRUE(*(*store)->note_guess("learner-1", "word-order", "wpe-neighbour", "position 20"));
  EXPECT_FALSE(*(*store)->note_guess("learner-1", "word-order", "wpe-neighbour", "position 20"));
  EXPECT_TRUE(*(*store)->note_guess("learner-1", "word-order", "wpe-neighbour", "position 21"));
  EXPECT_TRUE(*(*store)->note_guess("learner-2", "word-order", "wpe-neighbour", "position 20"));  // another learner
  EXPECT_TRUE(*(*store)->note_guess("learner-1", "word-order", "shuffle-follows", "position 20"));  // another challenge
  // A key longer than the bound is refused; past the per-challenge bound nothing is first.
  auto long_key = (*store)->note_guess("learner-1", "word-order", "wpe-neighbour", std::string(ProgressStore::kMaxGuessKeyBytes + 1, 'x'));
  ASSERT_FALSE(long_key);
  EXPECT_EQ(long_key.error().code, ErrorCode::invalid_argument);
  for (int i = 2; i < ProgressStore::kMaxGuessesPerChallenge; ++i)
    ASSERT_TRUE(*(*store)->note_guess("learner-3", "word-order", "wpe-neighbour", "key " + std::to_string(i)));
  EXPECT_TRUE(*(*store)->note_guess("learner-3", "word-order", "wpe-neighbour", "key 0"));
  EXPECT_TRUE(*(*store)->note_guess("learner-3", "word-order", "wpe-neighbour", "key 1"));
  EXPECT_FALSE(*(*store)->note_guess("learner-3", "word-order", "wpe-neighbour", "one too many"));
}

TEST_P(Store, FeedbackIsListedNewestFirstWithIdsAndTimes) {
  StoreDatabase fresh(GetParam());
  HEADLAB_REQUIRE_DATABASE(fresh);
  auto store = FeedbackStore::open(fresh.target());
  ASSERT_TRUE(store) << store.error().message;
  auto one = (*store)->add({"causal-mask", "first", "", 0, ""});
  auto two = (*store)->add({"trained-heads", "second", "me@example.org", 0, ""});
  ASSERT_TRUE(one) << one.error().message;
  ASSERT_TRUE(two) << two.error().message;
  EXPECT_LT(*one, *two);
  auto list = (*store)->list();
  ASSERT_TRUE(list) << list.error().message;
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].id, *two);
  EXPECT_EQ((*list)[0].message, "second");
  EXPECT_EQ((*list)[0].contact, "me@example.org");
  EXPECT_EQ((*list)[1].lesson, "causal-mask");
  // ISO 8601 UTC to the second, the same form on both engines: 2026-12-01T22:32:08Z
  ASSERT_EQ((*list)[1].created_at.size(), 20u) << (*list)[1].created_at;
  EXPECT_EQ((*list)[1].created_at[10], 'T');
  EXPECT_EQ((*list)[1].created_at.back(), 'Z');
  EXPECT_EQ((*store)->list(1)->size(), 1u);
}

TEST_P(Store, FeedbackKeepsUnicodeAndQuotesExactly) {
  StoreDatabase fresh(GetParam());
  HEADLAB_REQUIRE_DATABASE(fresh);
  auto store = FeedbackStore::open(fresh.target());
  ASSERT_TRUE(store) << store.error().message;
  const std::string message = "é, 猫, 🐈 and 'quotes' \"too\"; DROP TABLE feedback; -- $1 ?1";
  ASSERT_TRUE((*store)->add({"causal-mask", message, "", 0, ""}));
  EXPECT_EQ((*store)->list()->front().message, message);
}

TEST_P(Store, MigrationsRunOnceAndRecordTheirVersionAndName) {
  StoreDatabase fresh(GetParam());
  HEADLAB_REQUIRE_DATABASE(fresh);
  for (int i = 0; i < 2; ++i) {
    auto store = ProgressStore::open(fresh.target());
    ASSERT_TRUE(store) << store.error().message;
    auto feedback = FeedbackStore::open(fresh.target());
    ASSERT_TRUE(feedback) << feedback.error().message;
  }
  auto db = db::Database::open(fresh.target());
  ASSERT_TRUE(db) << db.error().message;
  auto rows = (*db)->query("SELECT version, name FROM schema_migrations ORDER BY version");
  ASSERT_TRUE(rows) << rows.error().message;
  ASSERT_EQ(rows->size(), db::headlab_migrations().size());
  EXPECT_EQ(rows->front().integer(0), 1);
  EXPECT_EQ(rows->front().text(1), "progress and feedback");
  EXPECT_EQ(*db::schema_version(**db), db::headlab_migrations().back().version);
}

TEST_P(Store, ADatabaseNewerThanThisBinaryIsRefusedByName) {
  StoreDatabase fresh(GetParam());
  HEADLAB_REQUIRE_DATABASE(fresh);
  {
    auto store = ProgressStore::open(fresh.target());
    ASSERT_TRUE(store) << store.error().message;
  }
  {
    auto db = db::Database::open(fresh.target());
    ASSERT_TRUE(db);
    ASSERT_TRUE((*db)->exec("INSERT INTO schema_migrations (version, name, applied_at) "
                            "VALUES (999, 'teleport the class', '2031-01-01T00:00:00Z')"));
  }
  auto store = ProgressStore::open(fresh.target());
  ASSERT_FALSE(store);
  EXPECT_EQ(store.error().code, ErrorCode::unsupported);
  const std::string& m = store.error().message;
  EXPECT_NE(m.find("newer headlab"), std::string::npos) << m;
  EXPECT_NE(m.find("999"), std::string::npos) << m;
  EXPECT_NE(m.find("teleport the class"), std::string::npos) << m;
  EXPECT_NE(m.find("progress database"), std::string::npos) << m;
  EXPECT_EQ(m.find("Is it a headlab database"), std::string::npos) << m;
}

TEST_P(Store, AFailingMigrationIsNamedAndLeavesNothingOfItBehind) {
  StoreDatabase fresh(GetParam());
  HEADLAB_REQUIRE_DATABASE(fresh);
  auto db = db::Database::open(fresh.target());
  ASSERT_TRUE(db) << db.error().message;
  const std::string bad = "CREATE TABLE half_done (x INTEGER); INSERT INTO no_such_table VALUES (1);";
  std::vector<db::Migration> list = {
      {1, "one table", "CREATE TABLE one (x INTEGER);", "CREATE TABLE one (x INTEGER);"},
      {2, "a broken step", bad, bad},
  };
  Status s = db::migrate(**db, list);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("migration 2 (\"a broken step\")"), std::string::npos) << s.error().message;
  EXPECT_EQ(*db::schema_version(**db), 1);
  EXPECT_TRUE((*db)->query("SELECT x FROM one"));
  EXPECT_FALSE((*db)->query("SELECT x FROM half_done")) << "migration 2 was kept in part";
  // Fixed, it applies on the next start.
  list[1] = {2, "a broken step, fixed", "CREATE TABLE half_done (x INTEGER);", "CREATE TABLE half_done (x INTEGER);"};
  ASSERT_TRUE(db::migrate(**db, list));
  EXPECT_EQ(*db::schema_version(**db), 2);
  EXPECT_TRUE((*db)->query("SELECT x FROM half_done"));
}

TEST_P(Store, ManyThreadsShareTheStoreWithoutLosingAWrite) {
  StoreDatabase fresh(GetParam());
  HEADLAB_REQUIRE_DATABASE(fresh);
  auto store = ProgressStore::open(fresh.target());
  ASSERT_TRUE(store) << store.error().message;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 25; ++i)
        if (!(*store)->record("thread-" + std::to_string(t) + "-" + std::to_string(i), "causal-mask", {"a", "b"}))
          ++failures;
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures, 0);
  for (int t = 0; t < 8; ++t)
    for (int i = 0; i < 25; ++i)
      ASSERT_EQ((*(*store)->completed("thread-" + std::to_string(t) + "-" + std::to_string(i), "causal-mask")).size(), 2u);
}

// Servers of a school starting at the same moment on an empty database: each migrates or
// finds it done, none fails, and every migration is applied once.
TEST_P(Store, ServersStartingTogetherOnAnEmptyDatabaseMigrateItOnce) {
  StoreDatabase fresh(GetParam());
  HEADLAB_REQUIRE_DATABASE(fresh);
  std::vector<pid_t> pids;
  for (int p = 0; p < 4; ++p) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      auto progress = ProgressStore::open(fresh.target());
      auto feedback = FeedbackStore::open(fresh.target());
      if (!progress) std::fprintf(stderr, "%s\n", progress.error().message.c_str());
      if (!feedback) std::fprintf(stderr, "%s\n", feedback.error().message.c_str());
      _exit(progress && feedback ? 0 : 1);
    }
    pids.push_back(pid);
  }
  for (pid_t pid : pids) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "a server could not open the store";
  }
  auto db = db::Database::open(fresh.target());
  ASSERT_TRUE(db) << db.error().message;
  auto rows = (*db)->query("SELECT version FROM schema_migrations");
  ASSERT_TRUE(rows) << rows.error().message;
  EXPECT_EQ(rows->size(), db::headlab_migrations().size());
}

// Two processes, as two `headlab serve` behind a load balancer: every write either made
// acknowledges is there afterwards, and a challenge both recorded at once counts once.
TEST_P(Store, TwoProcessesWritingAtOnceLoseNothingAndCountEachChallengeOnce) {
  StoreDatabase fresh(GetParam());
  HEADLAB_REQUIRE_DATABASE(fresh);
  {
    auto store = ProgressStore::open(fresh.target());  // migrate before the race
    ASSERT_TRUE(store) << store.error().message;
  }
  constexpr int kLearners = 150, kNotes = 10;
  const std::vector<std::string> shared = {"a", "b", "c", "d", "e", "f", "g", "h"};
  int pipes[2][2];
  pid_t pids[2];
  for (int p = 0; p < 2; ++p) {
    ASSERT_EQ(pipe(pipes[p]), 0);
    pids[p] = fork();
    ASSERT_GE(pids[p], 0);
    if (pids[p] == 0) {  // the child: its own connections, no gtest, _exit
      close(pipes[p][0]);
      auto progress = ProgressStore::open(fresh.target());
      auto feedback = FeedbackStore::open(fresh.target());
      if (!progress || !feedback) _exit(3);
      std::string report;
      for (int i = 0; i < kLearners; ++i) {
        // both processes also race on one learner's challenges, one at a time, in opposite orders
        const std::string& c = shared[(p == 0 ? i : kLearners - 1 - i) % shared.size()];
        auto mine = (*progress)->record("proc" + std::to_string(p) + "-learner-" + std::to_string(i), "causal-mask", {"x", "y"});
        auto both = (*progress)->record("shared-learner", "causal-mask", {c});
        if (!mine || mine->size() != 2 || !both) _exit(4);
        for (const std::string& got : *both) report += got + "\n";
      }
      for (int n = 0; n < kNotes; ++n)
        if (!(*feedback)->add({"causal-mask", "note " + std::to_string(n) + " from " + std::to_string(p), "", 0, ""}))
          _exit(5);
      if (write(pipes[p][1], report.data(), report.size()) != static_cast<ssize_t>(report.size())) _exit(6);
      _exit(0);
    }
    close(pipes[p][1]);
  }
  std::vector<std::string> awarded;
  for (int p = 0; p < 2; ++p) {
    std::string text;
    char buf[4096];
    ssize_t n;
    while ((n = read(pipes[p][0], buf, sizeof buf)) > 0) text.append(buf, n);
    close(pipes[p][0]);
    int status = 0;
    ASSERT_EQ(waitpid(pids[p], &status, 0), pids[p]);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "writer " << p << " exited with " << status;
    for (std::size_t a = 0, b; (b = text.find('\n', a)) != std::string::npos; a = b + 1) awarded.push_back(text.substr(a, b - a));
  }
  EXPECT_EQ(sorted(awarded), shared) << "each shared challenge is new to exactly one of the two writers";
  auto store = ProgressStore::open(fresh.target());
  ASSERT_TRUE(store);
  for (int p = 0; p < 2; ++p)
    for (int i = 0; i < kLearners; ++i)
      ASSERT_EQ((*(*store)->completed("proc" + std::to_string(p) + "-learner-" + std::to_string(i), "causal-mask")).size(), 2u)
          << "process " << p << " learner " << i;
  EXPECT_EQ(sorted(*(*store)->completed("shared-learner", "causal-mask")), shared);
  auto feedback = FeedbackStore::open(fresh.target());
  ASSERT_TRUE(feedback);
  auto notes = (*feedback)->list();
  ASSERT_TRUE(notes);
  EXPECT_EQ(notes->size(), 2u * kNotes);
  std::set<std::int64_t> ids;
  for (const Feedback& f : *notes) ids.insert(f.id);
  EXPECT_EQ(ids.size(), 2u * kNotes) << "ids are unique";
}

INSTANTIATE_TEST_SUITE_P(BothEngines, Store, ::testing::Values(db::Engine::sqlite, db::Engine::postgresql), engine_label);

// Issue 24: --db-max-mb was ignored on PostgreSQL (no cap at all) while a capped SQLite file
// filled. On both engines a database past its cap refuses new rows with storage_full, naming
// the cap, and still lets rows be deleted.
TEST_P(Store, PastItsCapADatabaseRefusesNewRowsAndStillDeletes) {
  StoreDatabase fresh(GetParam());
  HEADLAB_REQUIRE_DATABASE(fresh);
  auto store = ProgressStore::open(fresh.target(), std::int64_t(1) << 20);
  ASSERT_TRUE(store) << store.error().message;
  std::uint64_t x = 88172645463325252ull;  // xorshift: learner names that do not compress
  auto learner = [&](int i) {
    std::string s = "learner-" + std::to_string(i) + "-";
    while (s.size() < 1000) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      s += "0123456789abcdef"[x & 15];
    }
    return s;
  };
  int written = 0;
  for (; written < 2000; ++written)
    if (!(*store)->record(learner(written), "causal-mask", {"induction"})) break;
  // PostgreSQL reads its tables' size at most every 2 s: past that, the cap is seen.
  std::this_thread::sleep_for(std::chrono::milliseconds(2100));
  auto refused = (*store)->record(learner(99999), "causal-mask", {"induction"});
  ASSERT_FALSE(refused) << "after " << written << " rows of 1 KB under a 1 MB cap";
  EXPECT_EQ(refused.error().code, ErrorCode::storage_full);
  EXPECT_NE(refused.error().message.find("--db-max-mb"), std::string::npos) << refused.error().message;
  EXPECT_TRUE((*store)->reset(learner(0), "causal-mask")) << "a full database can still be made smaller";
  EXPECT_TRUE((*store)->completed(learner(1), "causal-mask")) << "and read";
}
