// testing/blas_test_main.cpp — the main of the test binaries that run the engine: like
// gtest_main, after choosing OpenBLAS's kernels by the CPU's features as `headlab` does
// (model/blas.h; it may re-execute the binary once with OPENBLAS_CORETYPE set).
#include <gtest/gtest.h>

#include "model/blas.h"

int main(int argc, char** argv) {
  headlab::model::blas_use_cpu_kernels(argv);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
