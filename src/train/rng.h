// train/rng.h — the trainer's random numbers: splitmix64, one 64-bit state, so a run is
// repeatable from its seed and --resume continues the same stream from a checkpoint.
#pragma once

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
};

}  // namespace headlab::train
