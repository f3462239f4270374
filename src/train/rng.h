// train/rng.h — the trainer's random numbers: splitmix64, one 64-bit state, so a run is
// repeatable from its seed and --resume continues the same stream from a checkpoint.
#pragma once

#include <cmath>
#include <cstdint>

namespace headlab::train {

struct Rng {
  std::uint64_t state = 0;

  explicit Rng(std::uint64_t seed = 0) : state(seed) {}
  std::uint64_t next_u64() {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // uniform in [0, n), n > 0
  int below(int n) { return static_cast<int>(next_u64() % static_cast<std::uint64_t>(n)); }
  // uniform in [lo, hi], lo <= hi
  int between(int lo, int hi) { return lo + below(hi - lo + 1); }
  // uniform in [0, 1)
  double uniform() { return static_cast<double>(next_u64() >> 11) * (1.0 / 9007199254740992.0); }
  // standard normal (Box-Muller; 1 - u keeps the log away from 0)
  double normal() {
    const double u = 1.0 - uniform(), v = uniform();
    return std::sqrt(-2.0 * std::log(u)) * std::cos(6.283185307179586 * v);
  }
  // Gamma(shape, 1), shape > 0: Marsaglia & Tsang 2000; below 1 through
  // Gamma(shape) = Gamma(shape + 1) * U^(1 / shape).
  double gamma(double shape) {
    if (shape < 1.0) return gamma(shape + 1.0) * std::pow(1.0 - uniform(), 1.0 / shape);
    const double d = shape - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
    for (;;) {
      const double x = normal(), t = 1.0 + c * x;
      if (t <= 0.0) continue;
      const double v = t * t * t, u = 1.0 - uniform();
      if (std::log(u) < 0.5 * x * x + d - d * v + d * std::log(v)) return d * v;
    }
  }
};

}  // namespace headlab::train
