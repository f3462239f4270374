// core/head_split.h — splitting the model width into heads:
//   d_k = d_model / h;  W_Q, W_K, W_V are (d_model, d_k) per head;
//   W_O is (d_model, d_model);  the projection weights total 4 * d_model^2.
// More heads means narrower heads; the layer's size does not change.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "util/result.h"

namespace headlab::core {

inline constexpr std::int64_t kMaxModelWidth = 1'000'000;

struct HeadSplit {
  std::int64_t d_model = 0;
  std::int64_t h = 0;
  std::int64_t d_k = 0;                 // per-head width
  std::int64_t projection_weights = 0;  // 4 * d_model^2: W_Q, W_K, W_V and W_O
};

struct HeadSplitPreset {
  std::string name;  // "GPT-2 small"
  std::int64_t d_model;
  std::int64_t h;
};

const std::vector<HeadSplitPreset>& head_split_presets();

// Errors (invalid_argument): d_model or h not positive, d_model above kMaxModelWidth,
// h above d_model, or h not dividing d_model (the message suggests nearby divisors).
Result<HeadSplit> head_split(std::int64_t d_model, std::int64_t h);

// 1048576 -> "1,048,576"
std::string with_thousands_separators(std::int64_t n);

}  // namespace headlab::core
