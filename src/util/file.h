// util/file.h — whole files in and out, with errors that name the file.
//
//   Result<std::string> text = file_read(dir + "/config.json");
//   if (!text) return tl::unexpected(text.error());   // "models/x/config.json: cannot open: No such file ..."
//   Status s = file_write(out_dir + "/train_log.csv", csv);
//
// file_read: not_found when the file does not exist, io_error when it exists but cannot be
// opened or read (permissions, a failing disk) or is not a regular file (a directory, a FIFO
// that would block for ever, a device such as /dev/zero that never ends: each refused by
// name), too_long when it holds more than max_bytes (the caller's bound for its kind of file). file_write replaces the file;
// io_error when it cannot be created or written to the end (disk full).
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <filesystem>

#include "util/result.h"

namespace headlab {

// The default bound of file_read: larger than any file headlab reads whole.
inline constexpr std::uint64_t kFileReadMaxBytes = std::uint64_t(4) << 30;

// "1.5 GB", "310 MB", "12 KB", "7 bytes": a size for a message.
inline std::string file_size_text(std::uint64_t bytes) {
  char buf[32];
  if (bytes >= (1ull << 30)) std::snprintf(buf, sizeof buf, "%.1f GB", double(bytes) / double(1ull << 30));
  else if (bytes >= (1ull << 20)) std::snprintf(buf, sizeof buf, "%.0f MB", double(bytes) / double(1ull << 20));
  else if (bytes >= 1024) std::snprintf(buf, sizeof buf, "%.0f KB", double(bytes) / 1024.0);
  else std::snprintf(buf, sizeof buf, "%llu bytes", static_cast<unsigned long long>(bytes));
  return buf;
}

// ok when `path` is a regular file (after symbolic links); else why not, by name.
inline Status file_check_regular(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  switch (st.type()) {
    case fs::file_type::regular: return {};
    case fs::file_type::not_found: return make_error(ErrorCode::not_found, path + ": cannot open: no such file");
    case fs::file_type::directory: return make_error(ErrorCode::io_error, path + ": cannot read: it is a directory");
    case fs::file_type::fifo:
      return make_error(ErrorCode::io_error, path + ": cannot read: it is a FIFO (a named pipe), not a file; give a regular file");
    case fs::file_type::character:
    case fs::file_type::block:
      return make_error(ErrorCode::io_error, path + ": cannot read: it is a device, not a file; give a regular file");
    case fs::file_type::socket:
      return make_error(ErrorCode::io_error, path + ": cannot read: it is a socket, not a file; give a regular file");
    default:
      if (ec) return make_error(ErrorCode::io_error, path + ": cannot open: " + ec.message());
      return make_error(ErrorCode::io_error, path + ": cannot read: not a regular file");
  }
}

inline Result<std::string> file_read(const std::string& path, std::uint64_t max_bytes = kFileReadMaxBytes) {
  if (auto s = file_check_regular(path); !s) return tl::unexpected(s.error());
  std::error_code ec;
  const std::uint64_t size = std::filesystem::file_size(path, ec);
  if (!ec && size > max_bytes)
    return make_error(ErrorCode::too_long, path + ": the file is " + file_size_text(size) + "; at most " +
                                               file_size_text(max_bytes) + " are read for a file of its kind");
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(ErrorCode::io_error, path + ": cannot open: " + std::strerror(errno ? errno : EACCES));
  // read at most max_bytes + 1: a file that grows while it is read is still bounded
  std::string out;
  char buf[1 << 16];
  while (in) {
    in.read(buf, sizeof buf);
    out.append(buf, static_cast<std::size_t>(in.gcount()));
    if (out.size() > max_bytes)
      return make_error(ErrorCode::too_long, path + ": the file holds more than " + file_size_text(max_bytes) +
                                                 "; at most that is read for a file of its kind");
  }
  if (in.bad()) return make_error(ErrorCode::io_error, path + ": read failed");
  return out;
}

inline Status file_write(const std::string& path, std::string_view contents) {
  errno = 0;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return make_error(ErrorCode::io_error, path + ": cannot open for writing: " + std::strerror(errno ? errno : EACCES));
  out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
  out.close();
  if (!out) return make_error(ErrorCode::io_error, path + ": write failed (disk full?)");
  return {};
}

}  // namespace headlab
