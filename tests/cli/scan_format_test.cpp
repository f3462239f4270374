// `headlab scan`'s table and CSV: every head on a line, the chance levels, the in-context
// learning losses; empty cells where a constructed head has no weights.
#include "cli/scan_format.h"

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "analysis/scan_text.h"

using namespace headlab;

namespace {

const char* kText = "the cat sat on the mat . the dog ran to the park , and the cat saw the dog .";

std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

}  // namespace

TEST(ScanReportCsv, HasAHeaderAndOneRowPerHeadWithEmptyCellsForScoresWithoutWeights) {
  analysis::ScanReport r = analysis::scan_text_constructed(kText, analysis::ScanOptions{});
  const std::vector<std::string> rows = lines(cli::scan_report_csv(r));
  ASSERT_EQ(rows.size(), 6u);
  EXPECT_EQ(rows[0].rfind("layer,head,name,previous_token,previous_token_chance,", 0), 0u) << rows[0];
  const auto columns = std::count(rows[0].begin(), rows[0].end(), ',');
  for (std::size_t i = 1; i < rows.size(); ++i) {
    EXPECT_EQ(std::count(rows[i].begin(), rows[i].end(), ','), columns) << rows[i];
    EXPECT_NE(rows[i].find(r.heads[i - 1].name), std::string::npos) << rows[i];
  }
  // copying (and its chance) sits between prefix_matching's chance and punctuation: empty
  EXPECT_NE(rows[1].find(",,,"), std::string::npos) << rows[1];
}

TEST(ScanReportTable, ListsTheHeadsInOrderThenTheChanceLevelsThenInContextLearning) {
  analysis::ScanReport r = analysis::scan_text_constructed(kText, analysis::ScanOptions{});
  r.has_icl = true;
  r.icl = {8.0, 2.0};
  const std::vector<std::string> rows = lines(cli::scan_report_table(r));
  ASSERT_EQ(rows.size(), 1 + r.heads.size() + 2);
  EXPECT_EQ(rows[0].rfind("head ", 0), 0u);
  for (std::size_t i = 0; i < r.heads.size(); ++i)
    EXPECT_EQ(rows[1 + i].rfind(r.heads[i].name, 0), 0u) << rows[1 + i];
  EXPECT_EQ(rows[1 + r.heads.size()].rfind("chance", 0), 0u);
  EXPECT_EQ(rows.back(), "in-context learning: loss 8.000 on the first copy, 2.000 on the second (ratio 0.250)");
}
