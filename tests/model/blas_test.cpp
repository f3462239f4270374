// Tests for model/blas.h: which OpenBLAS kernels a CPU's features call for, and the line
// that says which are in use.
#include "model/blas.h"

#include <gtest/gtest.h>

#include <cstdlib>

using namespace headlab::model;

namespace {

CpuFeatures sse(int level) {  // 0: SSE3, 1: + SSSE3, 2: + SSE4.2
  CpuFeatures f;
  f.sse3 = true;
  f.ssse3 = level >= 1;
  f.sse4_2 = level >= 2;
  return f;
}

CpuFeatures avx2_fma() {
  CpuFeatures f = sse(2);
  f.avx = f.avx2 = f.fma = true;
  return f;
}

CpuFeatures avx512() {
  CpuFeatures f = avx2_fma();
  f.avx512f = f.avx512bw = f.avx512vl = f.avx512dq = f.avx512cd = true;
  return f;
}

}  // namespace

TEST(BlasCoreFor, ChoosesKernelsByTheCpusFeatures) {
  struct Row {
    CpuFeatures features;
    const char* core;
  };
  CpuFeatures bf16 = avx512();
  bf16.avx512_bf16 = true;
  CpuFeatures avx_only = sse(2);
  avx_only.avx = true;
  CpuFeatures avx2_no_fma = avx2_fma();
  avx2_no_fma.fma = false;
  CpuFeatures avx512_no_bw = avx512();  // Knights Landing: AVX-512F without BW/VL/DQ
  avx512_no_bw.avx512bw = avx512_no_bw.avx512vl = avx512_no_bw.avx512dq = false;
  CpuFeatures bf16_no_dq = bf16;
  bf16_no_dq.avx512dq = false;
  const Row table[] = {
      {CpuFeatures{}, "Prescott"},  {sse(0), "Prescott"},       {sse(1), "Core2"},
      {sse(2), "Nehalem"},          {avx_only, "Sandybridge"},  {avx2_no_fma, "Sandybridge"},
      {avx2_fma(), "Haswell"},      {avx512_no_bw, "Haswell"},  {avx512(), "SkylakeX"},
      {bf16, "Cooperlake"},         {bf16_no_dq, "Haswell"},
  };
  for (const Row& r : table) EXPECT_STREQ(blas_core_for(r.features), r.core);
}

TEST(BlasCoreRank, OrdersOpenBlasCoresFromPrescottToCooperlake) {
  EXPECT_EQ(blas_core_rank("Prescott"), 0);
  EXPECT_LT(blas_core_rank("Prescott"), blas_core_rank("Haswell"));
  EXPECT_LT(blas_core_rank("Haswell"), blas_core_rank("SkylakeX"));
  EXPECT_LT(blas_core_rank("SkylakeX"), blas_core_rank("Cooperlake"));
  EXPECT_EQ(blas_core_rank("cooperlake"), blas_core_rank("Cooperlake"));
  EXPECT_EQ(blas_core_rank("Zen"), blas_core_rank("Haswell"));
  EXPECT_EQ(blas_core_rank("Penryn"), blas_core_rank("Core2"));
  EXPECT_EQ(blas_core_rank("Vortex"), -1);
}

// The test binaries start through blas_use_cpu_kernels (tests/testing/blas_test_main.cpp),
// so unless the user set OPENBLAS_CORETYPE, the kernels in use are at least what the CPU allows.
TEST(BlasKernels, InUseAreAtLeastWhatTheCpuAllowsUnlessTheUserChose) {
  const std::string line = blas_kernels_description();
  std::printf("%s\n", line.c_str());
  EXPECT_EQ(line.rfind("OpenBLAS ", 0), 0u) << line;
  EXPECT_NE(line.find(std::string(blas_core_name()) + " kernels"), std::string::npos) << line;
  const char* env = std::getenv("OPENBLAS_CORETYPE");
  if (env && !std::getenv("HEADLAB_BLAS_REEXEC")) {
    EXPECT_NE(line.find("set by the user"), std::string::npos) << line;
    return;
  }
  EXPECT_GE(blas_core_rank(blas_core_name()), blas_core_rank(blas_core_for(cpu_features()))) << line;
}
