// train/train_plot.cpp — SVG line charts of a training log (read through train/train_log.h),
// written by hand (no library).
#include "train/train_plot.h"

#include "train/train_log.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <vector>

namespace headlab::train {
namespace {

struct Series {
  std::string name, colour;
  std::vector<std::pair<double, double>> points;  // (step, value)
};

// One panel: axes, ticks, a polyline per series, a legend.
void panel(std::ostringstream& svg, const std::vector<Series>& series, double x0, double y0, double w, double h,
           const char* title, double max_step, bool fixed_01) {
  double lo = fixed_01 ? 0.0 : 1e300, hi = fixed_01 ? 1.0 : -1e300;
  if (!fixed_01)
    for (const auto& s : series)
      for (auto [x, y] : s.points) lo = std::min(lo, y), hi = std::max(hi, y);
  if (!(hi > lo)) hi = lo + 1.0;
  auto X = [&](double step) { return x0 + w * step / std::max(1.0, max_step); };
  auto Y = [&](double v) { return y0 + h - h * (v - lo) / (hi - lo); };
  char buf[256];
  std::snprintf(buf, sizeof buf, "<text x='%.1f' y='%.1f' font-size='14' font-weight='bold'>%s</text>\n", x0, y0 - 8, title);
  svg << buf;
  std::snprintf(buf, sizeof buf, "<rect x='%.1f' y='%.1f' width='%.1f' height='%.1f' fill='none' stroke='#999'/>\n", x0, y0, w, h);
  svg << buf;
  for (int i = 0; i <= 4; ++i) {
    const double v = lo + (hi - lo) * i / 4.0;
    std::snprintf(buf, sizeof buf, "<text x='%.1f' y='%.1f' font-size='11' text-anchor='end'>%.2f</text>\n", x0 - 4, Y(v) + 4, v);
    svg << buf;
    const double step = max_step * i / 4.0;
    std::snprintf(buf, sizeof buf, "<text x='%.1f' y='%.1f' font-size='11' text-anchor='middle'>%.0f</text>\n", X(step), y0 + h + 14, step);
    svg << buf;
  }
  double ly = y0 + 14;
  for (const auto& s : series) {
    if (s.points.empty()) continue;
    svg << "<polyline fill='none' stroke='" << s.colour << "' stroke-width='1.5' points='";
    for (auto [x, y] : s.points) {
      std::snprintf(buf, sizeof buf, "%.1f,%.1f ", X(x), Y(y));
      svg << buf;
    }
    svg << "'/>\n";
    std::snprintf(buf, sizeof buf, "<text x='%.1f' y='%.1f' font-size='12' fill='%s'>%s</text>\n", x0 + w - 150, ly,
                  s.colour.c_str(), s.name.c_str());
    svg << buf;
    ly += 15;
  }
}

}  // namespace

Result<std::string> train_log_svg(const std::string& csv_text, const std::string& what) {
  auto table = train_log_table_parse(csv_text, what);
  if (!table) return tl::unexpected(table.error());
  auto records = train_log_records(*table, what);
  if (!records) return tl::unexpected(records.error());
  Series loss{"training loss", "#1f77b4", {}}, eval{"held-out loss", "#ff7f0e", {}};
  Series induction{"best induction", "#d62728", {}}, previous{"best previous-token", "#2ca02c", {}},
      first{"best first-token", "#9467bd", {}};
  auto add = [](Series& s, double step, double v) {
    if (std::isfinite(v)) s.points.push_back({step, v});
  };
  double max_step = 0;
  for (const TrainLogRecord& r : *records) {
    max_step = std::max(max_step, double(r.step));
    add(loss, r.step, r.loss);
    if (!r.evaluated) continue;
    add(eval, r.step, r.eval_loss);
    add(induction, r.step, r.induction);
    add(previous, r.step, r.previous_token);
    add(first, r.step, r.first_token);
  }
  if (loss.points.empty()) return make_error(ErrorCode::corrupt, what + " has no rows");
  std::ostringstream svg;
  svg << "<svg xmlns='http://www.w3.org/2000/svg' width='760' height='560' font-family='sans-serif'>\n"
      << "<rect width='100%' height='100%' fill='white'/>\n";
  panel(svg, {loss, eval}, 60, 40, 660, 200, "Loss", max_step, false);
  panel(svg, {induction, previous, first}, 60, 310, 660, 200, "Best head scores (scanner)", max_step, true);
  svg << "<text x='390' y='545' font-size='12' text-anchor='middle'>step</text>\n</svg>\n";
  return svg.str();
}

}  // namespace headlab::train
