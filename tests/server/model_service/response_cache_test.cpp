#include "server/model_service/response_cache.h"

#include <gtest/gtest.h>

#include <thread>

using namespace headlab::server;

TEST(ResponseCache, ReturnsWhatWasPut) {
  ResponseCache c(1000);
  c.put("a", "alpha");
  ASSERT_TRUE(c.get("a"));
  EXPECT_EQ(*c.get("a")->body, "alpha");
  EXPECT_FALSE(c.get("b"));
}

TEST(ResponseCache, EvictsTheLeastRecentlyUsedToStayWithinItsBytes) {
  ResponseCache c(400);
  c.put("a", std::string(90, 'a'));
  c.put("b", std::string(90, 'b'));
  c.put("c", std::string(90, 'c'));
  ASSERT_TRUE(c.get("a"));  // a is now the most recent
  c.put("d", std::string(90, 'd'));
  c.put("e", std::string(90, 'e'));
  EXPECT_LE(c.bytes(), 400u);
  EXPECT_TRUE(c.get("a"));
  EXPECT_FALSE(c.get("b"));
  EXPECT_TRUE(c.get("e"));
}

TEST(ResponseCache, DoesNotKeepAnswersLargerThanAQuarterOfItsBound) {
  ResponseCache c(400);
  c.put("big", std::string(200, 'x'));
  EXPECT_FALSE(c.get("big"));
  EXPECT_EQ(c.bytes(), 0u);
}

TEST(ResponseCache, KeepsOneCopyThatEveryHitShares) {
  ResponseCache c(1 << 20);
  c.put("a", CachedAnswer{std::make_shared<const std::string>(1000, 'x'), std::make_shared<const std::string>("z")});
  auto first = c.get("a"), second = c.get("a");
  ASSERT_TRUE(first && second);
  EXPECT_EQ(first->body.get(), second->body.get());  // the same bytes, not a copy
  EXPECT_EQ(*first->gzip, "z");
  EXPECT_EQ(c.bytes(), 1u + 1000u + 1u);  // key, body and its gzip
}

TEST(ResponseCache, RequestsInFlightFollowTheFirstAndGetItsAnswerWhichIsKeptOnce) {
  ResponseCache c(1000);
  auto lead = c.flight("k");
  auto follow = c.flight("k");
  EXPECT_TRUE(lead.lead);
  EXPECT_FALSE(follow.lead);
  std::optional<CachedAnswer> got;
  std::thread waiter([&] { got = follow.wait(std::chrono::steady_clock::now() + std::chrono::seconds(20)); });
  c.land("k", lead, CachedAnswer{std::make_shared<const std::string>("answer"), nullptr});
  waiter.join();
  ASSERT_TRUE(got);
  EXPECT_EQ(got->body, c.get("k")->body);  // the same bytes, shared
  EXPECT_TRUE(c.flight("k").lead);  // landed: the next request leads its own flight (after the cache)
}

TEST(ResponseCache, FollowersOfAFailedLeadAreToldSoAndComputeTheirOwn) {
  ResponseCache c(1000);
  auto lead = c.flight("k");
  auto follow = c.flight("k");
  c.land("k", lead, std::nullopt);
  EXPECT_FALSE(follow.wait(std::chrono::steady_clock::now() + std::chrono::seconds(20)));
  EXPECT_FALSE(c.get("k"));
  auto late = c.flight("slow");
  auto late_follow = c.flight("slow");
  EXPECT_FALSE(late_follow.wait(std::chrono::steady_clock::now() + std::chrono::milliseconds(5)));  // deadline
}
