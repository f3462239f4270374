// cli/scan_format.h — the scanner's report for `headlab scan`: a ranked table for people
// and CSV (one row per head) for spreadsheets. The JSON is the server's codec's
// (server::encode_scan_report), the same as GET /api/model/scan.
//
//   std::cout << scan_report_table(report);
#pragma once

#include <string>

#include "analysis/scanner.h"

namespace headlab::cli {

// Columns: layer, head, name, then each score of analysis::score_fields() and its chance
// (empty cells for scores a constructed head does not have), then labels joined by ';'.
// Four decimals.
std::string scan_report_csv(const analysis::ScanReport& r);

// One line per head in the report's order (largest label margin first), the chance levels
// under it, and the in-context-learning losses when the report has them.
std::string scan_report_table(const analysis::ScanReport& r);

}  // namespace headlab::cli
