// cli/pattern_svg.h — one attention pattern as a standalone SVG picture: rows are queries,
// columns keys, the colour is the weight (one blue scale, readable without colour vision),
// masked cells hatched, token labels on both axes.
//
//   std::string svg = pattern_svg({"the", "cat"}, {1, 0, 0.3, 0.7}, {true, false, ...}, "Induction head");
#pragma once

#include <string>
#include <vector>

namespace headlab::cli {

// weights (T, T) row-major; masked (T, T): cells to hatch instead of colour (may be empty).
std::string pattern_svg(const std::vector<std::string>& tokens, const std::vector<double>& weights,
                        const std::vector<bool>& masked, const std::string& title);

// Writes text to path. Error message (empty on success).
std::string write_text_file(const std::string& path, const std::string& text);

}  // namespace headlab::cli
