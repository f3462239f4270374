// util/file.h: whole files in and out, each error naming the file.
#include "util/file.h"

#include <stdlib.h>
#include <sys/stat.h>

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

TEST(FileRead, AFifoIsRefusedByNameAtOnceInsteadOfWaitingForAWriter) {
  const fs::path dir = new_folder();
  const std::string path = (dir / "config.json").string();
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  auto r = file_read(path);  // without the check, this open() blocks for ever
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::io_error);
  EXPECT_NE(r.error().message.find("it is a FIFO"), std::string::npos) << r.error().message;
  fs::remove_all(dir);
}

TEST(FileRead, ADeviceThatNeverEndsIsRefusedByNameBeforeAByteIsRead) {
  auto r = file_read("/dev/zero");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("/dev/zero: cannot read: it is a device"), std::string::npos) << r.error().message;
  const fs::path dir = new_folder();  // the same through a symbolic link named like a config
  fs::create_symlink("/dev/zero", dir / "config.json");
  r = file_read((dir / "config.json").string());
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("it is a device"), std::string::npos) << r.error().message;
  fs::remove_all(dir);
}

TEST(FileRead, AFileLargerThanTheCallersBoundIsTooLongAndSaysBothSizes) {
  const fs::path dir = new_folder();
  const std::string path = (dir / "config.json").string();
  ASSERT_TRUE(file_write(path, std::string(3000, ' ')));
  auto r = file_read(path, 1024);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::too_long);
  EXPECT_NE(r.error().message.find("the file is 3 KB; at most 1 KB are read"), std::string::npos) << r.error().message;
  auto ok = file_read(path, 3000);  // exactly the bound is read
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ(ok->size(), 3000u);
  fs::remove_all(dir);
}
