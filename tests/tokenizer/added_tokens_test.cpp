// Tests for tokenizer/added_tokens.h: leftmost-longest matching and each flag.
#include "tokenizer/added_tokens.h"

#include <gtest/gtest.h>

using namespace headlab::model;

namespace {

std::vector<std::pair<int, std::pair<int, int>>> find(const std::vector<AddedToken>& tokens, std::string_view text,
                                                      bool with_special = true) {
  std::vector<std::pair<int, std::pair<int, int>>> out;
  for (const auto& m : AddedTokenMatcher(tokens).find(text, with_special)) out.push_back({m.id, {m.begin, m.end}});
  return out;
}
using Found = std::vector<std::pair<int, std::pair<int, int>>>;

}  // namespace

TEST(AddedTokens, MatchesTheLongestTokenAtTheLeftmostPlace) {
  std::vector<AddedToken> t = {{.id = 1, .content = "<a>"}, {.id = 2, .content = "<a><b>"}};
  EXPECT_EQ(find(t, "x<a><b><a>"), (Found{{2, {1, 7}}, {1, {7, 10}}}));
}

TEST(AddedTokens, SpecialTokensOnlyWhenAsked) {
  std::vector<AddedToken> t = {{.id = 1, .content = "<s>", .special = true}, {.id = 2, .content = "<x>"}};
  EXPECT_EQ(find(t, "<s><x>", false), (Found{{2, {3, 6}}}));
}

TEST(AddedTokens, LstripAndRstripTakeTheWhiteSpaceBeside) {
  std::vector<AddedToken> t = {{.id = 1, .content = "<m>", .lstrip = true, .rstrip = true}};
  EXPECT_EQ(find(t, "a  <m> \tb"), (Found{{1, {1, 8}}}));
}

TEST(AddedTokens, SingleWordWantsNoWordCharacterBeside) {
  std::vector<AddedToken> t = {{.id = 1, .content = "ok", .single_word = true}};
  EXPECT_EQ(find(t, "ok book ok."), (Found{{1, {0, 2}}, {1, {8, 10}}}));
}
