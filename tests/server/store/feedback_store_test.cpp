// Feedback is stored exactly as sent or refused, and listed so it cannot drive the terminal.
#include "server/store/feedback_store.h"

#include <gtest/gtest.h>

#include <cstdio>

#include "testing/test_server.h"

using headlab::testing::TestServer;
using headlab::testing::temp_path;
using namespace headlab::server;
using nlohmann::json;

TEST(FeedbackStore, WhiteSpaceMeansUnicodeWhiteSpace) {
  EXPECT_TRUE(is_only_white_space(""));
  EXPECT_TRUE(is_only_white_space(" \t\r\n"));
  EXPECT_TRUE(is_only_white_space("\xC2\xA0\xC2\xA0"));        // NBSP
  EXPECT_TRUE(is_only_white_space("\xE3\x80\x80\xE2\x80\x83"));  // ideographic space, em space
  EXPECT_FALSE(is_only_white_space("\xC2\xA0x"));
  EXPECT_FALSE(is_only_white_space("\xE2\x80\x8B"));  // zero-width space is not White_Space
  EXPECT_FALSE(is_only_white_space("\xC2"));          // cut UTF-8
}

TEST(FeedbackStore, ANulIsRefusedNotTruncated) {
  auto store = FeedbackStore::open(temp_path("f.db"));
  ASSERT_TRUE(store);
  auto r = (*store)->add({"causal-mask", std::string("before\0after", 12), "", 0, ""});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, headlab::ErrorCode::invalid_argument);
  EXPECT_NE(r.error().message.find("NUL"), std::string::npos);
  ASSERT_TRUE((*store)->add({"causal-mask", "é ok", "", 0, ""}));
  EXPECT_EQ((*store)->list()->front().message, "é ok");
}

TEST(FeedbackStore, OverHttpNulAndNbspOnlyNotesGet400) {
  TestServer s(temp_path("f.db"));
  auto nul = s.post("/api/feedback", std::string(R"({"lesson": "causal-mask", "message": "a\u0000b"})"));
  EXPECT_EQ(nul.status, 400) << nul.raw;
  auto nbsp = s.post("/api/feedback", json{{"lesson", "causal-mask"}, {"message", "\xC2\xA0\xC2\xA0"}});
  EXPECT_EQ(nbsp.status, 400) << nbsp.raw;
  EXPECT_EQ(s.post("/api/feedback", json{{"lesson", "causal-mask"}, {"message", "fine"}}).status, 201);
}

TEST(FeedbackStore, TheTerminalListingEscapesControlCharacters) {
  std::string db = temp_path("f.db");
  {
    auto store = FeedbackStore::open(db);
    ASSERT_TRUE(store);
    ASSERT_TRUE((*store)->add({"causal-mask", "\x1b[2J\x07hidden\r\n#99  forged\xC2\x9b", "\x1b]0;title\x07", 0, ""}));
    // a right-to-left override reorders what follows it on the screen: "gpj.exe" shown as "exe.jpg"
    ASSERT_TRUE((*store)->add({"causal-mask", "see \xE2\x80\xAE" "gpj.exe and \xD8\x9C" "x \xE2\x81\xA6" "y", "", 0, ""}));
  }
  std::string command = std::string(HEADLAB_BINARY_DIR "/headlab feedback list --db ") + db;
  FILE* p = popen(command.c_str(), "r");
  ASSERT_TRUE(p);
  std::string out;
  char buf[512];
  while (std::fgets(buf, sizeof buf, p)) out += buf;
  EXPECT_EQ(pclose(p), 0);
  for (char c : out) EXPECT_TRUE(c == '\n' || static_cast<unsigned char>(c) >= 0x20) << static_cast<int>(c) << "\n" << out;
  EXPECT_EQ(out.find("\xC2\x9b"), std::string::npos) << out;
  EXPECT_NE(out.find("\\x1b[2J\\x07hidden\\r\\n#99  forged\\u009b"), std::string::npos) << out;
  EXPECT_EQ(out.find("\xE2\x80\xAE"), std::string::npos) << out;
  EXPECT_NE(out.find("see \\u202e" "gpj.exe and \\u061c" "x \\u2066" "y"), std::string::npos) << out;
}
