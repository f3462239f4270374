// server/http/http_rules.h — the HTTP layer's checks on a request, as pure functions of its
// headers (no library types, so they are tested without a socket): same-origin writes, the
// Host check against DNS rebinding, Content-Type, and the one byte range static files honour.
//
//   if (!is_json_content_type(content_type)) -> 415
//   if (!origin_allowed(origin, host, allow))  -> 403
//   auto range = parse_single_range("bytes=0-99", 1000);  // {0, 99}; multipart: none
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace headlab::server {

// "application/json" with any parameters ("; charset=utf-8"), any letter case.
bool is_json_content_type(std::string_view content_type);

// True when a request may come from `origin` (the Origin header; empty: not sent, as from
// curl or the same origin on GET): it is "http://" + the Host header, or on the allow list.
bool origin_allowed(std::string_view origin, std::string_view host, const std::vector<std::string>& allow_origins);

// True when the Host header names this machine's loopback ("127.0.0.1", "localhost",
// "[::1]", with or without a port), or is empty (HTTP/1.0). A server bound to loopback
// refuses other names: a web page whose DNS name was rebound to 127.0.0.1 sends its own.
bool is_loopback_host(std::string_view host);

// True when a server listening beyond loopback may answer a request with this Host header:
// `server_names` is empty (no list: any), or the Host's name (without its port, any letter
// case) is on it, or it is an IP address literal (a page whose DNS name was rebound sends its
// name, never an address).
bool host_allowed(std::string_view host, const std::vector<std::string>& server_names);

// The key a client is counted under by per-client limits and turns: an IPv4 address as it
// is, an IPv6 address by its /64 (one subscriber's whole block: "2001:db8:1:2::/64"), any
// other text as it is.
std::string client_block(std::string_view address);

// A Range header asking for one range of a `size`-byte file. The result:
//   none       — no Range header, or one this server ignores (not bytes, several ranges):
//                answer the whole file with 200
//   range      — first..last inclusive: answer 206
//   unsatisfiable — one range, outside the file: answer 416
struct ByteRange {
  enum Kind { none, range, unsatisfiable } kind = none;
  std::size_t first = 0, last = 0;
};
ByteRange parse_single_range(std::string_view header, std::size_t size);

// The address a request comes from, for per-address limits and turns: `peer` (the TCP
// connection's), unless peer is one of `trusted_proxies` (a load balancer, --trusted-proxy)
// and sent X-Forwarded-For: then the last address in that header, the one the proxy itself
// saw (nginx's $proxy_add_x_forwarded_for appends it; the entries before it are the
// client's own word). An entry that is not an IPv4 or IPv6 address leaves peer.
std::string forwarded_client(std::string_view peer, std::string_view forwarded_for,
                             const std::vector<std::string>& trusted_proxies);

// Whether an Accept-Encoding header accepts `coding` ("br", "gzip"), q=0 meaning no.
bool accepts_encoding(std::string_view accept_encoding, std::string_view coding);

}  // namespace headlab::server
