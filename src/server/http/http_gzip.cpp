// server/http/http_gzip.cpp — one deflate call into a buffer of deflateBound's size.
#include "server/http/http_gzip.h"

#include <zlib.h>

namespace headlab::server {

std::optional<std::string> gzip_fast(std::string_view data) {
  z_stream z{};
  // 15 + 16: a gzip header and trailer instead of zlib's
  if (deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) return std::nullopt;
  std::string out(deflateBound(&z, static_cast<uLong>(data.size())) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  int rc = deflate(&z, Z_FINISH);
  std::size_t written = out.size() - z.avail_out;
  deflateEnd(&z);
  if (rc != Z_STREAM_END) return std::nullopt;
  out.resize(written);
  return out;
}

}  // namespace headlab::server
