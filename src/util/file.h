// util/file.h — whole files in and out, with errors that name the file.
//
//   Result<std::string> text = file_read(dir + "/config.json");
//   if (!text) return tl::unexpected(text.error());   // "models/x/config.json: cannot open: No such file ..."
//   Status s = file_write(out_dir + "/train_log.csv", csv);
//
// file_read: not_found when the file does not exist, io_error when it exists but cannot be
// opened or read (permissions, a directory, a failing disk). file_write replaces the file;
// io_error when it cannot be created or written to the end (disk full).
#pragma once

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <filesystem>

#include "util/result.h"

namespace headlab {

inline Result<std::string> file_read(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    return make_error(ErrorCode::not_found, path + ": cannot open: no such file");
  if (std::filesystem::is_directory(path, ec))
    return make_error(ErrorCode::io_error, path + ": cannot read: it is a directory");
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(ErrorCode::io_error, path + ": cannot open: " + std::strerror(errno ? errno : EACCES));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return make_error(ErrorCode::io_error, path + ": read failed");
  return std::move(ss).str();
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
