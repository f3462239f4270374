// Tests for formats/safetensors.h: round trips in each dtype, and every way a lying or
// broken file is caught (each error names the file and the tensor).
#include "formats/safetensors.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

using namespace headlab::model;
using headlab::ErrorCode;

namespace {

// A file from a header text and a data size (data bytes are zeros).
std::vector<unsigned char> make_file(const std::string& header, std::size_t data_bytes, std::uint64_t claimed_len = 0) {
  std::uint64_t n = claimed_len ? claimed_len : header.size();
  std::vector<unsigned char> f(8 + header.size() + data_bytes, 0);
  for (int i = 0; i < 8; i++) f[i] = static_cast<unsigned char>(n >> (8 * i));
  for (std::size_t i = 0; i < header.size(); i++) f[8 + i] = static_cast<unsigned char>(header[i]);
  return f;
}

headlab::Error parse_error(const std::vector<unsigned char>& f) {
  auto r = safetensors_parse(f.data(), f.size(), "bad.safetensors");
  EXPECT_FALSE(r);
  if (r) return {};
  EXPECT_EQ(r.error().message.rfind("bad.safetensors: ", 0), 0u) << r.error().message;
  return r.error();
}

std::string tmp_path(const std::string& name) { return std::string(HEADLAB_BINARY_DIR) + "/tmp_" + name; }

}  // namespace

TEST(SafetensorsReader, ReadsAValidFile) {
  auto f = make_file(R"({"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},)"
                     R"("b":{"dtype":"F16","shape":[],"data_offsets":[24,26]}})",
                     26);
  auto r = safetensors_parse(f.data(), f.size(), "ok.safetensors");
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->tensors.size(), 2u);
  EXPECT_EQ(r->find("a")->numel(), 6);
  EXPECT_EQ(r->find("b")->numel(), 1);  // a scalar
  EXPECT_EQ(r->metadata.at("format"), "pt");
  EXPECT_EQ(r->find("c"), nullptr);
}

TEST(SafetensorsReader, RefusesADirectoryByName) {
  const std::string d = std::string(HEADLAB_BINARY_DIR) + "/tmp_safetensors_dir.safetensors";
  std::filesystem::create_directories(d);
  for (auto r : {safetensors_open(d), safetensors_read(d)}) {
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().message, d + ": cannot read: it is a directory");
  }
  std::filesystem::remove_all(d);
}

TEST(SafetensorsReader, RejectsAFileShorterThanItsHeaderLength) {
  EXPECT_NE(parse_error({1, 2, 3}).message.find("truncated"), std::string::npos);
  auto f = make_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 4, 5000);
  EXPECT_NE(parse_error(f).message.find("runs beyond the end of the file"), std::string::npos);
  auto g = make_file("{}", 0, std::uint64_t(1) << 40);
  EXPECT_NE(parse_error(g).message.find("larger than 100 MB"), std::string::npos);
}

TEST(SafetensorsReader, RejectsABrokenHeader) {
  EXPECT_NE(parse_error(make_file("{not json", 0)).message.find("not valid JSON"), std::string::npos);
  EXPECT_NE(parse_error(make_file("[1,2]", 0)).message.find("not a JSON object"), std::string::npos);
  EXPECT_NE(parse_error(make_file(R"({"a":3})", 0)).message.find("entry is not an object"), std::string::npos);
  EXPECT_NE(parse_error(make_file(R"({"a":{"shape":[1],"data_offsets":[0,4]}})", 4)).message.find("missing dtype"),
            std::string::npos);
  EXPECT_NE(parse_error(make_file(R"({"a":{"dtype":"F32","data_offsets":[0,4]}})", 4)).message.find("missing shape"),
            std::string::npos);
  EXPECT_NE(parse_error(make_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0]}})", 4)).message.find("data_offsets"),
            std::string::npos);
  EXPECT_NE(parse_error(make_file(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4)).message.find("negative"),
            std::string::npos);
  EXPECT_NE(parse_error(make_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[-4,0]}})", 4)).message.find("non-negative"),
            std::string::npos);
  EXPECT_NE(parse_error(make_file(R"({"__metadata__":{"k":1}})", 0)).message.find("not a string"), std::string::npos);
  EXPECT_NE(parse_error(make_file(R"({"__metadata__":[]})", 0)).message.find("__metadata__ is not an object"),
            std::string::npos);
  EXPECT_NE(parse_error(make_file(R"({"a":{"dtype":"F32","shape":[1099511627776,1099511627776],"data_offsets":[0,4]}})", 4))
                .message.find("implausibly large"),
            std::string::npos);
}

TEST(SafetensorsReader, RejectsAnUnknownDtype) {
  auto e = parse_error(make_file(R"({"w":{"dtype":"F8_E4M3","shape":[1],"data_offsets":[0,1]}})", 1));
  EXPECT_EQ(e.code, ErrorCode::unsupported);
  EXPECT_NE(e.message.find("tensor \"w\": unknown dtype \"F8_E4M3\""), std::string::npos) << e.message;
}

TEST(SafetensorsReader, RejectsShapeTimesDtypeThatDisagreesWithTheOffsets) {
  auto e = parse_error(make_file(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8));
  EXPECT_NE(e.message.find("tensor \"w\": shape x dtype is 12 bytes but data_offsets span 8"), std::string::npos)
      << e.message;
}

TEST(SafetensorsReader, RejectsOffsetsOutOfRangeOverlappingOrLeavingGaps) {
  EXPECT_NE(parse_error(make_file(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 4)).message.find("beyond the data"),
            std::string::npos);
  EXPECT_NE(parse_error(make_file(R"({"w":{"dtype":"F32","shape":[0],"data_offsets":[8,4]}})", 8)).message.find("begin > end"),
            std::string::npos);
  EXPECT_NE(parse_error(make_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                  R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                                  12))
                .message.find("overlaps"),
            std::string::npos);
  EXPECT_NE(parse_error(make_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8)).message.find("a gap of 4 bytes"),
            std::string::npos);
  EXPECT_NE(parse_error(make_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 8)).message.find("belong to none"),
            std::string::npos);
}

TEST(SafetensorsReader, MissingFileIsNotFound) {
  auto r = safetensors_read("/nonexistent/model.safetensors");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::not_found);
  EXPECT_NE(r.error().message.find("/nonexistent/model.safetensors"), std::string::npos);
  EXPECT_EQ(safetensors_open("/nonexistent/model.safetensors").error().code, ErrorCode::not_found);
}

TEST(SafetensorsReader, IntegerTensorsAreNotConvertedToFloat) {
  auto f = make_file(R"({"ids":{"dtype":"I64","shape":[2],"data_offsets":[0,16]}})", 16);
  auto r = safetensors_parse(f.data(), f.size(), "ids.safetensors");
  ASSERT_TRUE(r);
  float out[2];
  auto s = safetensors_to_f32(*r, r->tensors[0], out);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, ErrorCode::unsupported);
}

TEST(SafetensorsWriter, RoundTripsInEachDtype) {
  std::vector<float> a = {0.0f, 1.0f, -2.5f, 3.14159f, 1e-3f, -65504.0f, 6.1e-5f, 1e-7f};
  for (Dtype d : {Dtype::F32, Dtype::F16, Dtype::BF16}) {
    const std::string path = tmp_path("roundtrip.safetensors");
    ASSERT_TRUE(safetensors_write(path, {{"a", {2, 4}, a.data()}}, d, {{"note", "x"}}));
    for (bool lazy : {false, true}) {
      auto r = lazy ? safetensors_open(path) : safetensors_read(path);
      ASSERT_TRUE(r) << r.error().message;
      EXPECT_EQ(r->metadata.at("note"), "x");
      const SafetensorsTensor* t = r->find("a");
      ASSERT_NE(t, nullptr);
      EXPECT_EQ(t->dtype, d);
      EXPECT_EQ(t->shape, (std::vector<std::int64_t>{2, 4}));
      std::vector<float> back(8);
      ASSERT_TRUE(safetensors_to_f32(*r, *t, back.data()));
      const double rel = d == Dtype::F32 ? 0 : d == Dtype::F16 ? 1.0 / 2048 : 1.0 / 256;
      for (int i = 0; i < 8; i++) {
        const double tol = (d == Dtype::F16 && std::fabs(a[i]) < 6.2e-5f) ? 6e-8 : rel * std::fabs(a[i]);
        EXPECT_NEAR(back[i], a[i], tol) << dtype_name(d) << " element " << i;
      }
    }
  }
  EXPECT_EQ(safetensors_write(tmp_path("x.safetensors"), {}, Dtype::I32, {}).error().code, ErrorCode::unsupported);
  EXPECT_EQ(safetensors_write("/nonexistent/dir/x.safetensors", {}, Dtype::F32, {}).error().code, ErrorCode::io_error);
}

TEST(SafetensorsReader, LazyReadOfAFileTruncatedAfterOpeningIsAnIoError) {
  std::vector<float> a(64, 1.0f);
  const std::string path = tmp_path("shrinking.safetensors");
  ASSERT_TRUE(safetensors_write(path, {{"a", {64}, a.data()}}, Dtype::F32, {}));
  auto r = safetensors_open(path);
  ASSERT_TRUE(r);
  std::ofstream(path, std::ios::binary | std::ios::trunc) << "short";
  std::vector<float> out(64);
  auto s = safetensors_to_f32(*r, r->tensors[0], out.data());
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, ErrorCode::io_error);
}

TEST(HalfFloats, ConvertExactlyIncludingSpecialValues) {
  EXPECT_EQ(f16_to_f32(0x3c00), 1.0f);
  EXPECT_EQ(f16_to_f32(0xc000), -2.0f);
  EXPECT_EQ(f16_to_f32(0x7bff), 65504.0f);
  EXPECT_EQ(f16_to_f32(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_TRUE(std::isinf(f16_to_f32(0x7c00)));
  EXPECT_TRUE(std::isnan(f16_to_f32(0x7e00)));
  EXPECT_EQ(f32_to_f16(1.0f), 0x3c00);
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7c00);  // rounds to infinity
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -25)), 0x0000);  // ties to even: 0
  EXPECT_EQ(f32_to_f16(std::ldexp(3.0f, -25)), 0x0002);
  EXPECT_EQ(f32_to_f16(std::numeric_limits<float>::quiet_NaN()) & 0x7e00, 0x7e00);
  // every half value survives the round trip
  for (std::uint32_t h = 0; h < 0x10000; h++) {
    if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) continue;  // NaNs
    ASSERT_EQ(f32_to_f16(f16_to_f32(static_cast<std::uint16_t>(h))), h) << std::hex << h;
  }
  EXPECT_EQ(bf16_to_f32(0x3f80), 1.0f);
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(f32_to_bf16(1.00390625f), 0x3f80);  // tie to even
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
}
