// server/api/client_block.h — the key an address-keyed limit counts under. One IPv6 host is
// given a whole /64 (it can send from any of 2^64 addresses), so IPv6 addresses are counted
// by their /64; an IPv4 address (or an IPv4-mapped IPv6 one) by itself.
//
//   client_block("2001:db8:1:2:aaaa::1")  == "2001:db8:1:2::/64"
//   client_block("::ffff:192.0.2.7")      == "192.0.2.7"
//   client_block("192.0.2.7")             == "192.0.2.7"
//
// Anything that is not an address (a test's "client-a") is its own key.
#pragma once

#include <string>

namespace headlab::server {

std::string client_block(const std::string& address);

}  // namespace headlab::server
