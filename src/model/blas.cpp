// model/blas.cpp — OpenBLAS's products and the two LAPACK routines behind one door, and its kernels chosen by the
// CPU's features (see blas.h).
#include "model/blas.h"

#include <cblas.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <vector>

extern "C" {
// LAPACK (in OpenBLAS): the QR factorisation and the general real eigensolver. The trailing
// lengths are the Fortran ABI's hidden lengths of the character arguments.
void dgeqrf_(const int* m, const int* n, double* a, const int* lda, double* tau, double* work, const int* lwork,
             int* info);
void dgeev_(const char* jobvl, const char* jobvr, const int* n, double* a, const int* lda, double* wr, double* wi,
            double* vl, const int* ldvl, double* vr, const int* ldvr, double* work, const int* lwork, int* info,
            std::size_t, std::size_t);
}

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace headlab::model {

namespace {

// Set in the environment of the re-executed program, so that it never re-executes again.
constexpr const char* kReexecGuard = "HEADLAB_BLAS_REEXEC";

// OpenBLAS's x86-64 cores, lowest first, as OPENBLAS_CORETYPE spells them.
constexpr const char* kCores[] = {"Prescott", "Core2", "Nehalem", "Sandybridge", "Haswell", "SkylakeX", "Cooperlake"};

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// Every product is one part of a job on the engine's own pool (thread_pool.h): OpenBLAS must not
// start threads of its own under it. Set once, before the first call.
void blas_single_threaded() {
  static const bool once = (openblas_set_num_threads(1), true);
  (void)once;
}

}  // namespace

void blas_sgemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
                const float* B, int ldb, float beta, float* C, int ldc) {
  blas_single_threaded();
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, M, N, K, alpha,
              A, lda, B, ldb, beta, C, ldc);
}

void blas_dgemm(bool trans_a, bool trans_b, int M, int N, int K, double alpha, const double* A, int lda,
                const double* B, int ldb, double beta, double* C, int ldc) {
  blas_single_threaded();
  cblas_dgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, M, N, K, alpha,
              A, lda, B, ldb, beta, C, ldc);
}

void blas_dtrmm_upper(bool left, bool trans_a, int M, int N, const double* A, int lda, double* B, int ldb) {
  blas_single_threaded();
  cblas_dtrmm(CblasRowMajor, left ? CblasLeft : CblasRight, CblasUpper, trans_a ? CblasTrans : CblasNoTrans,
              CblasNonUnit, M, N, 1.0, A, lda, B, ldb);
}

int lapack_dgeqrf(int m, int n, double* A, int lda, double* tau) {
  blas_single_threaded();
  int info = 0, lwork = -1;
  double query = 0;
  dgeqrf_(&m, &n, A, &lda, tau, &query, &lwork, &info);
  if (info != 0) return info;
  lwork = std::max(1, static_cast<int>(query));
  std::vector<double> work(static_cast<std::size_t>(lwork));
  dgeqrf_(&m, &n, A, &lda, tau, work.data(), &lwork, &info);
  return info;
}

int lapack_dgeev_values(int n, double* A, int lda, double* wr, double* wi) {
  blas_single_threaded();
  std::vector<double> work(static_cast<std::size_t>(8 * n + 8));
  const int lwork = static_cast<int>(work.size()), one = 1;
  int info = 0;
  double dummy = 0;
  dgeev_("N", "N", &n, A, &lda, wr, wi, &dummy, &one, &dummy, &one, work.data(), &lwork, &info, 1, 1);
  return info;
}

const char* blas_core_name() { return openblas_get_corename(); }

CpuFeatures cpu_features() {
  CpuFeatures f;
#if defined(__x86_64__) || defined(__i386__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  f.sse3 = c & (1u << 0);
  f.ssse3 = c & (1u << 9);
  f.sse4_2 = c & (1u << 20);
  const bool fma = c & (1u << 12), osxsave = c & (1u << 27), avx = c & (1u << 28);
  // XCR0: which register states the OS saves (bits 1-2: SSE/AVX; 5-7: AVX-512)
  unsigned long long xcr0 = 0;
  if (osxsave) {
    unsigned lo = 0, hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    xcr0 = (static_cast<unsigned long long>(hi) << 32) | lo;
  }
  const bool os_avx = (xcr0 & 0x6) == 0x6, os_avx512 = (xcr0 & 0xe6) == 0xe6;
  f.avx = avx && os_avx;
  f.fma = fma && os_avx;
  f.f16c = os_avx && (c & (1u << 29));
  if (__get_cpuid_max(0, nullptr) >= 7) {
    __cpuid_count(7, 0, a, b, c, d);
    f.avx2 = os_avx && (b & (1u << 5));
    f.avx512f = os_avx512 && (b & (1u << 16));
    f.avx512dq = os_avx512 && (b & (1u << 17));
    f.avx512cd = os_avx512 && (b & (1u << 28));
    f.avx512bw = os_avx512 && (b & (1u << 30));
    f.avx512vl = os_avx512 && (b & (1u << 31));
    f.avx512_vnni = os_avx512 && (c & (1u << 11));
    f.amx_bf16 = (xcr0 & 0x60000) == 0x60000 && (d & (1u << 22)) && (d & (1u << 24));  // AMX-BF16, AMX-TILE
    __cpuid_count(7, 1, a, b, c, d);
    f.avx512_bf16 = os_avx512 && (a & (1u << 5));
    f.avx_vnni = os_avx && (a & (1u << 4));
  }
#endif
  return f;
}

const char* blas_core_for(const CpuFeatures& f) {
  const bool skylakex = f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq && f.avx512cd && f.avx2 && f.fma;
  if (skylakex && f.avx512_bf16) return "Cooperlake";
  if (skylakex) return "SkylakeX";
  if (f.avx2 && f.fma) return "Haswell";
  if (f.avx) return "Sandybridge";
  if (f.sse4_2) return "Nehalem";
  if (f.ssse3) return "Core2";
  return "Prescott";
}

int blas_core_rank(const std::string& core) {
  const std::string name = lower(core);
  for (int i = 0; i < int(std::size(kCores)); i++)
    if (name == lower(kCores[i])) return i;
  if (name == "penryn" || name == "dunnington") return 1;  // Core2 with SSE4.1
  if (name == "zen") return 4;                              // OpenBLAS runs Haswell kernels on Zen
  return -1;
}

void blas_use_cpu_kernels(char** argv) {
  if (std::getenv("OPENBLAS_CORETYPE") || std::getenv(kReexecGuard)) return;
  const char* want = blas_core_for(cpu_features());
  const int have = blas_core_rank(blas_core_name());
  if (have < 0 || have >= blas_core_rank(want)) return;  // an unknown name is the library's business
  setenv("OPENBLAS_CORETYPE", want, 1);
  setenv(kReexecGuard, "1", 1);
  execv("/proc/self/exe", argv);
  // exec failed: carry on with the library's kernels, and say so in the description
  unsetenv("OPENBLAS_CORETYPE");
}

std::string blas_kernels_description() {
  std::string config = openblas_get_config();  // "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY ..."
  std::string version = config.substr(0, config.find(' ', std::strlen("OpenBLAS ")));
  std::string line = version + " " + blas_core_name() + " kernels";
  const char* env = std::getenv("OPENBLAS_CORETYPE");
  if (env && std::getenv(kReexecGuard)) return line + " (chosen from the CPU's features)";
  if (env) return line + " (OPENBLAS_CORETYPE=" + env + " set by the user)";
  const char* want = blas_core_for(cpu_features());
  if (blas_core_rank(blas_core_name()) >= 0 && blas_core_rank(blas_core_name()) < blas_core_rank(want))
    return line + " (OpenBLAS's own choice; the CPU allows " + want + ")";
  return line + " (OpenBLAS's own choice)";
}

}  // namespace headlab::model
