// testing/gradcheck.h — the one finite-difference harness every backward is checked with.
//
//   // loss(x) = sum_i out_i * w_i for fixed random w, so dloss/dout = w is the dout
//   // handed to the backward; the harness nudges each input and compares.
//   EXPECT_TRUE(gradcheck("gelu dinp", loss, x.data(), x.size(), dinp.data()));
//
// Central differences: numeric_i = (loss(x + eps e_i) - loss(x - eps e_i)) / (2 eps),
// with the loss accumulated in double so float rounding of the sum does not dominate.
// It passes when |analytic - numeric| <= atol + rtol * |numeric| for every element; it
// always prints the max abs difference, and on failure the first mismatches.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdio>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace headlab::testing {

struct GradcheckOptions {
  double eps = 1e-3;
  double atol = 2e-3;
  double rtol = 2e-2;
  std::size_t max_elements = 4096;  // check a strided subset of larger inputs
};

// `loss` reads `x` (n floats); `analytic` holds dloss/dx from the backward.
inline ::testing::AssertionResult gradcheck(const std::string& name, const std::function<double()>& loss,
                                            float* x, std::size_t n, const float* analytic,
                                            GradcheckOptions opt = {}) {
  const std::size_t stride = n > opt.max_elements ? (n + opt.max_elements - 1) / opt.max_elements : 1;
  double max_abs = 0.0;
  std::size_t checked = 0, failed = 0;
  std::ostringstream mismatches;
  for (std::size_t i = 0; i < n; i += stride) {
    const float saved = x[i];
    x[i] = static_cast<float>(saved + opt.eps);
    const double plus = loss();
    x[i] = static_cast<float>(saved - opt.eps);
    const double minus = loss();
    x[i] = saved;
    // the step actually taken in float, not the one asked for
    const double h = (double(static_cast<float>(saved + opt.eps)) - double(static_cast<float>(saved - opt.eps)));
    const double numeric = (plus - minus) / h;
    const double diff = std::fabs(double(analytic[i]) - numeric);
    max_abs = std::max(max_abs, diff);
    checked++;
    if (diff > opt.atol + opt.rtol * std::fabs(numeric)) {
      if (failed < 8)
        mismatches << "\n  [" << i << "] analytic " << analytic[i] << " numeric " << numeric << " diff " << diff;
      failed++;
    }
  }
  std::printf("gradcheck %s: %zu elements, max abs diff %.3g\n", name.c_str(), checked, max_abs);
  if (failed == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "gradcheck " << name << ": " << failed << " of " << checked
                                       << " elements differ, max abs diff " << max_abs
                                       << "; first mismatches:" << mismatches.str();
}

// n values from N(0, stddev), deterministic in seed.
inline std::vector<float> random_vector(std::size_t n, unsigned seed, float stddev = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, stddev);
  std::vector<float> v(n);
  for (float& f : v) f = dist(rng);
  return v;
}

// sum_i a_i * w_i in double: the scalar loss whose gradient wrt a is w.
inline double weighted_sum(const float* a, const float* w, std::size_t n) {
  double s = 0.0;
  for (std::size_t i = 0; i < n; i++) s += double(a[i]) * double(w[i]);
  return s;
}

}  // namespace headlab::testing
