// research/steering.cpp — resid_pre[l][t] += coef * v (or v[t - from], ActAdd's rows) through
// the forward's writable resid_pre view (steering.h).
#include "research/steering.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include <nlohmann/json.hpp>

#include "util/file.h"
#include "util/json_depth.h"

namespace headlab::research {

namespace {

Error bad(const std::string& message) { return Error{ErrorCode::invalid_argument, message}; }

Status check_finite(const std::vector<float>& v, const std::string& what) {
  for (std::size_t i = 0; i < v.size(); i++)
    if (!std::isfinite(v[i]))
      return tl::unexpected(bad(what + ": value " + std::to_string(i) + " is " + (std::isnan(v[i]) ? "NaN" : "infinite") +
                                "; a steering vector holds finite numbers"));
  return {};
}

}  // namespace

Status steering_check(const model::ModelConfig& c, const Steering& s) {
  if (s.layer < 0 || s.layer >= c.n_layer)
    return tl::unexpected(bad("steering layer " + std::to_string(s.layer) + ": this model has " +
                              std::to_string(c.n_layer) + " layers, 0 to " + std::to_string(c.n_layer - 1)));
  if (!std::isfinite(s.coef)) return tl::unexpected(bad("the steering coefficient is not a finite number"));
  if (s.from < 0) return tl::unexpected(bad("the steering's first position must be 0 or more"));
  if (s.rows < 1 || s.vector.size() != std::size_t(s.rows) * std::size_t(c.n_embd))
    return tl::unexpected(bad("the steering vector has " + std::to_string(s.vector.size()) + " values; " +
                              (s.rows == 1 ? "" : std::to_string(s.rows) + " rows of ") + std::to_string(c.n_embd) +
                              " (the model's n_embd, the width of resid_pre) were expected"));
  if (Status f = check_finite(s.vector, "the steering vector"); !f) return f;
  for (std::size_t i = 0; i < s.vector.size(); i++)
    if (const double add = double(s.coef) * double(s.vector[i]); std::fabs(add) > kMaxSteeringAdd) {
      char said[160];
      std::snprintf(said, sizeof said, "the steering adds %.3g (coefficient %.3g times value %zu, %.3g); at most %.0e fits",
                    add, double(s.coef), i, double(s.vector[i]), kMaxSteeringAdd);
      return tl::unexpected(bad(std::string(said) +
                                ": past it the norms' float32 sums of squares can overflow, and the run's numbers "
                                "turn to NaN. Use a smaller coefficient or vector"));
    }
  return {};
}

Status steering_reaches(const Steering& s, int T) {
  if (s.from < T) return {};
  return tl::unexpected(bad("the steering starts at position " + std::to_string(s.from) + ", but the text has " +
                            std::to_string(T) + (T == 1 ? " token (position 0)" : " tokens (positions 0 to " + std::to_string(T - 1) + ")") +
                            ": it would change nothing. Start it within the text"));
}

void steering_add(const Steering& s, const model::HookView& x) {
  const int T = x.shape[0], C = x.shape[1];
  const int end = s.rows == 1 ? T : std::min(T, s.from + s.rows);
  for (int t = s.from; t < end; t++) {
    const float* v = s.vector.data() + std::size_t(s.rows == 1 ? 0 : t - s.from) * std::size_t(C);
    for (int i = 0; i < C; i++) x.at(t, i) += s.coef * v[i];
  }
}

model::ForwardHooks steering_hooks(const model::ModelConfig& c, std::span<const Steering> steerings) {
  model::ForwardHooks hooks(c.n_layer);
  for (const Steering& s : steerings) hooks.want(model::HookPoint::resid_pre, s.layer);
  hooks.at = [list = std::vector<Steering>(steerings.begin(), steerings.end())](model::HookPoint p, int layer,
                                                                                 const model::HookView& v) {
    if (p != model::HookPoint::resid_pre) return;
    for (const Steering& s : list)
      if (s.layer == layer) steering_add(s, v);
  };
  return hooks;
}

Result<std::vector<float>> steering_vector_parse_json(std::string_view text, int C, const std::string& what) {
  if (auto s = json_depth_check(text, what, ErrorCode::invalid_argument); !s) return tl::unexpected(s.error());
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_array())
    return tl::unexpected(bad(what + ": not a JSON list of numbers (like [0.1, -0.3, ...], " + std::to_string(C) +
                              " of them)"));
  std::vector<float> v;
  for (const nlohmann::json& x : j) {
    if (!x.is_number())
      return tl::unexpected(bad(what + ": value " + std::to_string(v.size()) + " is not a number"));
    const double d = x.get<double>();
    v.push_back(std::fabs(d) > 3.4e38 ? float(d > 0 ? INFINITY : -INFINITY) : float(d));
  }
  if (v.size() != std::size_t(C))
    return tl::unexpected(bad(what + ": " + std::to_string(v.size()) + " values; this model's resid_pre has " +
                              std::to_string(C) + " (n_embd)"));
  if (auto s = check_finite(v, what); !s) return tl::unexpected(s.error());
  return v;
}

Result<std::vector<float>> steering_vector_read(const std::string& path, int C) {
  auto bytes = file_read(path, std::uint64_t(64) << 20);
  if (!bytes) return tl::unexpected(bytes.error());
  const std::size_t first = bytes->find_first_not_of(" \t\r\n");
  if (first != std::string::npos && (*bytes)[first] == '[') return steering_vector_parse_json(*bytes, C, path);
  if (bytes->size() != std::size_t(C) * 4)
    return tl::unexpected(bad(path + ": " + std::to_string(bytes->size()) + " bytes; a steering vector is " +
                              std::to_string(C) + " float32 (" + std::to_string(4 * C) +
                              " bytes, numpy: v.astype('<f4').tofile(path)) or a JSON list of " + std::to_string(C) +
                              " numbers"));
  std::vector<float> v(static_cast<std::size_t>(C));
  for (int i = 0; i < C; i++) {
    unsigned char b[4];
    std::memcpy(b, bytes->data() + 4 * std::size_t(i), 4);
    const std::uint32_t u = std::uint32_t(b[0]) | std::uint32_t(b[1]) << 8 | std::uint32_t(b[2]) << 16 | std::uint32_t(b[3]) << 24;
    std::memcpy(&v[std::size_t(i)], &u, 4);  // little-endian on every host
  }
  if (auto s = check_finite(v, path); !s) return tl::unexpected(s.error());
  return v;
}

Result<Steering> steering_from_prompts(const model::Parameters& params, std::span<const int> plus,
                                       std::span<const int> minus, int layer, float coef, model::Workspace& ws) {
  const model::ModelConfig& c = params.config;
  if (layer < 0 || layer >= c.n_layer)
    return tl::unexpected(bad("steering layer " + std::to_string(layer) + ": this model has " +
                              std::to_string(c.n_layer) + " layers, 0 to " + std::to_string(c.n_layer - 1)));
  if (plus.empty() || minus.empty()) return tl::unexpected(bad("ActAdd needs two non-empty prompts"));
  const int n = static_cast<int>(std::min(plus.size(), minus.size()));
  Steering s;
  s.layer = layer;
  s.coef = coef;
  s.rows = n;
  s.vector.assign(std::size_t(n) * std::size_t(c.n_embd), 0.0f);
  model::ForwardHooks hooks(c.n_layer);
  hooks.want(model::HookPoint::resid_pre, layer);
  float sign = 1.0f;
  hooks.at = [&](model::HookPoint, int, const model::HookView& v) {
    for (int t = 0; t < n; t++)
      for (int i = 0; i < c.n_embd; i++) s.vector[std::size_t(t) * std::size_t(c.n_embd) + std::size_t(i)] += sign * v.at(t, i);
  };
  model::ForwardOptions opt;
  opt.hooks = &hooks;
  opt.logits = false;
  model::ForwardOutput out;
  for (std::span<const int> ids : {plus, minus}) {
    if (Status st = model::forward(params, ids, opt, out, ws); !st) return tl::unexpected(st.error());
    sign = -1.0f;
  }
  if (auto st = steering_check(c, s); !st) return tl::unexpected(st.error());
  return s;
}

}  // namespace headlab::research
