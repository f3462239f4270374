// model/blas.h — the engine's one door to OpenBLAS (sgemm, dgemm, dtrmm and two LAPACK routines,
// each single-threaded under the engine's pool), and the choice of OpenBLAS's kernels
// by the CPU's features.
//
//   int main(int argc, char** argv) {
//     blas_use_cpu_kernels(argv);   // first line: may re-execute the program (see below)
//     std::printf("%s\n", blas_kernels_description().c_str());
//     blas_sgemm(false, true, N, OC, C, 1.0f, inp, C, weight, C, 0.0f, out, OC);  // out = inp @ weight^T
//
// OpenBLAS picks its kernels when the library loads, from its own list of CPU models, and
// OPENBLAS_CORETYPE overrides it. Debian's 0.3.21 does not know recent CPUs (Intel family
// 6 model 207 with AVX-512 and AMX; AMD Zen 4) and falls back to SSE3 "Prescott" or
// "Haswell" kernels: GPT-2 small at 1,024 tokens then takes 11.3 s instead of 1.7 s.
// blas_core_for() names the kernels the CPU's features allow (cpuid), and
// blas_use_cpu_kernels() re-executes the program once with that OPENBLAS_CORETYPE when the
// library chose less and the user set none.
#pragma once

#include <string>

namespace headlab::model {

// C (M, N) = alpha * op(A) (M, K) @ op(B) (K, N) + beta * C, all row-major.
void blas_sgemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
                const float* B, int ldb, float beta, float* C, int ldc);
// The same in double (the research toolbox's factors, where float32's sums lose digits).
void blas_dgemm(bool trans_a, bool trans_b, int M, int N, int K, double alpha, const double* A, int lda,
                const double* B, int ldb, double beta, double* C, int ldc);
// B (M, N) = op(A) B (left: A (M, M)) or B op(A) (right: A (N, N)) for an upper-triangular A, in
// place, row-major, double: half a general product's multiply-adds.
void blas_dtrmm_upper(bool left, bool trans_a, int M, int N, const double* A, int lda, double* B, int ldb);

// LAPACK (in OpenBLAS), column-major as LAPACK is, single-threaded as the products are:
// the QR factorisation A = QR of A (m, n), R left in A's upper triangle and tau the reflectors
// (dgeqrf, its workspace sized by query); returns LAPACK's info (0 on success).
int lapack_dgeqrf(int m, int n, double* A, int lda, double* tau);
// The eigenvalues (wr + i wi) of a general A (n, n), destroyed (dgeev without vectors); info.
int lapack_dgeev_values(int n, double* A, int lda, double* wr, double* wi);

// OpenBLAS's name for the kernels in use ("Haswell", "SkylakeX", ...).
const char* blas_core_name();

// The CPU features that decide OpenBLAS's x86-64 kernels; each is true only when the
// CPU has it and the operating system saves its registers (XGETBV).
struct CpuFeatures {
  bool sse3 = false, ssse3 = false, sse4_2 = false;
  bool avx = false, avx2 = false, fma = false, f16c = false;
  bool avx512f = false, avx512bw = false, avx512vl = false, avx512dq = false, avx512cd = false;
  bool avx512_bf16 = false;
  bool avx512_vnni = false, avx_vnni = false;  // 8-bit dot products (vpdpbusd): zmm, and ymm without EVEX
  // AMX's bf16 tile products (tdpbf16ps) with tiles the OS saves (XCR0 bits 17-18); a process
  // must still ask Linux for them (arch_prctl ARCH_REQ_XCOMP_PERM) before its first tile
  bool amx_bf16 = false;
};
CpuFeatures cpu_features();  // this CPU, from cpuid

// The best OpenBLAS 0.3.21 core for these features, by what the kernels need:
//   AVX-512 F/BW/VL/DQ/CD + AVX512_BF16 -> "Cooperlake";  AVX-512 F/BW/VL/DQ/CD -> "SkylakeX";
//   AVX2 + FMA -> "Haswell";  AVX -> "Sandybridge";  SSE4.2 -> "Nehalem";  SSSE3 -> "Core2";
//   else "Prescott".
const char* blas_core_for(const CpuFeatures& features);

// The rank of a core name in that list (Prescott 0 .. Cooperlake 6; AMD's Zen counts as
// Haswell), case-insensitive; -1 for a name it does not know.
int blas_core_rank(const std::string& core);

// When OPENBLAS_CORETYPE is unset and the library's kernels rank below what the CPU
// allows, re-executes this program (/proc/self/exe, the same argv) with
// OPENBLAS_CORETYPE = blas_core_for(cpu_features()), since OpenBLAS reads the variable
// only when it loads. HEADLAB_BLAS_REEXEC guards against a second re-execution (an
// OpenBLAS without DYNAMIC_ARCH ignores the variable). Returns when it does not
// re-execute, or when exec fails (the program then runs on the library's choice).
// Call it first in main, before any thread starts.
void blas_use_cpu_kernels(char** argv);

// One line on the kernels in use and who chose them, e.g.
// "OpenBLAS 0.3.21 Cooperlake kernels (chosen from the CPU's features)" or
// "... (OPENBLAS_CORETYPE=Haswell set by the user)" or "... (OpenBLAS's own choice)".
std::string blas_kernels_description();

// Every call runs on the calling thread: the first sets OpenBLAS to one thread for the
// process (whatever OPENBLAS_NUM_THREADS says), and headlab splits its products over its
// own pool (thread_pool.h) instead. OpenBLAS's workers spin and yield between calls; beside
// the pool's threads they took a third of a training step and a sixth of a 1,024-token
// forward.

}  // namespace headlab::model
