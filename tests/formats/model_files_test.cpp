// Tests for formats/model_files.h: the one door from a path to a model says what is wrong with
// the path itself before a loader blames what it expected there.
#include "formats/model_files.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

using namespace headlab::model;
using headlab::ErrorCode;

TEST(ModelFiles, AMissingPathIsNoSuchFileOrDirectoryNotNotADirectory) {
  for (const std::string path : {"/nonexistent/model", "/nonexistent/model.gguf"}) {
    auto p = model_load(path);
    ASSERT_FALSE(p) << path;
    EXPECT_EQ(p.error().code, ErrorCode::not_found);
    EXPECT_NE(p.error().message.find(path + ": no such file or directory (a model is a Hugging Face folder or a "
                                            ".gguf file)"),
              std::string::npos)
        << p.error().message;
    EXPECT_EQ(p.error().message.find("not a directory"), std::string::npos) << p.error().message;
    auto d = model_describe(path);
    ASSERT_FALSE(d) << path;
    EXPECT_NE(d.error().message.find(path + ": no such file or directory"), std::string::npos) << d.error().message;
  }
}

TEST(ModelFiles, AFileThatIsNotGgufIsNotADirectory) {
  const std::string file = std::string(HEADLAB_BINARY_DIR) + "/tmp_model_files_plain.bin";
  std::ofstream(file) << "not a model";
  auto p = model_load(file);
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().message.find(file + ": not a directory"), std::string::npos) << p.error().message;
  std::filesystem::remove(file);
}
