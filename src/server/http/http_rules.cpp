// server/http/http_rules.cpp — header checks by plain string work; every branch has a test in
// tests/server/http/http_rules_test.cpp.
#include "server/http/http_rules.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstring>

#include <arpa/inet.h>

namespace headlab::server {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::optional<std::size_t> parse_size(std::string_view s) {
  if (s.empty() || s.size() > 19) return std::nullopt;
  std::size_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

}  // namespace

bool is_json_content_type(std::string_view content_type) {
  std::string_view type = trim(content_type.substr(0, content_type.find(';')));
  return lower(type) == "application/json";
}

bool origin_allowed(std::string_view origin, std::string_view host, const std::vector<std::string>& allow_origins) {
  if (origin.empty()) return true;
  std::string o = lower(trim(origin));
  if (!host.empty() && o == "http://" + lower(trim(host))) return true;
  return std::any_of(allow_origins.begin(), allow_origins.end(), [&](const std::string& a) { return lower(a) == o; });
}

bool is_loopback_host(std::string_view host) {
  std::string h = lower(trim(host));
  if (h.empty()) return true;
  std::string name = h;
  if (h.front() == '[') {
    auto close = h.find(']');
    if (close == std::string::npos) return false;
    name = h.substr(0, close + 1);
    std::string rest = h.substr(close + 1);
    if (!rest.empty() && (rest.front() != ':' || !parse_size(rest.substr(1)))) return false;
  } else if (auto colon = h.find(':'); colon != std::string::npos) {
    name = h.substr(0, colon);
    if (!parse_size(std::string_view(h).substr(colon + 1))) return false;
  }
  auto dotted = [](const std::string& n) {
    return std::all_of(n.begin(), n.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)) || c == '.'; });
  };
  return name == "localhost" || name == "[::1]" || (name.rfind("127.", 0) == 0 && dotted(name));
}

ByteRange parse_single_range(std::string_view header, std::size_t size) {
  ByteRange none;
  std::string_view h = trim(header);
  if (h.empty() || lower(h.substr(0, 6)) != "bytes=") return none;
  h = trim(h.substr(6));
  if (h.find(',') != std::string_view::npos) return none;  // several ranges: the whole file, never multipart
  auto dash = h.find('-');
  if (dash == std::string_view::npos) return none;
  std::string_view a = trim(h.substr(0, dash)), b = trim(h.substr(dash + 1));
  ByteRange out;
  out.kind = ByteRange::range;
  if (a.empty()) {  // "-N": the last N bytes
    auto n = parse_size(b);
    if (!n) return none;
    if (*n == 0 || size == 0) return {ByteRange::unsatisfiable};
    out.first = size - std::min(*n, size);
    out.last = size - 1;
    return out;
  }
  auto first = parse_size(a);
  if (!first) return none;
  std::optional<std::size_t> last = b.empty() ? std::optional<std::size_t>(size == 0 ? 0 : size - 1) : parse_size(b);
  if (!last || (!b.empty() && *last < *first)) return none;
  if (*first >= size) return {ByteRange::unsatisfiable};
  out.first = *first;
  out.last = std::min(*last, size - 1);
  return out;
}

std::string forwarded_client(std::string_view peer, std::string_view forwarded_for,
                             const std::vector<std::string>& trusted_proxies) {
  if (forwarded_for.empty() || std::find(trusted_proxies.begin(), trusted_proxies.end(), peer) == trusted_proxies.end())
    return std::string(peer);
  auto comma = forwarded_for.rfind(',');
  std::string last(trim(comma == std::string_view::npos ? forwarded_for : forwarded_for.substr(comma + 1)));
  unsigned char scratch[sizeof(in6_addr)];
  if (inet_pton(AF_INET, last.c_str(), scratch) == 1 || inet_pton(AF_INET6, last.c_str(), scratch) == 1) return last;
  return std::string(peer);
}

bool host_allowed(std::string_view host, const std::vector<std::string>& server_names) {
  if (server_names.empty()) return true;
  std::string_view name = host;
  if (!name.empty() && name.front() == '[') {  // "[2001:db8::1]:8080": an IPv6 literal
    return name.find(']') != std::string_view::npos;
  }
  if (auto colon = name.rfind(':'); colon != std::string_view::npos) name = name.substr(0, colon);
  std::string n = lower(name);
  unsigned char scratch[sizeof(in6_addr)];
  if (!n.empty() && inet_pton(AF_INET, n.c_str(), scratch) == 1) return true;
  for (const std::string& allowed : server_names)
    if (lower(allowed) == n) return true;
  return false;
}

std::string client_block(std::string_view address) {
  std::string a(address);
  if (a.size() >= 2 && a.front() == '[' && a.back() == ']') a = a.substr(1, a.size() - 2);
  if (auto zone = a.find('%'); zone != std::string::npos) a = a.substr(0, zone);  // fe80::1%eth0
  unsigned char bytes[16];
  if (inet_pton(AF_INET, a.c_str(), bytes) == 1) return a;
  if (inet_pton(AF_INET6, a.c_str(), bytes) != 1) return std::string(address);
  char text[INET6_ADDRSTRLEN];
  static const unsigned char kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (std::memcmp(bytes, kMapped, sizeof kMapped) == 0) {  // "::ffff:192.0.2.7" is 192.0.2.7
    inet_ntop(AF_INET, bytes + 12, text, sizeof text);
    return text;
  }
  std::memset(bytes + 8, 0, 8);  // the /64: the first 8 bytes
  inet_ntop(AF_INET6, bytes, text, sizeof text);
  return std::string(text) + "/64";
}

bool accepts_encoding(std::string_view accept_encoding, std::string_view coding) {
  std::string_view rest = accept_encoding;
  while (!rest.empty()) {
    auto comma = rest.find(',');
    std::string_view item = trim(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    auto semi = item.find(';');
    std::string name = lower(trim(item.substr(0, semi)));
    if (name != lower(coding)) continue;
    if (semi == std::string_view::npos) return true;
    std::string params = lower(item.substr(semi + 1));
    auto q = params.find("q=");
    if (q == std::string::npos) return true;
    std::string_view value = trim(std::string_view(params).substr(q + 2));
    return !(value == "0" || value == "0." || value.find_first_not_of("0.") == std::string_view::npos);
  }
  return false;
}

}  // namespace headlab::server
