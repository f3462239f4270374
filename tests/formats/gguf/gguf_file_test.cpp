// Tests of the GGUF reader (formats/gguf/gguf_file.h): every value type and the alignment are read,
// and each lie a file can tell is refused with a message that names it.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "formats/gguf/gguf_file.h"

using namespace headlab::model::gguf;
using headlab::ErrorCode;

namespace {

// Builds GGUF bytes field by field, so a test can write any lie.
struct Bytes {
  std::string b;
  Bytes& u32(std::uint32_t v) { return raw(&v, 4); }
  Bytes& u64(std::uint64_t v) { return raw(&v, 8); }
  Bytes& f32(float v) { return raw(&v, 4); }
  Bytes& str(const std::string& s) {
    u64(s.size());
    b += s;
    return *this;
  }
  Bytes& raw(const void* p, std::size_t n) {
    b.append(static_cast<const char*>(p), n);
    return *this;
  }
  Bytes& header(std::uint64_t tensors, std::uint64_t kv, std::uint32_t version = 3) { return u32(kMagic).u32(version).u64(tensors).u64(kv); }
  // a tensor info: name, dims, type, offset
  Bytes& tensor(const std::string& name, std::vector<std::uint64_t> ne, std::uint32_t type, std::uint64_t offset) {
    str(name).u32(std::uint32_t(ne.size()));
    for (auto d : ne) u64(d);
    return u32(type).u64(offset);
  }
  Bytes& pad(std::size_t align = 32) {
    b.append((align - b.size() % align) % align, '\0');
    return *this;
  }
  Bytes& zeros(std::size_t n) {
    b.append(n, '\0');
    return *this;
  }
};

headlab::Result<File> parse(const Bytes& x) {
  return file_parse(reinterpret_cast<const unsigned char*>(x.b.data()), x.b.size(), "test.gguf");
}

void expect_error(const Bytes& x, ErrorCode code, const std::string& words) {
  auto f = parse(x);
  ASSERT_FALSE(f) << "accepted a file that should say: " << words;
  EXPECT_EQ(f.error().code, code) << f.error().message;
  EXPECT_NE(f.error().message.find(words), std::string::npos) << f.error().message;
  EXPECT_NE(f.error().message.find("test.gguf"), std::string::npos) << f.error().message;
}

// One F32 tensor "w" of 4 values, and one metadata string.
Bytes good() {
  Bytes x;
  x.header(1, 1).str("general.architecture").u32(8).str("gpt2").tensor("w", {4}, 0, 0).pad();
  for (float v : {1.0f, 2.0f, 3.0f, 4.0f}) x.f32(v);
  return x;
}

}  // namespace

TEST(GgufReader, ReadsMetadataAndTensorInfos) {
  const Bytes x = good();
  auto f = parse(x);
  ASSERT_TRUE(f) << f.error().message;
  EXPECT_EQ(f->version, 3u);
  ASSERT_NE(f->find("general.architecture"), nullptr);
  EXPECT_EQ(f->find("general.architecture")->text, "gpt2");
  const TensorInfo* w = f->find_tensor("w");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->bytes, 16u);
  float v[4];
  std::memcpy(v, f->tensor_data(*w), 16);
  EXPECT_EQ(v[3], 4.0f);
}

TEST(GgufReader, ReadsVersion2AndEveryValueTypeIncludingArrays) {
  Bytes x;
  x.header(0, 13, 2);
  std::uint8_t u8 = 200;
  std::int8_t i8 = -5;
  std::uint16_t u16 = 60000;
  std::int16_t i16 = -30000;
  std::int32_t i32 = -7;
  std::int64_t i64 = -9;
  double f64 = 0.125;
  x.str("a.u8").u32(0).raw(&u8, 1).str("a.i8").u32(1).raw(&i8, 1).str("a.u16").u32(2).raw(&u16, 2);
  x.str("a.i16").u32(3).raw(&i16, 2).str("a.u32").u32(4).u32(4000000000u).str("a.i32").u32(5).raw(&i32, 4);
  x.str("a.f32").u32(6).f32(1.5f).str("a.bool").u32(7).raw("\x01", 1).str("a.str").u32(8).str("hi");
  x.str("a.arr").u32(9).u32(5).u64(3).u32(1).u32(2).u32(3);  // int32 [1, 2, 3]
  x.str("a.u64").u32(10).u64(1ull << 40).str("a.i64").u32(11).raw(&i64, 8).str("a.f64").u32(12).raw(&f64, 8);
  auto f = parse(x);
  ASSERT_TRUE(f) << f.error().message;
  EXPECT_EQ(f->version, 2u);
  EXPECT_EQ(*f->find("a.u8")->as_int(), 200);
  EXPECT_EQ(*f->find("a.i8")->as_int(), -5);
  EXPECT_EQ(*f->find("a.u16")->as_int(), 60000);
  EXPECT_EQ(*f->find("a.i16")->as_int(), -30000);
  EXPECT_EQ(*f->find("a.u32")->as_int(), 4000000000LL);
  EXPECT_EQ(*f->find("a.i32")->as_int(), -7);
  EXPECT_EQ(*f->find("a.f32")->as_number(), 1.5);
  EXPECT_EQ(*f->find("a.bool")->as_bool(), true);
  EXPECT_EQ(f->find("a.str")->text, "hi");
  EXPECT_EQ(f->find("a.arr")->count, 3u);
  EXPECT_EQ(*f->find("a.arr")->element_int(2), 3);
  EXPECT_EQ(*f->find("a.u64")->as_int(), 1LL << 40);
  EXPECT_EQ(*f->find("a.i64")->as_int(), -9);
  EXPECT_EQ(*f->find("a.f64")->as_number(), 0.125);
}

TEST(GgufReader, HonoursGeneralAlignment) {
  Bytes x;
  x.header(1, 1).str("general.alignment").u32(4).u32(64).tensor("w", {4}, 0, 0).pad(64).zeros(16);
  auto f = parse(x);
  ASSERT_TRUE(f) << f.error().message;
  EXPECT_EQ(f->alignment, 64u);
  EXPECT_EQ(f->data_start % 64, 0u);
}

TEST(GgufReader, RefusesAFileThatIsNotGguf) { expect_error(Bytes().u32(0x12345678).u32(3).u64(0).u64(0), ErrorCode::corrupt, "not a GGUF file"); }

TEST(GgufReader, RefusesVersion1AndBigEndianFiles) {
  expect_error(Bytes().header(0, 0, 1), ErrorCode::unsupported, "version 1");
  expect_error(Bytes().header(0, 0, 0x03000000), ErrorCode::unsupported, "big-endian");
  expect_error(Bytes().header(0, 0, 4), ErrorCode::unsupported, "version 4");
}

TEST(GgufReader, RefusesATensorCountLargerThanTheFileCanHold) {
  expect_error(Bytes().header(1ull << 40, 0), ErrorCode::corrupt, "1099511627776 tensors");
  expect_error(Bytes().header(0, 1ull << 50), ErrorCode::corrupt, "metadata values");
}

TEST(GgufReader, RefusesAStringLongerThanTheFile) {
  expect_error(Bytes().header(0, 1).u64(1ull << 60).zeros(16), ErrorCode::corrupt, "bytes long");
  expect_error(Bytes().header(0, 1).str("k").u32(8).u64(1000).raw("abc", 3), ErrorCode::corrupt, "metadata \"k\"'s string");
}

TEST(GgufReader, RefusesAnArrayLongerThanTheFile) {
  expect_error(Bytes().header(0, 1).str("k").u32(9).u32(4).u64(1ull << 61), ErrorCode::corrupt, "array holds");
}

TEST(GgufReader, RefusesUnknownValueTypes) {
  expect_error(Bytes().header(0, 1).str("k").u32(13), ErrorCode::corrupt, "unknown value type 13");
}

TEST(GgufReader, RefusesUnknownAndUnreadTensorTypes) {
  expect_error(Bytes().header(1, 0).tensor("w", {32}, 99, 0).pad().zeros(64), ErrorCode::corrupt, "type 99");
  expect_error(Bytes().header(1, 0).tensor("w", {256}, 16, 0).pad().zeros(256), ErrorCode::unsupported, "IQ2_XXS");
}

TEST(GgufReader, RefusesOffsetsPastTheEnd) {
  expect_error(Bytes().header(1, 0).tensor("w", {4}, 0, 0).pad().zeros(8), ErrorCode::corrupt, "past its end");
  expect_error(Bytes().header(1, 0).tensor("w", {4}, 0, 1ull << 62).pad().zeros(16), ErrorCode::corrupt, "past its end");
}

TEST(GgufReader, RefusesATensorLargerThanTheFile) {
  // 2^62 floats would be 2^64 bytes: refused before the byte count can wrap around
  expect_error(Bytes().header(1, 0).tensor("w", {1ull << 31, 1ull << 31}, 0, 0).pad(), ErrorCode::corrupt,
               "more than the file");
}

TEST(GgufReader, RefusesUnalignedOffsets) {
  expect_error(Bytes().header(1, 0).tensor("w", {4}, 0, 4).pad().zeros(32), ErrorCode::corrupt, "not a multiple of the alignment");
}

TEST(GgufReader, RefusesOverlappingTensors) {
  expect_error(Bytes().header(2, 0).tensor("a", {16}, 0, 0).tensor("b", {4}, 0, 32).pad().zeros(64), ErrorCode::corrupt,
               "\"a\" and \"b\" overlap");
}

TEST(GgufReader, RefusesDimsThatOverflow) {
  expect_error(Bytes().header(1, 0).tensor("w", {1ull << 32, 1ull << 32}, 0, 0).pad(), ErrorCode::corrupt, "overflows");
  expect_error(Bytes().header(1, 0).tensor("w", {0}, 0, 0).pad(), ErrorCode::corrupt, "must be positive");
  expect_error(Bytes().header(1, 0).tensor("w", {1, 1, 1, 1, 1}, 0, 0).pad(), ErrorCode::corrupt, "5 dimensions");
}

TEST(GgufReader, RefusesRowsThatAreNotWholeBlocks) {
  expect_error(Bytes().header(1, 0).tensor("w", {16}, 8, 0).pad().zeros(64), ErrorCode::corrupt, "block of 32");
}

TEST(GgufReader, RefusesDuplicateKeysAndTensors) {
  expect_error(Bytes().header(0, 2).str("k").u32(4).u32(1).str("k").u32(4).u32(2), ErrorCode::corrupt, "\"k\" appears twice");
  expect_error(Bytes().header(2, 0).tensor("w", {8}, 0, 0).tensor("w", {8}, 0, 32).pad().zeros(64), ErrorCode::corrupt,
               "\"w\" appears twice");
}

TEST(GgufReader, RefusesABadAlignment) {
  expect_error(Bytes().header(0, 1).str("general.alignment").u32(4).u32(24), ErrorCode::corrupt, "power of two");
}

TEST(GgufReader, RefusesATruncatedHeader) {
  const Bytes x = good();
  for (std::size_t n : {std::size_t(3), std::size_t(20), std::size_t(30), std::size_t(60)}) {
    Bytes cut;
    cut.b = x.b.substr(0, n);
    auto f = parse(cut);
    EXPECT_FALSE(f) << n;
  }
}

TEST(GgufReader, OpenNamesAMissingFile) {
  auto f = file_open("/nonexistent/model.gguf");
  ASSERT_FALSE(f);
  EXPECT_EQ(f.error().code, ErrorCode::not_found);
}
