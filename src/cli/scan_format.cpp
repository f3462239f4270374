// cli/scan_format.cpp — the scan report as CSV and as a ranked table (printf widths).
#include "cli/scan_format.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace headlab::cli {

std::string scan_report_csv(const analysis::ScanReport& r) {
  std::ostringstream s;
  s << "layer,head,name";
  for (const analysis::ScoreField& f : analysis::score_fields()) s << ',' << f.name << ',' << f.name << "_chance";
  s << ",labels\n";
  char buf[64];
  for (const analysis::HeadReport& h : r.heads) {
    s << h.layer << ',' << h.head << ',' << h.name;
    for (const analysis::ScoreField& f : analysis::score_fields()) {
      if (f.needs_weights && !h.scores.has_weights) {
        s << ",,";
        continue;
      }
      std::snprintf(buf, sizeof buf, ",%.4f,%.4f", (h.scores.*f.member).score, (h.scores.*f.member).chance);
      s << buf;
    }
    s << ',';
    for (std::size_t i = 0; i < h.labels.size(); ++i) s << (i ? ";" : "") << h.labels[i].name;
    s << '\n';
  }
  return s.str();
}

std::string scan_report_table(const analysis::ScanReport& r) {
  std::ostringstream s;
  char buf[256];
  std::snprintf(buf, sizeof buf, "%-12s %6s %6s %6s %6s %6s %6s %6s %6s %6s  %s\n", "head", "prev", "cur", "first",
                "1st-vw", "dup", "induct", "prefix", "copy", "entropy", "labels (margin)");
  s << buf;
  auto cell = [&](const analysis::Scored& x, bool ok) {
    if (!ok) return std::string("     -");
    char c[16];
    std::snprintf(c, sizeof c, "%6.2f", x.score);
    return std::string(c);
  };
  for (const analysis::HeadReport& h : r.heads) {
    const analysis::HeadScores& x = h.scores;
    s << (h.name + std::string(std::max<int>(0, 12 - static_cast<int>(h.name.size())), ' ')) << ' ';
    s << cell(x.previous_token, true) << ' ' << cell(x.current_token, true) << ' ' << cell(x.first_token, true) << ' '
      << cell(x.first_token_value_weighted, x.has_weights) << ' ' << cell(x.duplicate_token, true) << ' '
      << cell(x.induction, true) << ' ' << cell(x.prefix_matching, true) << ' ' << cell(x.copying, x.has_weights)
      << ' ' << cell(x.entropy, true) << "  ";
    if (h.labels.empty()) s << "(none)";
    for (std::size_t i = 0; i < h.labels.size(); ++i) {
      std::snprintf(buf, sizeof buf, "%s%s (+%.2f)", i ? ", " : "", h.labels[i].name.c_str(), h.labels[i].margin());
      s << buf;
    }
    s << '\n';
  }
  if (!r.heads.empty()) {
    const analysis::HeadScores& x = r.heads.front().scores;
    std::snprintf(buf, sizeof buf, "%-12s %6.2f %6.2f %6.2f %6s %6.2f %6.2f %6.2f %6s %6.2f\n", "chance",
                  x.previous_token.chance, x.current_token.chance, x.first_token.chance, "", x.duplicate_token.chance,
                  x.induction.chance, x.prefix_matching.chance, "0", 1.0);
    s << buf;
  }
  if (r.has_icl) {
    std::snprintf(buf, sizeof buf,
                  "in-context learning: loss %.3f on the first copy, %.3f on the second (ratio %.3f)\n",
                  r.icl.loss_first_copy, r.icl.loss_second_copy, r.icl.ratio());
    s << buf;
  }
  return s.str();
}

}  // namespace headlab::cli
