// core/head_split.cpp — validation and the arithmetic of splitting.
#include "core/head_split.h"

#include <cstdlib>

namespace headlab::core {

const std::vector<HeadSplitPreset>& head_split_presets() {
  static const std::vector<HeadSplitPreset> presets = {
      {"Transformer base", 512, 8},
      {"GPT-2 small", 768, 12},
      {"GPT-3 175B", 12288, 96},
  };
  return presets;
}

std::string with_thousands_separators(std::int64_t n) {
  std::string digits = std::to_string(std::llabs(n));
  std::string out;
  int count = 0;
  for (auto it = digits.rbegin(); it != digits.rend(); ++it) {
    if (count > 0 && count % 3 == 0) out.insert(out.begin(), ',');
    out.insert(out.begin(), *it);
    ++count;
  }
  return n < 0 ? "-" + out : out;
}

Result<HeadSplit> head_split(std::int64_t d_model, std::int64_t h) {
  if (d_model <= 0)
    return make_error(ErrorCode::invalid_argument,
                      "d_model must be a positive whole number (GPT-2 small uses 768).");
  if (d_model > kMaxModelWidth)
    return make_error(ErrorCode::invalid_argument,
                      "d_model of " + with_thousands_separators(d_model) + " is beyond any real model; use at most " +
                          with_thousands_separators(kMaxModelWidth) + ".");
  if (h <= 0)
    return make_error(ErrorCode::invalid_argument,
                      "The number of heads h must be at least 1 (GPT-2 small uses 12).");
  if (h > d_model)
    return make_error(ErrorCode::invalid_argument,
                      "h = " + std::to_string(h) + " is more heads than d_model = " + std::to_string(d_model) +
                          " has dimensions; each head needs at least one.");
  if (d_model % h != 0) {
    std::int64_t below = h - 1, above = h + 1;
    while (below > 1 && d_model % below != 0) --below;
    while (above < d_model && d_model % above != 0) ++above;
    std::string suggest = "h = " + std::to_string(below);
    if (d_model % above == 0 && above <= d_model) suggest += " or h = " + std::to_string(above);
    return make_error(ErrorCode::invalid_argument,
                      "h must divide d_model evenly: " + std::to_string(d_model) + " / " + std::to_string(h) +
                          " is not a whole number. Try " + suggest + ".");
  }
  return HeadSplit{d_model, h, d_model / h, 4 * d_model * d_model};
}

}  // namespace headlab::core
