#include "server/api/json_codec.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/sentence.h"

using namespace headlab;
using namespace headlab::server;

TEST(JsonCodec, DecodesAWeightsRequestWithTheMaskOnByDefault) {
  auto r = decode_weights_request(R"({"sentence": "a b", "head": "first"})");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->sentence, "a b");
  EXPECT_TRUE(r->mask);
}

TEST(JsonCodec, RejectsUnknownFieldsNamingThem) {
  auto r = decode_weights_request(R"({"sentence": "a", "head": "first", "maks": false})");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("'maks'"), std::string::npos);
}

TEST(JsonCodec, RejectsWrongTypesAndMissingFields) {
  EXPECT_FALSE(decode_weights_request(R"({"sentence": ["a"], "head": "first"})"));
  EXPECT_FALSE(decode_weights_request(R"({"head": "first"})"));
  EXPECT_FALSE(decode_progress_check_request(
      R"({"learner": "abcdefgh", "lesson": "causal-mask", "sentence": "a", "head": "first", "query": 1.5})"));
  EXPECT_FALSE(decode_weights_request("null"));
  EXPECT_FALSE(decode_weights_request(""));
}

// Found by the json_request fuzzer: a number too large for a double made nlohmann throw
// out_of_range, not parse_error, and the uncaught exception ended the server.
TEST(JsonCodec, ANumberTooLargeForADoubleIsABadRequestNotACrash) {
  for (const char* body : {"767e67697e87", R"({"sentence": "a", "head": "first", "mask": 1e999})", "[1e400]"}) {
    auto w = decode_weights_request(body);
    ASSERT_FALSE(w) << body;
    EXPECT_EQ(w.error().code, ErrorCode::invalid_argument) << body;
    EXPECT_NE(w.error().message.find("not valid JSON"), std::string::npos) << w.error().message;
    EXPECT_FALSE(decode_progress_check_request(body)) << body;
  }
}

TEST(JsonCodec, EncodesMaskedCellsAsNull) {
  auto p = core::compute_pattern(core::HeadKind::first, *core::tokenize_sentence("a b c"), true);
  auto j = nlohmann::json::parse(encode_weights(p));
  EXPECT_TRUE(j["weights"][0][1].is_null());
  EXPECT_EQ(j["weights"][2][0], 1.0 * p.weights.at(2, 0));
  EXPECT_EQ(j["head"], "first");
}

TEST(JsonCodec, HeadSplitQueryDefaultsToTheFirstPresetAndParsesStrictly) {
  auto d = decode_head_split_query({});
  ASSERT_TRUE(d);
  EXPECT_EQ(d->d_model, 512);
  EXPECT_EQ(d->h, 8);
  EXPECT_FALSE(decode_head_split_query({{"d_model", "12x"}}));
  EXPECT_FALSE(decode_head_split_query({{"d_model", ""}}));
  EXPECT_FALSE(decode_head_split_query({{"h", "1e3"}}));
}

// Lesson 3's positions are 0 to 100000: -1 and 2^64 - 1 (which read as a signed number is -1)
// are refused with that range, never quoted back as another number.
TEST(JsonCodec, ALessonChecksPositionsAreWholeNumbersFrom0To100000) {
  auto with = [](const std::string& positions) {
    return decode_lesson_check(R"({"learner": "learner-0001", "challenge": "offset-only", "answer": {"positions": )" + positions + "}}");
  };
  ASSERT_TRUE(with("[0, 5, 100000, 3]"));
  for (const char* bad : {"[-1, 0, 20, 21]", "[18446744073709551615, 0, 20, 21]", "[100001]", "[1.5]", "[\"3\"]"}) {
    auto r = with(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_NE(r.error().message.find("whole numbers from 0 to 100000"), std::string::npos) << bad << ": " << r.error().message;
  }
}

TEST(JsonCodec, ALessonCheckCarriesAnOptionalRequestIdOfAtMost64Characters) {
  auto none = decode_lesson_check(R"({"learner": "learner-0001", "challenge": "pattern-quiz", "answer": {"choice": "uniform"}})");
  ASSERT_TRUE(none) << none.error().message;
  EXPECT_EQ(none->request_id, "");
  auto with = decode_lesson_check(
      R"({"learner": "learner-0001", "challenge": "pattern-quiz", "answer": {"choice": "uniform"}, "request_id": "r-1"})");
  ASSERT_TRUE(with) << with.error().message;
  EXPECT_EQ(with->request_id, "r-1");
  auto long_id = decode_lesson_check(R"({"learner": "learner-0001", "challenge": "pattern-quiz", "answer": {}, "request_id": ")" +
                                     std::string(65, 'x') + "\"}");
  ASSERT_FALSE(long_id);
  EXPECT_NE(long_id.error().message.find("request_id"), std::string::npos);
}
