// The HTTP layer's header checks, without a socket.
#include "server/http/http_rules.h"

#include <gtest/gtest.h>

using namespace headlab::server;

TEST(HttpRules, JsonContentTypeAllowsParametersAndAnyCase) {
  EXPECT_TRUE(is_json_content_type("application/json"));
  EXPECT_TRUE(is_json_content_type("Application/JSON; charset=utf-8"));
  EXPECT_FALSE(is_json_content_type("text/plain"));
  EXPECT_FALSE(is_json_content_type("application/x-www-form-urlencoded"));
  EXPECT_FALSE(is_json_content_type(""));
  EXPECT_FALSE(is_json_content_type("application/jsonp"));
}

TEST(HttpRules, OnlyTheServersOwnOriginOrAnAllowedOneMayWrite) {
  EXPECT_TRUE(origin_allowed("", "127.0.0.1:8080", {}));  // no Origin: curl, or a same-origin GET
  EXPECT_TRUE(origin_allowed("http://127.0.0.1:8080", "127.0.0.1:8080", {}));
  EXPECT_TRUE(origin_allowed("HTTP://Class.Example:9000", "class.example:9000", {}));
  EXPECT_FALSE(origin_allowed("http://evil.example", "127.0.0.1:8080", {}));
  EXPECT_FALSE(origin_allowed("null", "127.0.0.1:8080", {}));
  EXPECT_FALSE(origin_allowed("http://127.0.0.1:8081", "127.0.0.1:8080", {}));
  EXPECT_TRUE(origin_allowed("http://localhost:5173", "127.0.0.1:8080", {"http://localhost:5173"}));
}

TEST(HttpRules, LoopbackHostsAreTheOnlyOnesALoopbackServerAnswers) {
  for (const char* h : {"", "127.0.0.1", "127.0.0.1:8080", "localhost:8080", "LOCALHOST", "[::1]:8080", "127.0.0.2"})
    EXPECT_TRUE(is_loopback_host(h)) << h;
  for (const char* h : {"evil.example", "evil.example:8080", "127.0.0.1.evil.example", "localhost.evil.example",
                        "localhost:80x", "[::1]x", "10.0.0.1:8080"})
    EXPECT_FALSE(is_loopback_host(h)) << h;
}

TEST(HttpRules, OneRangeIsHonouredAndSeveralAreIgnored) {
  auto r = parse_single_range("bytes=0-9", 100);
  EXPECT_EQ(r.kind, ByteRange::range);
  EXPECT_EQ(r.first, 0u);
  EXPECT_EQ(r.last, 9u);
  r = parse_single_range("bytes=90-", 100);
  EXPECT_EQ(r.kind, ByteRange::range);
  EXPECT_EQ(r.first, 90u);
  EXPECT_EQ(r.last, 99u);
  r = parse_single_range("bytes=-10", 100);
  EXPECT_EQ(r.first, 90u);
  r = parse_single_range("bytes=50-1000", 100);
  EXPECT_EQ(r.last, 99u);
  EXPECT_EQ(parse_single_range("bytes=0-,0-,0-", 100).kind, ByteRange::none);  // never multipart
  EXPECT_EQ(parse_single_range("bytes=0-1,5-6", 100).kind, ByteRange::none);
  EXPECT_EQ(parse_single_range("items=0-1", 100).kind, ByteRange::none);
  EXPECT_EQ(parse_single_range("bytes=9-1", 100).kind, ByteRange::none);
  EXPECT_EQ(parse_single_range("bytes=x-1", 100).kind, ByteRange::none);
  EXPECT_EQ(parse_single_range("bytes=99999999999999999999999-", 100).kind, ByteRange::none);
  EXPECT_EQ(parse_single_range("bytes=100-", 100).kind, ByteRange::unsatisfiable);
  EXPECT_EQ(parse_single_range("bytes=-0", 100).kind, ByteRange::unsatisfiable);
}

TEST(HttpRules, AcceptEncodingHonoursQZero) {
  EXPECT_TRUE(accepts_encoding("gzip, deflate, br", "br"));
  EXPECT_TRUE(accepts_encoding("gzip;q=0.5", "gzip"));
  EXPECT_FALSE(accepts_encoding("gzip;q=0", "gzip"));
  EXPECT_FALSE(accepts_encoding("gzip;q=0.000", "gzip"));
  EXPECT_FALSE(accepts_encoding("identity", "gzip"));
  EXPECT_FALSE(accepts_encoding("", "br"));
}

TEST(HttpRules, OnlyATrustedProxysLastForwardedForAddressReplacesThePeer) {
  const std::vector<std::string> proxy = {"127.0.0.1"};
  EXPECT_EQ(forwarded_client("127.0.0.1", "203.0.113.7", proxy), "203.0.113.7");
  // the entries before the last are the client's own word: a learner could write anything there
  EXPECT_EQ(forwarded_client("127.0.0.1", "10.9.9.9, 203.0.113.7", proxy), "203.0.113.7");
  EXPECT_EQ(forwarded_client("127.0.0.1", "  2001:db8::7 ", proxy), "2001:db8::7");
  EXPECT_EQ(forwarded_client("127.0.0.1", "", proxy), "127.0.0.1");
  EXPECT_EQ(forwarded_client("127.0.0.1", "203.0.113.7, not-an-address", proxy), "127.0.0.1");
  EXPECT_EQ(forwarded_client("127.0.0.1", "203.0.113.7:5123", proxy), "127.0.0.1");
  // from anyone else, the header is ignored
  EXPECT_EQ(forwarded_client("198.51.100.4", "203.0.113.7", proxy), "198.51.100.4");
  EXPECT_EQ(forwarded_client("127.0.0.1", "203.0.113.7", {}), "127.0.0.1");
}

TEST(HttpRules, AServerBeyondLoopbackAnswersOnlyItsNamesAndAddresses) {
  const std::vector<std::string> names = {"class.school.example"};
  EXPECT_TRUE(host_allowed("class.school.example", names));
  EXPECT_TRUE(host_allowed("CLASS.School.example:8080", names));
  EXPECT_TRUE(host_allowed("192.0.2.10:8080", names)) << "an address is never a rebound name";
  EXPECT_TRUE(host_allowed("[2001:db8::10]:8080", names));
  EXPECT_FALSE(host_allowed("attacker.example", names)) << "a page whose name was rebound to this address";
  EXPECT_FALSE(host_allowed("class.school.example.attacker.example", names));
  EXPECT_FALSE(host_allowed("", names));
  EXPECT_TRUE(host_allowed("anything.example", {})) << "no --server-name: any";
}
