// server/http/http_gzip.h — gzip for API answers, at zlib's fastest level (1): a 1 MB JSON answer
// shrinks about tenfold in a few milliseconds. Done on the thread of the request that made the
// answer, so its cost is counted in that request's work.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace headlab::server {

// The gzip stream of `data`; none when zlib fails (then send it uncompressed).
std::optional<std::string> gzip_fast(std::string_view data);

}  // namespace headlab::server
