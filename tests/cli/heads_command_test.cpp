// `headlab heads` as a user runs it: the lesson's table, JSON for scripts, clear errors.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <memory>

#include "testing/process.h"

namespace {
using CliRun = headlab::testing::CommandResult;
using headlab::testing::headlab_run;  // stdout and stderr together
}  // namespace

TEST(HeadsCommand, PrintsTheOriginalLessonTableForTheInductionHead) {
  CliRun r = headlab_run("heads --head induction --format tsv");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::string want =
      "the\tcat\tchased\tthe\tdog\t.\tthe\tcat\tchased\tthe\n"
      "1.00\tmasked\tmasked\tmasked\tmasked\tmasked\tmasked\tmasked\tmasked\tmasked\n"
      "0.88\t0.12\tmasked\tmasked\tmasked\tmasked\tmasked\tmasked\tmasked\tmasked\n"
      "0.79\t0.11\t0.11\tmasked\tmasked\tmasked\tmasked\tmasked\tmasked\tmasked\n"
      "0.05\t0.94\t0.01\t0.01\tmasked\tmasked\tmasked\tmasked\tmasked\tmasked\n"
      "0.65\t0.09\t0.09\t0.09\t0.09\tmasked\tmasked\tmasked\tmasked\tmasked\n"
      "0.60\t0.08\t0.08\t0.08\t0.08\t0.08\tmasked\tmasked\tmasked\tmasked\n"
      "0.02\t0.48\t0.00\t0.00\t0.48\t0.00\t0.00\tmasked\tmasked\tmasked\n"
      "0.05\t0.01\t0.92\t0.01\t0.01\t0.01\t0.01\t0.01\tmasked\tmasked\n"
      "0.05\t0.01\t0.01\t0.91\t0.01\t0.01\t0.01\t0.01\t0.01\tmasked\n"
      "0.02\t0.32\t0.00\t0.00\t0.32\t0.00\t0.00\t0.32\t0.00\t0.00\n";
  EXPECT_EQ(r.out, want);
}

TEST(HeadsCommand, TableIsTheDefaultAndNamesTheHead) {
  CliRun r = headlab_run("heads");
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("Induction head"), std::string::npos);
  EXPECT_NE(r.out.find("0.92"), std::string::npos);
}

TEST(HeadsCommand, QuerySaysWhereItLooksMostIncludingTies) {
  CliRun r = headlab_run("heads --head induction --query 7");
  EXPECT_NE(r.out.find("Looks most at: chased (2), 92%"), std::string::npos) << r.out;
  CliRun tie = headlab_run("heads --head induction --query 6");
  EXPECT_NE(tie.out.find("splits between cat (1) and dog (4), 48% each"), std::string::npos) << tie.out;
}

TEST(HeadsCommand, JsonHasFullPrecisionAndNullForMaskedCells) {
  CliRun r = headlab_run("heads --head induction --format json");
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("\"head\": \"induction\""), std::string::npos);
  EXPECT_NE(r.out.find("\"mask\": true"), std::string::npos);
  EXPECT_NE(r.out.find("null"), std::string::npos);
  EXPECT_NE(r.out.find("0.9172"), std::string::npos);  // more than two decimals
}

TEST(HeadsCommand, NoMaskShowsNoMaskedCells) {
  CliRun r = headlab_run("heads --head same-word --no-mask --format tsv");
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out.find("masked"), std::string::npos);
}

TEST(HeadsCommand, OwnSentenceIsSplitOnSpacesAndPunctuation) {
  CliRun r = headlab_run("heads --head punctuation --sentence \"hi, you.\" --format tsv");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out.substr(0, r.out.find('\n')), "hi\t,\tyou\t.");
}

TEST(HeadsCommand, BadHeadNameExitsTwoAndListsTheHeads) {
  CliRun r = headlab_run("heads --head inductoin");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("headlab: error: Unknown head 'inductoin'"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("previous, first, same-word, induction, punctuation"), std::string::npos);
}

TEST(HeadsCommand, OutOfRangeQueryExitsTwoAndSaysTheRange) {
  CliRun r = headlab_run("heads --query 10");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("from 0 to 9"), std::string::npos) << r.out;
}

TEST(HeadsCommand, OverLongSentenceExitsTwoAndSaysTheLimit) {
  std::string s;
  for (int i = 0; i < 33; ++i) s += "w ";
  CliRun r = headlab_run("heads --sentence \"" + s + "\"");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("at most 32"), std::string::npos) << r.out;
}

TEST(HeadsCommand, BadFormatAndUnknownSubcommandAreUsageErrors) {
  EXPECT_EQ(headlab_run("heads --format xml").exit_code, 2);
  CliRun r = headlab_run("frobnicate");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("headlab: error:"), std::string::npos);
}

TEST(HeadsCommand, HelpTeachesWithExamples) {
  CliRun r = headlab_run("heads --help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("Examples:"), std::string::npos);
  EXPECT_NE(r.out.find("--no-mask"), std::string::npos);
}

TEST(FeedbackCommand, ListsNothingYetForAFreshDatabaseAndRefusesAMissingOne) {
  std::string db = "/tmp/headlab-feedback-cli-" + std::to_string(::getpid()) + ".db";
  std::remove(db.c_str());
  CliRun missing = headlab_run("feedback list --db " + db);
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.out.find("No database at"), std::string::npos) << missing.out;
  std::FILE* f = std::fopen(db.c_str(), "w");  // an empty file is a valid empty SQLite database
  std::fclose(f);
  CliRun empty = headlab_run("feedback list --db " + db);
  EXPECT_EQ(empty.exit_code, 0) << empty.out;
  EXPECT_NE(empty.out.find("No feedback yet"), std::string::npos) << empty.out;
  std::remove(db.c_str());
}

TEST(HeadsCommand, SaveSvgWritesAPictureOfTheGrid) {
  std::string path = "/tmp/headlab-heads-" + std::to_string(::getpid()) + ".svg";
  CliRun r = headlab_run("heads --head induction --save-svg " + path + " --format tsv");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::FILE* f = std::fopen(path.c_str(), "r");
  ASSERT_NE(f, nullptr);
  std::string svg;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) svg.append(buf, n);
  std::fclose(f);
  std::remove(path.c_str());
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("Induction head, causal mask on"), std::string::npos);
  EXPECT_NE(svg.find(">0.92<"), std::string::npos);     // cat (7) -> chased (2)
  EXPECT_NE(svg.find("query 0, key 1: masked"), std::string::npos);
  EXPECT_EQ(svg.find("<script"), std::string::npos);
}

TEST(HeadsCommand, SaveSvgToAnUnwritablePlaceIsAnError) {
  CliRun r = headlab_run("heads --save-svg /nonexistent/dir/x.svg");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("cannot open for writing"), std::string::npos) << r.out;
}
