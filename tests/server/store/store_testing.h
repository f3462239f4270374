// tests/server/store/store_testing.h — a fresh, empty database for one test, on either engine:
// SQLite, a file in a temporary folder; PostgreSQL, a new database in the cluster that
// HEADLAB_TEST_POSTGRES_URL names (tests/server/store/store_postgres_cluster.sh starts one;
// scripts/test always does), dropped at the end.
//
//   StoreDatabase fresh(db::Engine::postgresql);
//   if (!fresh.available()) GTEST_SKIP() << fresh.skip_reason();
//   auto store = ProgressStore::open(fresh.target());
#pragma once

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <string>

#include "server/store/database.h"
#include "testing/test_server.h"

namespace headlab::testing {

// The URL of the test cluster, or "" when none is given.
inline std::string test_postgres_url() {
  const char* url = std::getenv("HEADLAB_TEST_POSTGRES_URL");
  return url ? url : "";
}

// `url` with its database name replaced by `name` (any ?query is dropped).
inline std::string url_with_database(const std::string& url, const std::string& name) {
  std::string base = url.substr(0, url.find('?'));
  std::size_t authority = base.find("://") + 3;
  std::size_t slash = base.find('/', authority);
  return (slash == std::string::npos ? base : base.substr(0, slash)) + "/" + name;
}

class StoreDatabase {
 public:
  explicit StoreDatabase(server::db::Engine engine) : engine_(engine) {
    if (engine == server::db::Engine::sqlite) {
      target_ = temp_path("store.db");
      return;
    }
    std::string url = test_postgres_url();
    if (url.empty()) {
      skip_ = "PostgreSQL SKIPPED: HEADLAB_TEST_POSTGRES_URL is not set. scripts/test sets it; by hand: "
              "tests/server/store/store_postgres_cluster.sh build/tests/server/store_tests";
      return;
    }
    static std::atomic<int> counter{0};
    name_ = "headlab_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++);
    auto admin = server::db::Database::open(url);
    if (!admin) {
      skip_ = "PostgreSQL at HEADLAB_TEST_POSTGRES_URL cannot be used: " + admin.error().message;
      failed_ = true;
      return;
    }
    admin_ = std::move(*admin);
    (void)admin_->exec("DROP DATABASE IF EXISTS " + name_);
    if (auto r = admin_->exec("CREATE DATABASE " + name_); !r) {
      skip_ = "cannot create a test database: " + r.error().message;
      failed_ = true;
      return;
    }
    target_ = url_with_database(url, name_);
  }
  ~StoreDatabase() {
    if (admin_ && !name_.empty()) (void)admin_->exec("DROP DATABASE IF EXISTS " + name_ + " WITH (FORCE)");
  }
  StoreDatabase(const StoreDatabase&) = delete;
  StoreDatabase& operator=(const StoreDatabase&) = delete;

  bool available() const { return skip_.empty(); }
  // True when a cluster was named but could not be used: a failure, not a skip.
  bool failed() const { return failed_; }
  const std::string& skip_reason() const { return skip_; }
  const std::string& target() const { return target_; }
  server::db::Engine engine() const { return engine_; }
  // A connection to the cluster's admin database (PostgreSQL only).
  server::db::Database* admin() { return admin_.get(); }

 private:
  server::db::Engine engine_;
  std::string target_, name_, skip_;
  bool failed_ = false;
  std::unique_ptr<server::db::Database> admin_;
};

}  // namespace headlab::testing

// In a test body: skip (PostgreSQL not given) or fail (given but unusable).
#define HEADLAB_REQUIRE_DATABASE(fresh)                         \
  do {                                                          \
    if ((fresh).failed()) FAIL() << (fresh).skip_reason();      \
    if (!(fresh).available()) GTEST_SKIP() << (fresh).skip_reason(); \
  } while (0)
