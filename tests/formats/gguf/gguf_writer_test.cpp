// Tests of the GGUF writer (formats/gguf/gguf_writer.h): what it writes, the reader reads back.
#include <gtest/gtest.h>

#include <filesystem>
#include <unistd.h>

#include "formats/gguf/gguf_file.h"
#include "formats/gguf/gguf_writer.h"

using namespace headlab::model::gguf;

TEST(GgufWriter, WritesWhatTheReaderReadsBack) {
  const std::string path = (std::filesystem::temp_directory_path() / ("headlab-gguf-" + std::to_string(::getpid()) + "-writer.gguf")).string();
  const std::vector<float> a = {1, -2, 3.5f, 4, 5, 6}, b = {0.5f, 0.25f};
  std::vector<Metadata> meta = {{"general.architecture", meta_string("gpt2")},
                                {"x.count", meta_u32(7)},
                                {"x.flag", meta_bool(true)},
                                {"x.names", meta_strings({"a", "b c"})},
                                {"x.scores", meta_f32s({0.5f, -1})}};
  ASSERT_TRUE(file_write(path, meta, {{"a", {3, 2}, TensorType::f16, a.data()}, {"b", {2}, TensorType::f32, b.data()}}));
  auto f = file_open(path);
  ASSERT_TRUE(f) << f.error().message;
  EXPECT_EQ(*f->find("x.count")->as_int(), 7);
  EXPECT_EQ(f->find("x.names")->strings.at(1), "b c");
  EXPECT_EQ(*f->find("x.scores")->element_number(1), -1.0);
  const TensorInfo* t = f->find_tensor("a");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->rows(), 2);
  EXPECT_EQ(t->cols(), 3);
  EXPECT_EQ(t->offset % 32, 0u);
  EXPECT_EQ(f->find_tensor("b")->offset % 32, 0u);
}
