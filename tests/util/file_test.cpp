// util/file.h: whole files in and out, each error naming the file.
#include "util/file.h"

#include <stdlib.h>

#include <filesystem>

#include <gtest/gtest.h>

using namespace headlab;
namespace fs = std::filesystem;

namespace {
// A new, empty folder of this test's own (mkdtemp picks an unused name).
fs::path new_folder() {
  std::string pattern = (fs::temp_directory_path() / "headlab-file-test-XXXXXX").string();
  EXPECT_NE(::mkdtemp(pattern.data()), nullptr);
  return pattern;
}
}  // namespace

TEST(FileRead, ReturnsTheBytesFileWriteWrote) {
  const fs::path dir = new_folder();
  const std::string path = (dir / "a.bin").string();
  const std::string bytes("line one\n\0\xff last", 16);
  ASSERT_TRUE(file_write(path, bytes));
  auto back = file_read(path);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back, bytes);
  fs::remove_all(dir);
}

TEST(FileRead, AMissingFileIsNotFoundAndNamesTheFile) {
  auto r = file_read("/nonexistent/headlab/text.txt");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::not_found);
  EXPECT_NE(r.error().message.find("/nonexistent/headlab/text.txt"), std::string::npos) << r.error().message;
}

TEST(FileRead, ADirectoryIsAnIoErrorThatSaysSo) {
  const fs::path dir = new_folder();
  auto r = file_read(dir.string());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::io_error);
  EXPECT_NE(r.error().message.find("directory"), std::string::npos) << r.error().message;
  fs::remove_all(dir);
}

TEST(FileWrite, AFolderThatDoesNotExistIsAnIoErrorNamingTheFile) {
  auto s = file_write("/nonexistent/headlab/out.txt", "x");
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, ErrorCode::io_error);
  EXPECT_NE(s.error().message.find("/nonexistent/headlab/out.txt"), std::string::npos) << s.error().message;
}
