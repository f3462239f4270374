// Tests for server/http/errors: the one error envelope, and the details an Error may carry into
// it (util/result.h's details_json: a patching sweep's 413 with its narrowings).
#include "server/http/errors.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

using headlab::Error;
using headlab::ErrorCode;
using headlab::server::error_response;

TEST(ErrorEnvelope, IsCodeAndMessageWhenTheErrorHasNoDetails) {
  auto r = error_response(Error{ErrorCode::invalid_argument, "bad head"});
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.body, R"({"error":{"code":"invalid_argument","message":"bad head"}})");
}

TEST(ErrorEnvelope, CarriesTheDetailsAfterCodeAndMessageInTheirOrder) {
  Error e{ErrorCode::too_long, "over the limit"};
  e.details_json = R"({"limit": 1e11, "cost": 3.2e11, "narrowings": [{"label": "layers 0 only", "layers": [0]}]})";
  auto r = error_response(e);
  EXPECT_EQ(r.status, 413);
  EXPECT_EQ(r.body, R"({"error":{"code":"too_long","message":"over the limit","limit":100000000000.0,"cost":320000000000.0,)"
                    R"("narrowings":[{"label":"layers 0 only","layers":[0]}]}})");
}

TEST(ErrorEnvelope, DetailsCannotReplaceCodeOrMessageAndDetailsThatAreNotAnObjectAreLeftOut) {
  Error e{ErrorCode::too_long, "over the limit"};
  e.details_json = R"({"code": "ok", "message": "fine", "limit": 2})";
  EXPECT_EQ(nlohmann::json::parse(error_response(e).body),
            nlohmann::json::parse(R"({"error":{"code":"too_long","message":"over the limit","limit":2}})"));
  for (const char* odd : {"[1, 2]", "{not json", "3", "\"text\""}) {
    e.details_json = odd;
    EXPECT_EQ(error_response(e).body, R"({"error":{"code":"too_long","message":"over the limit"}})") << odd;
  }
}
