// model/cpu_peak.h: the register-only loops the benchmarks' bound and serve's --compute auto use.
// (What they measure is a speed, so only its presence and sign are claims here; the figures live
// in bench/.)
#include "model/cpu_peak.h"

#include <gtest/gtest.h>

#include "model/blas.h"

using namespace headlab::model;

TEST(CpuPeak, Bf16SpeedupIsMeasuredExactlyWhereTheCpuHasAvx512Bf16) {
  const CpuFeatures f = cpu_features();
  const double r = cpu_bf16_speedup();
  if (f.avx512f && f.avx512_bf16)
    EXPECT_GT(r, 0.0);
  else
    EXPECT_EQ(r, 0.0);
}
