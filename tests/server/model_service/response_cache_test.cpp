#include "server/model_service/response_cache.h"

#include <gtest/gtest.h>

using namespace headlab::server;

TEST(ResponseCache, ReturnsWhatWasPut) {
  ResponseCache c(1000);
  c.put("a", "alpha");
  EXPECT_EQ(c.get("a"), "alpha");
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
