// bench/cpu_peak.h — the machine's arithmetic peak, measured: every thread of the engine's pool
// runs a loop of independent register-only multiply-adds (no memory traffic at all), so the
// figure is what the cores can do, the ceiling any product's GFLOPS is a fraction of.
//
//   for (const CpuPeak& p : cpu_peaks()) printf("%s %.0f\n", p.name, p.gflops);
//
// Loops, each where the CPU has the instructions (cpuid):
//   f32-avx2     vfmadd231ps on ymm, 12 chains (8 lanes x 2 flops each)
//   f32-avx512   vfmadd231ps on zmm, 16 chains (16 lanes x 2 flops)
//   bf16-avx512  vdpbf16ps on zmm, 16 chains (16 lanes x 2 products x 2 flops)
// On AMD's Zen 4 a zmm instruction takes its two 256-bit halves through the same pipes, so the
// first two agree there; on Zen 5 and Intel's AVX-512 server cores the second is twice the first.
#pragma once

#include <vector>

namespace headlab::bench {

struct CpuPeak {
  const char* name;  // "f32-avx2", "f32-avx512", "bf16-avx512"
  double gflops;     // all the pool's threads together
};

std::vector<CpuPeak> cpu_peaks();

}  // namespace headlab::bench
