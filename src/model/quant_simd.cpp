// model/quant_simd.cpp — the SIMD block decoders (quant_simd.h): quant_simd_decoders.inc compiled
// twice, in an AVX2 region and in an AVX-512F region, each over its own vector type. Built with
// -ffp-contract=off (CMakeLists.txt) so no product and difference fuse into an FMA the scalar
// decoders do not do.
#include "model/quant_simd.h"

#include <cstddef>
#include <cstdint>

#include "model/blas.h"  // cpu_features
#include "model/quant_blocks.h"
#include "util/check.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define HEADLAB_QUANT_X86 1
// GCC 12 warns about its own _mm512_undefined_* (a self-initialised variable) inside
// _mm512_cvtepu8_epi32 and its kin: a known false positive, not this file's.
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#else
#define HEADLAB_QUANT_X86 0
#endif

namespace headlab::model {

namespace {

#if HEADLAB_QUANT_X86

#if defined(__clang__)  // clang ignores GCC's target pragma: the same for every function below
#pragma clang attribute push(__attribute__((target("avx2,f16c"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,f16c")
#endif
namespace avx2 {
// A block's half scale by F16C (one instruction): the scalar conversion's value, but for a
// signalling NaN, which comes out quiet; every weight is a product of it, which quiets it anyway.
inline float half_at(const unsigned char* p) { return _cvtsh_ss(std::uint16_t(p[0] | (p[1] << 8))); }
struct V {
  static constexpr int W = 8;
  using I = __m256i;
  using F = __m256;
  static inline I u8(const unsigned char* p) { return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))); }
  static inline I i8(const unsigned char* p) { return _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))); }
  static inline I and_(I v, int c) { return _mm256_and_si256(v, _mm256_set1_epi32(c)); }
  static inline I or_(I a, I b) { return _mm256_or_si256(a, b); }
  static inline I shr(I v, int n) { return _mm256_srl_epi32(v, _mm_cvtsi32_si128(n)); }
  static inline I shl(I v, int n) { return _mm256_sll_epi32(v, _mm_cvtsi32_si128(n)); }
  static inline I sub_(I v, int c) { return _mm256_sub_epi32(v, _mm256_set1_epi32(c)); }
  static inline F cvt(I v) { return _mm256_cvtepi32_ps(v); }
  static inline F set1(float x) { return _mm256_set1_ps(x); }
  static inline F mul(F a, F b) { return _mm256_mul_ps(a, b); }
  static inline F add_min(F p, F m) { return _mm256_blendv_ps(_mm256_add_ps(p, m), p, _mm256_cmp_ps(p, p, _CMP_UNORD_Q)); }
  static inline F sub(F a, F b) { return _mm256_sub_ps(a, b); }
  static inline I bits(std::uint32_t x, int first) {  // lane j: bit first + j of x
    const I at = _mm256_add_epi32(_mm256_set1_epi32(first), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    return _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(int(x)), at), _mm256_set1_epi32(1));
  }
  static inline void store(float* p, F v) { _mm256_storeu_ps(p, v); }
};
#include "model/quant_simd_decoders.inc"
}  // namespace avx2
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

#if defined(__clang__)  // clang ignores GCC's target pragma: the same for every function below
#pragma clang attribute push(__attribute__((target("avx512f,f16c"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,f16c")
#endif
namespace avx512 {
inline float half_at(const unsigned char* p) { return _cvtsh_ss(std::uint16_t(p[0] | (p[1] << 8))); }  // as avx2's
struct V {
  static constexpr int W = 16;
  using I = __m512i;
  using F = __m512;
  static inline I u8(const unsigned char* p) { return _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  static inline I i8(const unsigned char* p) { return _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  static inline I and_(I v, int c) { return _mm512_and_si512(v, _mm512_set1_epi32(c)); }
  static inline I or_(I a, I b) { return _mm512_or_si512(a, b); }
  static inline I shr(I v, int n) { return _mm512_srl_epi32(v, _mm_cvtsi32_si128(n)); }
  static inline I shl(I v, int n) { return _mm512_sll_epi32(v, _mm_cvtsi32_si128(n)); }
  static inline I sub_(I v, int c) { return _mm512_sub_epi32(v, _mm512_set1_epi32(c)); }
  static inline F cvt(I v) { return _mm512_cvtepi32_ps(v); }
  static inline F set1(float x) { return _mm512_set1_ps(x); }
  static inline F mul(F a, F b) { return _mm512_mul_ps(a, b); }
  static inline F add_min(F p, F m) { return _mm512_mask_mov_ps(_mm512_add_ps(p, m), _mm512_cmp_ps_mask(p, p, _CMP_UNORD_Q), p); }
  static inline F sub(F a, F b) { return _mm512_sub_ps(a, b); }
  static inline I bits(std::uint32_t x, int first) {  // lane j: bit first + j of x
    const I at = _mm512_add_epi32(_mm512_set1_epi32(first),
                                  _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0));
    return _mm512_and_si512(_mm512_srlv_epi32(_mm512_set1_epi32(int(x)), at), _mm512_set1_epi32(1));
  }
  static inline void store(float* p, F v) { _mm512_storeu_ps(p, v); }
};
#include "model/quant_simd_decoders.inc"
}  // namespace avx512
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

#endif  // HEADLAB_QUANT_X86

bool simd_type(WeightType t) { return weight_type_quantized(t); }  // every block type has a decoder here

}  // namespace

QuantDecoder quant_decoder_best() {
  static const QuantDecoder best = [] {  // cpuid once (in a virtual machine it traps)
    const CpuFeatures f = cpu_features();
    if (HEADLAB_QUANT_X86 && f.avx512f && f.f16c) return QuantDecoder::avx512;
    if (HEADLAB_QUANT_X86 && f.avx2 && f.f16c) return QuantDecoder::avx2;
    return QuantDecoder::scalar;
  }();
  return best;
}

bool quant_decoder_supported(QuantDecoder d) { return int(d) <= int(quant_decoder_best()); }

std::string_view quant_decoder_name(QuantDecoder d) {
  switch (d) {
    case QuantDecoder::avx512: return "avx512";
    case QuantDecoder::avx2: return "avx2";
    case QuantDecoder::scalar: return "scalar";
  }
  return "?";
}

bool quant_decoder_simd(QuantDecoder d, WeightType t) {
  return HEADLAB_QUANT_X86 && d != QuantDecoder::scalar && simd_type(t);
}

void quant_dequantize_with(QuantDecoder d, WeightType t, const unsigned char* blocks, std::int64_t n, float* out) {
  HEADLAB_CHECK(quant_decoder_supported(d) && weight_type_quantized(t) && n % quant_block_elements(t) == 0);
#if HEADLAB_QUANT_X86
  if (d == QuantDecoder::avx512 && avx512::dequantize(t, blocks, n, out)) return;
  if (d == QuantDecoder::avx2 && avx2::dequantize(t, blocks, n, out)) return;
#endif
  quant_dequantize(t, blocks, n, out);
}

void quant_transpose8(QuantDecoder d, const float* rows, int ld, int n, float* out) {
#if HEADLAB_QUANT_X86
  if (d == QuantDecoder::avx512) return avx512::transpose8(rows, ld, n, out);
  if (d == QuantDecoder::avx2) return avx2::transpose8(rows, ld, n, out);
#endif
  for (int k = 0; k < n; k++)
    for (int i = 0; i < 8; i++) out[std::size_t(k) * 32 + i] = rows[std::size_t(i) * ld + k];
}

}  // namespace headlab::model
