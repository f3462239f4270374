// Tests of the dequantizers (formats/gguf/gguf_dequantize.h): blocks built by hand whose values
// follow from the layout, and, for every type, two rows of llama.cpp's own quantization with
// the values llama.cpp dequantizes them to (tests/fixtures/gguf/blocks.json, made by
// tools/reference/make_llama_fixtures.py).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "testing/model_fixtures.h"
#include "formats/gguf/gguf_dequantize.h"
#include "formats/safetensors.h"

using namespace headlab::model;
using namespace headlab::model::gguf;

namespace {

void put_half(unsigned char* p, float f) {
  const std::uint16_t h = f32_to_f16(f);
  p[0] = h & 0xff;
  p[1] = h >> 8;
}

std::vector<unsigned char> from_hex(const std::string& hex) {
  std::vector<unsigned char> out(hex.size() / 2);
  for (std::size_t i = 0; i < out.size(); i++) out[i] = static_cast<unsigned char>(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
  return out;
}

TensorType type_named(const std::string& name) {
  for (std::uint32_t id = 0; id < 64; id++)
    if (tensor_type_known(id) && tensor_type_name(id) == name) return static_cast<TensorType>(id);
  throw std::runtime_error("no type " + name);
}

}  // namespace

TEST(Dequantize, HalfAndBfloat16DecodeTheirBits) {
  EXPECT_EQ(half_to_float(0x3c00), 1.0f);
  EXPECT_EQ(half_to_float(0xc000), -2.0f);
  EXPECT_EQ(half_to_float(0x0001), std::ldexp(1.0f, -24));  // the smallest subnormal
  EXPECT_EQ(half_to_float(0x7bff), 65504.0f);
  EXPECT_TRUE(std::isinf(half_to_float(0x7c00)));
  EXPECT_EQ(bf16_to_float(0x3f80), 1.0f);
  EXPECT_EQ(bf16_to_float(0xc0a0), -5.0f);
}

TEST(Dequantize, Q8_0IsTheScaleTimesEachSignedByte) {
  unsigned char b[34];
  put_half(b, 0.5f);
  for (int i = 0; i < 32; i++) b[2 + i] = static_cast<unsigned char>(std::int8_t(i - 16));
  float y[32];
  dequantize(TensorType::q8_0, b, 32, y);
  for (int i = 0; i < 32; i++) EXPECT_EQ(y[i], 0.5f * float(i - 16)) << i;
}

TEST(Dequantize, Q4_0PutsLowNibblesFirstAndSubtractsEight) {
  unsigned char b[18];
  put_half(b, 2.0f);
  for (int i = 0; i < 16; i++) b[2 + i] = static_cast<unsigned char>(i | (15 - i) << 4);
  float y[32];
  dequantize(TensorType::q4_0, b, 32, y);
  for (int i = 0; i < 16; i++) {
    EXPECT_EQ(y[i], 2.0f * float(i - 8)) << i;
    EXPECT_EQ(y[16 + i], 2.0f * float(15 - i - 8)) << i;
  }
}

TEST(Dequantize, Q4_1AddsTheMinimum) {
  unsigned char b[20];
  put_half(b, 0.25f);
  put_half(b + 2, -1.0f);
  for (int i = 0; i < 16; i++) b[4 + i] = static_cast<unsigned char>(i | i << 4);
  float y[32];
  dequantize(TensorType::q4_1, b, 32, y);
  for (int i = 0; i < 16; i++) EXPECT_EQ(y[i], 0.25f * float(i) - 1.0f) << i;
  EXPECT_EQ(y[31], 0.25f * 15 - 1.0f);
}

TEST(Dequantize, Q5_0TakesTheFifthBitFromQh) {
  unsigned char b[22] = {};
  put_half(b, 1.0f);
  const std::uint32_t qh = 0x80000001u;  // weight 0 and weight 31 have the high bit
  std::memcpy(b + 2, &qh, 4);
  for (int i = 0; i < 16; i++) b[6 + i] = 0x33;  // every nibble 3
  float y[32];
  dequantize(TensorType::q5_0, b, 32, y);
  EXPECT_EQ(y[0], float(16 + 3 - 16));
  EXPECT_EQ(y[1], float(3 - 16));
  EXPECT_EQ(y[16], float(3 - 16));
  EXPECT_EQ(y[31], float(16 + 3 - 16));
}

TEST(Dequantize, Q6_KOfAllZeroQuantsIsMinus32TimesEachScale) {
  unsigned char b[210] = {};
  for (int s = 0; s < 16; s++) b[192 + s] = static_cast<unsigned char>(std::int8_t(s - 8));
  put_half(b + 208, 0.5f);
  float y[256];
  dequantize(TensorType::q6_k, b, 256, y);
  for (int i = 0; i < 256; i++) EXPECT_EQ(y[i], 0.5f * float(i / 16 - 8) * -32.0f) << i;  // sub-block i / 16
}

TEST(Dequantize, EveryTypeMatchesLlamaCppOnItsOwnBlocks) {
  const nlohmann::json j =
      headlab::testing::read_json_file(std::string(HEADLAB_SOURCE_DIR) + "/tests/fixtures/gguf/blocks.json");
  int types = 0;
  for (auto it = j["types"].begin(); it != j["types"].end(); ++it) {
    const TensorType type = type_named(it.key());
    const std::vector<unsigned char> bytes = from_hex(it.value()["hex"].get<std::string>());
    const std::vector<float> want = it.value()["values"].get<std::vector<float>>();
    ASSERT_EQ(bytes.size(), want.size() / std::size_t(block_elements(type)) * std::size_t(block_bytes(type))) << it.key();
    std::vector<float> got(want.size());
    dequantize(type, bytes.data(), std::int64_t(got.size()), got.data());
    double worst = 0;
    for (std::size_t i = 0; i < got.size(); i++)
      worst = std::max(worst, std::fabs(double(got[i]) - want[i]) / std::max(1e-3, std::fabs(double(want[i]))));
    std::printf("%-5s %zu values: max relative difference to llama.cpp %.2g\n", it.key().c_str(), got.size(), worst);
    EXPECT_LT(worst, 1e-6) << it.key();
    types++;
  }
  EXPECT_EQ(types, 12);  // F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K
}
