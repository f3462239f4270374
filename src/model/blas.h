// model/blas.h — the engine's one door to OpenBLAS's sgemm (row-major).
//
//   blas_sgemm(false, true, N, OC, C, 1.0f, inp, C, weight, C, 0.0f, out, OC);  // out = inp @ weight^T
//
// Kernel choice is OpenBLAS's, at load time; OPENBLAS_CORETYPE overrides it. (OpenBLAS 0.3.21
// takes AVX-512 CPUs it does not know, such as AMD Zen 4, for Haswell: OPENBLAS_CORETYPE=SkylakeX
// about doubles large products there. The engine leaves that choice to whoever runs it.)
#pragma once

namespace headlab::model {

// C (M, N) = alpha * op(A) (M, K) @ op(B) (K, N) + beta * C, all row-major.
void blas_sgemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
                const float* B, int ldb, float beta, float* C, int ldc);

// OpenBLAS's name for the kernels in use ("Haswell", "SkylakeX", ...).
const char* blas_core_name();

// Every call runs on the calling thread: the first sets OpenBLAS to one thread for the
// process (whatever OPENBLAS_NUM_THREADS says), and headlab splits its products over its
// own pool (thread_pool.h) instead. OpenBLAS's workers spin and yield between calls; beside
// the pool's threads they took a third of a training step and a sixth of a 1,024-token
// forward.

}  // namespace headlab::model
