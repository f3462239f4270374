// model/blas.cpp — OpenBLAS's sgemm behind one function (see blas.h).
#include "model/blas.h"

#include <cblas.h>

namespace headlab::model {

void blas_sgemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
                const float* B, int ldb, float beta, float* C, int ldc) {
  static const bool single_threaded = (openblas_set_num_threads(1), true);
  (void)single_threaded;
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, M, N, K, alpha,
              A, lda, B, ldb, beta, C, ldc);
}

const char* blas_core_name() { return openblas_get_corename(); }


}  // namespace headlab::model
