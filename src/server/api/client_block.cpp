// server/api/client_block.cpp — inet_pton/inet_ntop: the /64 is the first 8 bytes, the rest zeroed.
#include "server/api/client_block.h"

#include <arpa/inet.h>

#include <cstring>

namespace headlab::server {

std::string client_block(const std::string& address) {
  std::string a = address;
  if (a.size() >= 2 && a.front() == '[' && a.back() == ']') a = a.substr(1, a.size() - 2);
  if (auto zone = a.find('%'); zone != std::string::npos) a = a.substr(0, zone);  // fe80::1%eth0
  unsigned char bytes[16];
  if (inet_pton(AF_INET, a.c_str(), bytes) == 1) return a;
  if (inet_pton(AF_INET6, a.c_str(), bytes) != 1) return address;
  char text[INET6_ADDRSTRLEN];
  static const unsigned char kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (std::memcmp(bytes, kMapped, sizeof kMapped) == 0) {
    inet_ntop(AF_INET, bytes + 12, text, sizeof text);
    return text;
  }
  std::memset(bytes + 8, 0, 8);
  inet_ntop(AF_INET6, bytes, text, sizeof text);
  return std::string(text) + "/64";
}

}  // namespace headlab::server
