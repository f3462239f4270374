// tests/server/http/client_block_test.cpp — the key address-keyed limits count under.
#include "server/http/http_rules.h"

#include <gtest/gtest.h>

using headlab::server::client_block;

TEST(ClientBlock, CountsAnIpv6AddressByItsSlash64) {
  EXPECT_EQ(client_block("2001:db8:1:2:aaaa:bbbb:cccc:1"), "2001:db8:1:2::/64");
  EXPECT_EQ(client_block("2001:db8:1:2::ffff"), client_block("2001:db8:1:2:1:2:3:4"));
  EXPECT_NE(client_block("2001:db8:1:2::1"), client_block("2001:db8:1:3::1"));
  EXPECT_EQ(client_block("[2001:db8::1]"), "2001:db8::/64");
  EXPECT_EQ(client_block("fe80::1%eth0"), "fe80::/64");
}

TEST(ClientBlock, KeepsIpv4AndUnwrapsMappedAddresses) {
  EXPECT_EQ(client_block("192.0.2.7"), "192.0.2.7");
  EXPECT_EQ(client_block("::ffff:192.0.2.7"), "192.0.2.7");
}

TEST(ClientBlock, LeavesWhatIsNotAnAddressAsItIs) {
  EXPECT_EQ(client_block("client-a"), "client-a");
  EXPECT_EQ(client_block(""), "");
}
