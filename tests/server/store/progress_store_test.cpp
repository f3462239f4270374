#include "server/store/progress_store.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "testing/test_server.h"

using namespace headlab;
using namespace headlab::server;
using headlab::testing::temp_path;

TEST(ProgressStore, RecordsEachChallengeOnceAndReportsOnlyNewOnes) {
  auto store = ProgressStore::open(temp_path("p.db"));
  ASSERT_TRUE(store) << store.error().message;
  auto first = (*store)->record("learner-1", "causal-mask", {"a", "b"});
  ASSERT_TRUE(first);
  EXPECT_EQ(*first, (std::vector<std::string>{"a", "b"}));
  auto second = (*store)->record("learner-1", "causal-mask", {"b", "c"});
  EXPECT_EQ(*second, (std::vector<std::string>{"c"}));
  EXPECT_EQ((*(*store)->completed("learner-1", "causal-mask")).size(), 3u);
}

TEST(ProgressStore, KeepsWritesAcrossReopening) {
  std::string path = temp_path("reopen.db");
  {
    auto store = ProgressStore::open(path);
    ASSERT_TRUE(store);
    ASSERT_TRUE((*store)->record("learner-1", "causal-mask", {"future-favourite"}));
  }
  auto store = ProgressStore::open(path);
  ASSERT_TRUE(store);
  EXPECT_EQ(*(*store)->completed("learner-1", "causal-mask"), std::vector<std::string>{"future-favourite"});
}

TEST(ProgressStore, ResetForgetsOnlyThatLearner) {
  auto store = ProgressStore::open(temp_path("reset.db"));
  ASSERT_TRUE(store);
  (*store)->record("learner-1", "causal-mask", {"a"});
  (*store)->record("learner-2", "causal-mask", {"a"});
  ASSERT_TRUE((*store)->reset("learner-1", "causal-mask"));
  EXPECT_TRUE((*(*store)->completed("learner-1", "causal-mask")).empty());
  EXPECT_EQ((*(*store)->completed("learner-2", "causal-mask")).size(), 1u);
}

TEST(ProgressStore, CreatesMissingFolders) {
  std::string path = temp_path("x") + "/deeper/still/p.db";
  auto store = ProgressStore::open(path);
  ASSERT_TRUE(store) << store.error().message;
  EXPECT_TRUE(std::filesystem::exists(path));
}

TEST(ProgressStore, RefusesAFileThatIsNotADatabaseWithAClearMessage) {
  std::string path = temp_path("garbage.db");
  {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    std::fputs("this is not an sqlite file, just some text that is long enough to have a header......", f);
    std::fclose(f);
  }
  auto store = ProgressStore::open(path);
  ASSERT_FALSE(store);
  EXPECT_EQ(store.error().code, ErrorCode::io_error);
  EXPECT_NE(store.error().message.find(path), std::string::npos);
  EXPECT_NE(store.error().message.find("--db"), std::string::npos);
}

TEST(ProgressStore, RefusesAFolderItCannotCreate) {
  auto store = ProgressStore::open("/proc/headlab-cannot-be-here/p.db");
  ASSERT_FALSE(store);
  EXPECT_EQ(store.error().code, ErrorCode::io_error);
}

TEST(ProgressStore, DefaultPathIsUnderTheUsersDataFolder) {
  setenv("XDG_DATA_HOME", "/tmp/xdg-test", 1);
  EXPECT_EQ(default_database_path(), "/tmp/xdg-test/headlab/headlab.db");
  unsetenv("XDG_DATA_HOME");
  setenv("HOME", "/home/learner", 1);
  EXPECT_EQ(default_database_path(), "/home/learner/.local/share/headlab/headlab.db");
}

TEST(ProgressStore, AFullDiskIsAnErrorThatNamesTheFileAndKeepsEarlierWrites) {
  std::string path = temp_path("full.db");
  auto store = ProgressStore::open(path, /*max_bytes=*/3 * 4096);
  ASSERT_TRUE(store) << store.error().message;
  ASSERT_TRUE((*store)->record("learner-first", "causal-mask", {"a"}));
  Result<std::vector<std::string>> r = std::vector<std::string>{};
  int i = 0;
  for (; i < 10000 && r; ++i)
    r = (*store)->record("learner-" + std::to_string(i) + std::string(200, 'x'), "causal-mask", {"a", "b", "c"});
  ASSERT_FALSE(r) << "never filled up";
  EXPECT_EQ(r.error().code, ErrorCode::storage_full);  // HTTP 507
  EXPECT_NE(r.error().message.find("full"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find(path), std::string::npos);
  EXPECT_EQ((*(*store)->completed("learner-first", "causal-mask")).size(), 1u);
}
