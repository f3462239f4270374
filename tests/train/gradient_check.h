// tests/train/gradient_check.h — checks a hand-written gradient against central finite
// differences of a scalar loss, printing the max abs difference and the first mismatches.
// (The trainer's own helper; the engine's tests/testing/gradcheck.h does the same for ops.)
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace headlab::testing {

// loss(x) must be a pure function of x. Checks every element, or `max_checks` of them
// spread evenly when x is large. A component matches when |analytic - numeric| <=
// atol + rtol * max(|analytic|, |numeric|).
inline void expect_gradient_matches(const std::function<double(const std::vector<float>&)>& loss,
                                    std::vector<float> x, const std::vector<float>& analytic,
                                    const std::string& name, float step = 1e-2f, double atol = 2e-3,
                                    double rtol = 2e-2, int max_checks = 400) {
  ASSERT_EQ(x.size(), analytic.size()) << name;
  const std::size_t n = x.size();
  const std::size_t stride = std::max<std::size_t>(1, n / static_cast<std::size_t>(max_checks));
  double max_diff = 0.0;
  int mismatches = 0;
  std::string first;
  for (std::size_t i = 0; i < n; i += stride) {
    const float saved = x[i];
    x[i] = saved + step;
    const double up = loss(x);
    x[i] = saved - step;
    const double down = loss(x);
    x[i] = saved;
    const double numeric = (up - down) / (2.0 * step);
    const double diff = std::fabs(numeric - analytic[i]);
    max_diff = std::max(max_diff, diff);
    if (diff > atol + rtol * std::max(std::fabs(numeric), std::fabs(double(analytic[i])))) {
      if (++mismatches <= 5) {
        char buf[160];
        std::snprintf(buf, sizeof buf, "\n  %s[%zu]: analytic %.6g, finite difference %.6g", name.c_str(), i,
                      double(analytic[i]), numeric);
        first += buf;
      }
    }
  }
  EXPECT_EQ(mismatches, 0) << name << ": max abs difference " << max_diff << first;
  if (mismatches == 0) std::printf("  %s: max abs difference %.3g\n", name.c_str(), max_diff);
}

}  // namespace headlab::testing
