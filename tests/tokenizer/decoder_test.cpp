// Tests for tokenizer/decoder.h: what each token shows, and what decode does to the whole.
#include "tokenizer/decoder.h"

#include <gtest/gtest.h>

using namespace headlab::model;
using K = Decoder::Kind;

TEST(Decoder, ByteFallbackReadsTheByteAndLeavesOtherTokens) {
  EXPECT_EQ(decoder_token_bytes({.kind = K::byte_fallback}, "<0xE2>"), "\xE2");
  EXPECT_EQ(decoder_token_bytes({.kind = K::byte_fallback}, "<0xZZ>"), "<0xZZ>");
  EXPECT_EQ(decoder_token_bytes({.kind = K::byte_fallback}, "hello"), "hello");
}

TEST(Decoder, ByteLevelMapsGpt2sAlphabetBackToBytes) {
  EXPECT_EQ(decoder_token_bytes({.kind = K::byte_level}, "\u0120world"), " world");  // Ġ is the space
  EXPECT_EQ(decoder_token_bytes({.kind = K::byte_level}, "\u00e2\u0122"), "\xe2\x80");  // part of a character
}

TEST(Decoder, SequenceOfReplaceAndStripGivesLlama2sText) {
  Decoder d{.kind = K::sequence};
  d.steps.push_back({.kind = K::replace, .pattern = "\u2581", .content = " "});
  d.steps.push_back({.kind = K::byte_fallback});
  d.steps.push_back({.kind = K::fuse});
  d.steps.push_back({.kind = K::strip, .content = " ", .strip_start = 1, .strip_stop = 0});
  std::string text = decoder_token_bytes(d, "\u2581Hello") + decoder_token_bytes(d, "\u2581world");
  EXPECT_EQ(text, " Hello world");
  decoder_finish(d, text);
  EXPECT_EQ(text, "Hello world");
}

TEST(Decoder, MetaspaceDropsThePrefixSpace) {
  Decoder d{.kind = K::metaspace};
  std::string text = decoder_token_bytes(d, "\u2581a\u2581b");
  decoder_finish(d, text);
  EXPECT_EQ(text, "a b");
}
