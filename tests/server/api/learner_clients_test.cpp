// The model's clients by learner (server/api/learner_clients.h): a learner the class store knows
// gets a key of its own behind a shared address, anything else keeps the address; the store's
// answer is kept for a while, forgotten when a membership changes; a bound per address. On an
// injected clock, with the inference pool's budget on the keys it makes.
#include "server/api/learner_clients.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <set>

#include "server/model_service/inference_pool.h"

using headlab::Error;
using headlab::ErrorCode;
using headlab::Result;
using headlab::server::InferencePool;
using headlab::server::InferencePoolOptions;
using headlab::server::LearnerClients;
using headlab::server::LearnerClientsOptions;

namespace {

// A clock that moves only when a test moves it.
struct StillClock {
  std::atomic<long long> ms{1'000'000};
  std::chrono::steady_clock::time_point read() const {
    return std::chrono::steady_clock::time_point(std::chrono::milliseconds(ms.load()));
  }
  void advance_s(double s) { ms += static_cast<long long>(s * 1000); }
};

// A class store in memory: learner id -> class code; counts the reads.
struct Roster {
  std::map<std::string, std::string> members;
  bool failing = false;
  int reads = 0;
  LearnerClients::ClassOf class_of() {
    return [this](const std::string& learner) -> Result<std::optional<std::string>> {
      ++reads;
      if (failing) return tl::unexpected(Error{ErrorCode::unavailable, "the database is down"});
      auto it = members.find(learner);
      if (it == members.end()) return std::optional<std::string>();
      return std::optional<std::string>(it->second);
    };
  }
};

LearnerClientsOptions on_clock(StillClock& clock) {
  LearnerClientsOptions o;
  o.clock = [&clock] { return clock.read(); };
  return o;
}

const std::string kSchool = "192.0.2.7";  // one NAT address for the whole class

}  // namespace

TEST(LearnerClients, TwoJoinedLearnersBehindOneAddressGetAKeyEach) {
  StillClock clock;
  Roster roster{{{"learner-ada-0001", "K7QPM3"}, {"learner-bo-00002", "K7QPM3"}}};
  LearnerClients learners(roster.class_of(), on_clock(clock));
  const std::string ada = learners.client(kSchool, "learner-ada-0001");
  const std::string bo = learners.client(kSchool, "learner-bo-00002");
  EXPECT_EQ(ada, LearnerClients::key(kSchool, "learner-ada-0001"));
  EXPECT_EQ(bo, LearnerClients::key(kSchool, "learner-bo-00002"));
  EXPECT_NE(ada, bo);
  EXPECT_NE(ada, kSchool);
  // the same learner from another address is another client: the key holds the address
  EXPECT_NE(learners.client("198.51.100.3", "learner-ada-0001"), ada);
}

TEST(LearnerClients, AMadeUpLearnerIdKeepsItsAddress) {
  StillClock clock;
  Roster roster{{{"learner-ada-0001", "K7QPM3"}}};
  LearnerClients learners(roster.class_of(), on_clock(clock));
  EXPECT_EQ(learners.client(kSchool, "made-up-learner-1"), kSchool);
  EXPECT_EQ(learners.client(kSchool, "made-up-learner-2"), kSchool);
  EXPECT_EQ(learners.client(kSchool, ""), kSchool);
}

TEST(LearnerClients, AMalformedIdKeepsItsAddressWithoutAskingTheStore) {
  StillClock clock;
  Roster roster;
  LearnerClients learners(roster.class_of(), on_clock(clock));
  for (const std::string& id : {std::string("short"), std::string(65, 'a'), std::string("learner 0001"), std::string("learner\n0001"),
                               std::string("l\xc3\xa9" "arner-0001")})
    EXPECT_EQ(learners.client(kSchool, id), kSchool) << id;
  EXPECT_EQ(roster.reads, 0);
}

TEST(LearnerClients, TheStoresAnswerIsKeptAMinuteSoTheHotPathReadsItOnce) {
  StillClock clock;
  Roster roster{{{"learner-ada-0001", "K7QPM3"}}};
  LearnerClients learners(roster.class_of(), on_clock(clock));
  for (int i = 0; i < 50; ++i) learners.client(kSchool, "learner-ada-0001");
  for (int i = 0; i < 50; ++i) learners.client(kSchool, "made-up-learner-1");  // a "no" is kept too
  EXPECT_EQ(roster.reads, 2);
  clock.advance_s(61);
  learners.client(kSchool, "learner-ada-0001");
  EXPECT_EQ(roster.reads, 3);  // stale: asked again
}

TEST(LearnerClients, ALearnerRemovedFromTheClassFallsBackToItsAddressOnceForgotten) {
  StillClock clock;
  Roster roster{{{"learner-ada-0001", "K7QPM3"}, {"learner-bo-00002", "K7QPM3"}}};
  LearnerClients learners(roster.class_of(), on_clock(clock));
  ASSERT_NE(learners.client(kSchool, "learner-bo-00002"), kSchool);
  roster.members.erase("learner-bo-00002");  // the teacher removed (and banned) Bo
  learners.forget_all();                     // what the remove-learner route does
  EXPECT_EQ(learners.client(kSchool, "learner-bo-00002"), kSchool);
  EXPECT_NE(learners.client(kSchool, "learner-ada-0001"), kSchool);  // asked again, still a member
}

TEST(LearnerClients, ALearnerWhoJoinsAfterAModelRequestGetsItsKeyOnceForgotten) {
  StillClock clock;
  Roster roster;
  LearnerClients learners(roster.class_of(), on_clock(clock));
  EXPECT_EQ(learners.client(kSchool, "learner-ada-0001"), kSchool);  // "not a member" kept
  roster.members["learner-ada-0001"] = "K7QPM3";
  learners.forget("learner-ada-0001");  // what the join route does
  EXPECT_EQ(learners.client(kSchool, "learner-ada-0001"), LearnerClients::key(kSchool, "learner-ada-0001"));
}

TEST(LearnerClients, AnAnswerReadBeforeAForgetIsNotKept) {
  StillClock clock;
  LearnerClients* self = nullptr;
  int reads = 0;
  LearnerClients learners(
      [&](const std::string&) -> Result<std::optional<std::string>> {
        if (++reads == 1) self->forget_all();  // the learner is removed while the store is read
        return std::optional<std::string>("K7QPM3");
      },
      on_clock(clock));
  self = &learners;
  learners.client(kSchool, "learner-ada-0001");
  EXPECT_EQ(learners.cached(), 0u);
  learners.client(kSchool, "learner-ada-0001");
  EXPECT_EQ(reads, 2);  // asked again
}

TEST(LearnerClients, AStoreThatCannotTellKeepsTheAddressAndKeepsNothing) {
  StillClock clock;
  Roster roster{{{"learner-ada-0001", "K7QPM3"}}};
  roster.failing = true;
  LearnerClients learners(roster.class_of(), on_clock(clock));
  EXPECT_EQ(learners.client(kSchool, "learner-ada-0001"), kSchool);
  EXPECT_EQ(learners.cached(), 0u);
  roster.failing = false;
  EXPECT_NE(learners.client(kSchool, "learner-ada-0001"), kSchool);
}

TEST(LearnerClients, AnAddressHasAtMostItsBoundOfLearnerKeysWithinTheWindow) {
  StillClock clock;
  Roster roster;
  for (int i = 0; i < 5; ++i) roster.members["learner-000" + std::to_string(i)] = "K7QPM3";
  LearnerClientsOptions o = on_clock(clock);
  o.max_learners_per_address = 3;
  LearnerClients learners(roster.class_of(), o);
  std::set<std::string> keys;
  for (int i = 0; i < 5; ++i) keys.insert(learners.client(kSchool, "learner-000" + std::to_string(i)));
  EXPECT_EQ(keys.size(), 4u);  // three learners' keys, and the address for the other two
  EXPECT_TRUE(keys.count(kSchool));
  EXPECT_NE(learners.client(kSchool, "learner-0000"), kSchool);  // a learner with a key keeps it
  EXPECT_NE(learners.client("198.51.100.3", "learner-0004"), "198.51.100.3");  // another address: its own bound
  clock.advance_s(61);  // the keys left the window: room again
  EXPECT_EQ(learners.client(kSchool, "learner-0004"), LearnerClients::key(kSchool, "learner-0004"));
}

TEST(LearnerClients, VerificationsKeptAreBoundedAndANewIdPastTheBoundIsAskedAgain) {
  StillClock clock;
  Roster roster;
  LearnerClientsOptions o = on_clock(clock);
  o.max_cached = 2;
  LearnerClients learners(roster.class_of(), o);
  learners.client(kSchool, "made-up-learner-1");
  learners.client(kSchool, "made-up-learner-2");
  learners.client(kSchool, "made-up-learner-3");
  EXPECT_EQ(learners.cached(), 2u);
  learners.client(kSchool, "made-up-learner-3");
  EXPECT_EQ(roster.reads, 4);
  clock.advance_s(61);  // the kept ones expired: dropped to make room
  learners.client(kSchool, "made-up-learner-3");
  EXPECT_EQ(learners.cached(), 1u);
}

// The keys in the inference pool (its budget on an injected clock): a class behind one
// address no longer shares one budget, and a made-up id spends its address's.
namespace {
struct PoolClock {
  std::atomic<long long> ms{1'000'000};
  std::chrono::steady_clock::time_point read() {
    return std::chrono::steady_clock::time_point(std::chrono::milliseconds(ms.load()));
  }
  void advance_s(double s) { ms += static_cast<long long>(s * 1000); }
};

Result<int> run_for(InferencePool& pool, PoolClock& clock, const std::string& client, double seconds) {
  InferencePool::ClientScope as(client);
  return pool.run<int>([&clock, seconds](headlab::model::Workspace&) -> Result<int> {
    clock.advance_s(seconds);
    return 1;
  });
}
}  // namespace

TEST(LearnerClients, TwoJoinedLearnersBehindOneAddressHaveSeparateModelBudgets) {
  PoolClock clock;
  InferencePoolOptions po;
  po.model_window_s = 60;
  po.client_model_seconds = 10;
  po.clock = [&clock] { return clock.read(); };
  InferencePool pool(po);
  Roster roster{{{"learner-ada-0001", "K7QPM3"}, {"learner-bo-00002", "K7QPM3"}}};
  LearnerClientsOptions lo;
  lo.clock = [&clock] { return clock.read(); };
  LearnerClients learners(roster.class_of(), lo);

  ASSERT_TRUE(run_for(pool, clock, kSchool, 12));  // the address without a learner: past its budget
  ASSERT_TRUE(run_for(pool, clock, learners.client(kSchool, "learner-ada-0001"), 12));  // Ada: past hers
  auto bo = run_for(pool, clock, learners.client(kSchool, "learner-bo-00002"), 1);
  EXPECT_TRUE(bo) << "Bo has a budget of his own";
  auto ada = run_for(pool, clock, learners.client(kSchool, "learner-ada-0001"), 1);
  ASSERT_FALSE(ada);
  EXPECT_EQ(ada.error().code, ErrorCode::rate_limited);
  auto made_up = run_for(pool, clock, learners.client(kSchool, "made-up-learner-1"), 1);
  ASSERT_FALSE(made_up) << "a made-up id spends its address's budget";
  EXPECT_EQ(made_up.error().code, ErrorCode::rate_limited);
}
