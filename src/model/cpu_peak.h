// model/cpu_peak.h — the machine's arithmetic peak, measured: every thread of the engine's pool
// runs a loop of independent register-only multiply-adds (no memory traffic at all), so the
// figure is what the cores can do, the ceiling any product's GFLOPS is a fraction of.
//
//   for (const CpuPeak& p : cpu_peaks()) printf("%s %.0f\n", p.name, p.gflops);   // the benchmarks' bound
//   double r = cpu_bf16_speedup();   // serve's --compute auto: bf16 only where r > 1
//
// Loops, each where the CPU has the instructions (cpuid):
//   f32-avx2     vfmadd231ps on ymm, 12 chains (8 lanes x 2 flops each)
//   f32-avx512   vfmadd231ps on zmm, 16 chains (16 lanes x 2 flops)
//   bf16-avx512  vdpbf16ps on zmm, 16 chains (16 lanes x 2 products x 2 flops)
// On AMD's Zen 4 a zmm instruction takes its two 256-bit halves through the same pipes, so the
// first two agree there; on Zen 5 and Intel's AVX-512 server cores the second is twice the first.
// The third is about twice the second on Zen 4 but half of it on one Intel Xeon measured here
// (2026-12-07: 239 against 476 GFLOPS on 2 cores), where --compute bf16 is the slower arithmetic.
#pragma once

#include <vector>

namespace headlab::model {

struct CpuPeak {
  const char* name;  // "f32-avx2", "f32-avx512", "bf16-avx512"
  double gflops;     // all the pool's threads together
};

std::vector<CpuPeak> cpu_peaks();

// bf16-avx512's peak over f32-avx512's, on the calling thread alone, each loop short (about 10 ms
// in all): what `serve --compute auto` decides by. 0 where the CPU has no AVX512_BF16.
double cpu_bf16_speedup();

}  // namespace headlab::model
