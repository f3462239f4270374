// cli/pattern_svg.cpp — plain SVG 1.1, no scripts, XML-escaped labels.
#include "cli/pattern_svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "cli/commands.h"  // cannot_write

namespace headlab::cli {
namespace {

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default:
        if (static_cast<unsigned char>(c) >= 0x20 || c == '\t') out += c;
    }
  }
  return out;
}

// White (0) to deep blue (1): one hue, so order reads without colour vision.
std::string colour(double w) {
  w = std::clamp(w, 0.0, 1.0);
  auto mix = [&](int a, int b) { return static_cast<int>(std::lround(a + (b - a) * std::sqrt(w))); };
  char buf[16];
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", mix(247, 8), mix(251, 48), mix(255, 107));
  return buf;
}

}  // namespace

std::string pattern_svg(const std::vector<std::string>& tokens, const std::vector<double>& weights,
                        const std::vector<bool>& masked, const std::string& title) {
  const int T = static_cast<int>(tokens.size());
  const int cell = T <= 16 ? 36 : T <= 48 ? 18 : 10;
  const int label = 90, top = 40 + label;
  const int width = label + T * cell + 20, height = top + T * cell + 20;
  const bool numbers = cell >= 36;
  std::ostringstream s;
  s << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
    << "\" viewBox=\"0 0 " << width << ' ' << height << "\" font-family=\"sans-serif\" font-size=\""
    << std::max(8, cell / 3) << "\">\n"
    << "<title>" << xml_escape(title) << "</title>\n"
    << "<defs><pattern id=\"hatch\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
       "patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"#eeeeee\"/>"
       "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#bbbbbb\" stroke-width=\"2\"/></pattern></defs>\n"
    << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    << "<text x=\"8\" y=\"22\" font-size=\"14\" font-weight=\"bold\">" << xml_escape(title) << "</text>\n";
  for (int j = 0; j < T; ++j) {
    const int x = label + j * cell + cell / 2;
    s << "<text transform=\"translate(" << x << ',' << top - 6 << ") rotate(-60)\">" << xml_escape(tokens[j])
      << "</text>\n";
  }
  for (int i = 0; i < T; ++i) {
    const int y = top + i * cell;
    s << "<text x=\"" << label - 6 << "\" y=\"" << y + cell / 2 + 4 << "\" text-anchor=\"end\">"
      << xml_escape(tokens[i]) << "</text>\n";
    for (int j = 0; j < T; ++j) {
      const std::size_t at = std::size_t(i) * T + j;
      const bool hidden = !masked.empty() && masked[at];
      const double w = weights[at];
      s << "<rect x=\"" << label + j * cell << "\" y=\"" << y << "\" width=\"" << cell << "\" height=\"" << cell
        << "\" fill=\"" << (hidden ? "url(#hatch)" : colour(w)) << "\" stroke=\"white\"><title>query " << i
        << ", key " << j << ": " << (hidden ? std::string("masked") : std::to_string(w)) << "</title></rect>\n";
      if (numbers && !hidden) {
        char buf[16];
        std::snprintf(buf, sizeof buf, "%.2f", w);
        s << "<text x=\"" << label + j * cell + cell / 2 << "\" y=\"" << y + cell / 2 + 4
          << "\" text-anchor=\"middle\" fill=\"" << (w > 0.45 ? "white" : "#1a1a1a") << "\">" << buf << "</text>\n";
      }
    }
  }
  s << "</svg>\n";
  return s.str();
}

std::string write_text_file(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  if (!f) return cannot_write(path);
  f << text;
  if (!f) return path + ": write failed (is the disk full?)";
  return "";
}

}  // namespace headlab::cli
