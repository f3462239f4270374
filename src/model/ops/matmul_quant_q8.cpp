// model/ops/matmul_quant_q8.cpp — products with quantized matrices on inputs rounded to 8 bits
// (see matmul_quant_q8.h): the inputs' quantization (ggml's Q8_K and Q8_0), each weight block
// unpacked to its integer form, and the integer dot products (portable, AVX2, AVX512_VNNI).
#include "model/ops/matmul_quant_q8.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "model/blas.h"  // cpu_features
#include "model/thread_pool.h"
#include "util/check.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define HEADLAB_Q8_X86 1
// GCC 12 warns about its own _mm512_undefined_* (a self-initialised variable) inside
// _mm512_zextsi256_si512, _mm512_cvtepi32_ps and _mm512_reduce_add_ps: a known false positive
// (as in matmul_packed.cpp).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#else
#define HEADLAB_Q8_X86 0
#endif

namespace headlab::model {

namespace {

constexpr int kRowsW = 4;  // weight rows unpacked together (a tile's rows of W)

float half_at(const unsigned char* p) { return f16_to_f32(std::uint16_t(p[0] | (p[1] << 8))); }

// ---- the inputs' blocks ----------------------------------------------------------------------

// A value of x / d (or x * (1 / d)) held inside int8's symmetric range before it is rounded: the
// float-to-int conversion of a NaN or of a huge value is undefined, and a scale computed from a
// subnormal maximum can be infinite.
inline float q8_clamp(float v) { return v != v ? 0.0f : std::clamp(v, -127.0f, 127.0f); }

// One block of E inputs: q, d, and the sums of each 16 q. E = 256: Q8_K (d = max / -127, the
// largest input's sign kept; round half to even); E = 32: Q8_0 (d = amax / 127 kept as a half;
// round half away from zero).
void quantize_block(int E, const float* x, std::int8_t* q, float& d, std::int16_t* bsums) {
  float amax = 0.0f, max = 0.0f;
  bool finite = true;
  for (int j = 0; j < E; j++) {
    const float v = x[j], a = std::fabs(v);
    if (!std::isfinite(v)) finite = false;
    if (a > amax) amax = a, max = v;
  }
  if (!finite || amax == 0.0f) {
    d = finite ? 0.0f : std::numeric_limits<float>::quiet_NaN();
    for (int j = 0; j < E; j++) q[j] = 0;
  } else if (E == 256) {
    const float iscale = -127.0f / max;
    for (int j = 0; j < E; j++) q[j] = std::int8_t(std::min(127, int(std::nearbyint(q8_clamp(iscale * x[j])))));
    d = 1.0f / iscale;
  } else {
    const float d32 = amax / 127.0f, id = 1.0f / d32;
    for (int j = 0; j < E; j++) q[j] = std::int8_t(int(std::round(q8_clamp(x[j] * id))));
    d = f16_to_f32(f32_to_f16(d32));
  }
  for (int g = 0; g < E / 16; g++) {
    int s = 0;
    for (int i = 0; i < 16; i++) s += q[16 * g + i];
    bsums[g] = std::int16_t(s);
  }
}

// ---- a weight block as integers (matmul_quant_q8.h) -------------------------------------------
//
// Per weight row, for the product's nb = K / E blocks:
//   u (K)        the unsigned quants (|q| for the signed types); avx512vnni: K-quant blocks in
//                lane order (lane_order)
//   s (K)        the signed quants (Q8_0, Q4_0: the sign trick's signs)
//   sc, ca, cb   (nb, 16) per 16 weights: the scale, sc * a, and the minimum m (K-quants)
//   scv          (nb, 128) avx2: the scales as vpmaddwd's int16 lanes (per 32 weights, 8 lanes
//                of each 16's scale)
//   ab           (nb, 2, 16) avx512vnni: per group A = d * sc and B = dmin * m - d * sc * a
//   dx           (nb rounded up to even, 8) avx512vnni, 32-blocks: each block's d 8 times (u: q + 128)
//   d, dmin      (nb) the block's half scales
struct UnpackedRow {
  std::vector<std::uint8_t> u;
  std::vector<std::int8_t> s;
  std::vector<std::int16_t> sc, ca, cb, scv;
  std::vector<float> ab, dx;
  std::vector<float> d, dmin;
  void size(int K, int nb) {
    if (int(u.size()) < K) u.resize(std::size_t(K)), s.resize(std::size_t(K));
    if (int(d.size()) < nb) {
      sc.resize(std::size_t(nb) * 16), ca.resize(std::size_t(nb) * 16), cb.resize(std::size_t(nb) * 16);
      scv.resize(std::size_t(nb) * 128), ab.resize(std::size_t(nb) * 32), dx.resize(std::size_t(nb + 1) * 8);
      d.resize(std::size_t(nb)), dmin.resize(std::size_t(nb));
    }
  }
};

// The avx512vnni kernel's order of a 256-block (tile512_k): byte 64c + 4l + b holds value
// 16l + 4c + b (c < 4 steps, l < 16 lanes, b < 4 bytes), so each lane sees one group of 16.
// (T one byte: the 4 bytes b go together.)
template <class T>
void lane_order(const T* in, T* out) {
  static_assert(sizeof(T) == 1);
  for (int c = 0; c < 4; c++)
    for (int l = 0; l < 16; l++) std::memcpy(out + 64 * c + 4 * l, in + 16 * l + 4 * c, 4);
}

// Q4_K's and Q5_K's 12 bytes of 6-bit scales and minimums at `scales`, per 16 weights (each
// sub-block of 32 twice): sc the scale, cb the minimum, ca 0.
void k4_scales(const unsigned char* scales, std::int16_t* sc, std::int16_t* ca, std::int16_t* cb) {
  for (int j = 0; j < 8; j++) {
    int scale, min;
    quant_scale_min_k4(scales, j, scale, min);
    sc[2 * j] = sc[2 * j + 1] = std::int16_t(scale);
    cb[2 * j] = cb[2 * j + 1] = std::int16_t(min);
    ca[2 * j] = ca[2 * j + 1] = 0;
  }
}

// Q4_K: d | dmin | scales[12] | qs[128] (quant_blocks.cpp): weights 64g + l the low nibbles of
// qs[32g + l], 64g + 32 + l the high ones; sub-block j of 32 has scale and minimum j.
void unpack_q4_k(const unsigned char* b, std::uint8_t* u, std::int16_t* sc, std::int16_t* ca, std::int16_t* cb,
                 float& d, float& dmin) {
  d = half_at(b), dmin = half_at(b + 2);
  const unsigned char* qs = b + 16;
  for (int g = 0; g < 4; g++)
    for (int l = 0; l < 32; l++) u[64 * g + l] = qs[32 * g + l] & 0x0f, u[64 * g + 32 + l] = qs[32 * g + l] >> 4;
  k4_scales(b + 4, sc, ca, cb);
}

// Q5_K: d | dmin | scales[12] | qh[32] | qs[128]: Q4_K's nibbles with a fifth bit, bit 2g of
// qh[l] for weight 64g + l and bit 2g + 1 for 64g + 32 + l.
void unpack_q5_k(const unsigned char* b, std::uint8_t* u, std::int16_t* sc, std::int16_t* ca, std::int16_t* cb,
                 float& d, float& dmin) {
  d = half_at(b), dmin = half_at(b + 2);
  const unsigned char* qh = b + 16;
  const unsigned char* qs = b + 48;
  for (int g = 0; g < 4; g++)
    for (int l = 0; l < 32; l++) {
      u[64 * g + l] = std::uint8_t((qs[32 * g + l] & 0x0f) | ((qh[l] >> (2 * g)) & 1) << 4);
      u[64 * g + 32 + l] = std::uint8_t((qs[32 * g + l] >> 4) | ((qh[l] >> (2 * g + 1)) & 1) << 4);
    }
  k4_scales(b + 4, sc, ca, cb);
}

// Q6_K: ql[128] | qh[64] | scales[16] int8 | d: weight 128h + 32k + l has the low 4 bits of
// ql[64h + l + 32(k % 2)] (low nibble for k < 2) and bits 2k of qh[32h + l]; x = d * sc * (u - 32).
void unpack_q6_k(const unsigned char* b, std::uint8_t* u, std::int16_t* sc, std::int16_t* ca, std::int16_t* cb,
                 float& d, float& dmin) {
  const unsigned char* ql = b;
  const unsigned char* qh = b + 128;
  d = half_at(b + 208), dmin = 0.0f;
  for (int h = 0; h < 2; h++)
    for (int k = 0; k < 4; k++)
      for (int l = 0; l < 32; l++) {
        const unsigned char low_byte = ql[64 * h + l + 32 * (k % 2)];
        const int low = k < 2 ? low_byte & 0x0f : low_byte >> 4;
        u[128 * h + 32 * k + l] = std::uint8_t(low | ((qh[32 * h + l] >> (2 * k)) & 3) << 4);
      }
  for (int g = 0; g < 16; g++) {
    sc[g] = std::int8_t(b[192 + g]);
    ca[g] = std::int16_t(-32 * sc[g]);
    cb[g] = 0;
  }
}

// Q8_0: d | qs[32] int8.  Q4_0: d | qs[16], weight i < 16 the low nibble of qs[i] minus 8,
// weight i + 16 the high one.  Both signed: s = q, u = |q|.
void unpack_q8_0(const unsigned char* b, std::uint8_t* u, std::int8_t* s, float& d) {
  d = half_at(b);
  for (int i = 0; i < 32; i++) {
    const std::int8_t q = std::int8_t(b[2 + i]);
    s[i] = q, u[i] = std::uint8_t(q < 0 ? -int(q) : int(q));
  }
}
void unpack_q4_0(const unsigned char* b, std::uint8_t* u, std::int8_t* s, float& d) {
  d = half_at(b);
  for (int i = 0; i < 16; i++) {
    const int lo = (b[2 + i] & 0x0f) - 8, hi = (b[2 + i] >> 4) - 8;
    s[i] = std::int8_t(lo), s[i + 16] = std::int8_t(hi);
    u[i] = std::uint8_t(lo < 0 ? -lo : lo), u[i + 16] = std::uint8_t(hi < 0 ? -hi : hi);
  }
}

// Row r's blocks [b0, b0 + nb) into its integer form, the scale vectors laid out for `kernel`.
void unpack_row(Q8Kernel kernel, WeightType t, const unsigned char* row, int b0, int nb, UnpackedRow& o) {
  const int E = quant_block_elements(t), bytes = quant_block_bytes(t);
  o.size(nb * E, nb);
  for (int b = 0; b < nb; b++) {
    const unsigned char* blk = row + std::size_t(b0 + b) * std::size_t(bytes);
    std::uint8_t* u = o.u.data() + std::size_t(b) * std::size_t(E);
    std::int16_t *sc = o.sc.data() + std::size_t(b) * 16, *ca = o.ca.data() + std::size_t(b) * 16,
                 *cb = o.cb.data() + std::size_t(b) * 16;
    if (E == 32 && kernel == Q8Kernel::avx512vnni) {  // q + 128 (unsigned: no sign trick), d in 8 lanes
      const float d = half_at(blk);
      if (t == WeightType::q8_0)
        for (int i = 0; i < 32; i++) u[i] = std::uint8_t(blk[2 + i] ^ 0x80);
      else  // Q4_0: nibble - 8 + 128
        for (int i = 0; i < 16; i++) u[i] = std::uint8_t((blk[2 + i] & 0x0f) + 120), u[i + 16] = std::uint8_t((blk[2 + i] >> 4) + 120);
      o.d[std::size_t(b)] = d;
      for (int l = 0; l < 8; l++) o.dx[std::size_t(b) * 8 + std::size_t(l)] = d;
      if (b + 1 == nb && nb % 2)
        for (int l = 0; l < 8; l++) o.dx[std::size_t(b + 1) * 8 + std::size_t(l)] = 0.0f;
      continue;
    }
    switch (t) {
      case WeightType::q4_k: unpack_q4_k(blk, u, sc, ca, cb, o.d[std::size_t(b)], o.dmin[std::size_t(b)]); break;
      case WeightType::q5_k: unpack_q5_k(blk, u, sc, ca, cb, o.d[std::size_t(b)], o.dmin[std::size_t(b)]); break;
      case WeightType::q6_k: unpack_q6_k(blk, u, sc, ca, cb, o.d[std::size_t(b)], o.dmin[std::size_t(b)]); break;
      case WeightType::q8_0: unpack_q8_0(blk, u, o.s.data() + std::size_t(b) * 32, o.d[std::size_t(b)]); break;
      case WeightType::q4_0: unpack_q4_0(blk, u, o.s.data() + std::size_t(b) * 32, o.d[std::size_t(b)]); break;
      default: HEADLAB_CHECK(false);
    }
    if (E != 256) continue;
    if (kernel == Q8Kernel::avx2) {
      std::int16_t* v = o.scv.data() + std::size_t(b) * 128;  // chunk c (32 weights): 16 int16 lanes, 8 of each 16's scale
      for (int c = 0; c < 8; c++)
        for (int l = 0; l < 16; l++) v[16 * c + l] = sc[2 * c + l / 8];
    } else if (kernel == Q8Kernel::avx512vnni) {  // lane order; per group g: A = d * sc, B = dmin * m - d * ca
      std::uint8_t natural[256];
      std::memcpy(natural, u, 256);
      lane_order(natural, u);
      float* f = o.ab.data() + std::size_t(b) * 32;
      const float d = o.d[std::size_t(b)], dmin = o.dmin[std::size_t(b)];
      for (int g = 0; g < 16; g++) f[g] = d * float(sc[g]), f[16 + g] = dmin * float(cb[g]) - d * float(ca[g]);
    }
  }
}

// What a kernel reads of one product: the unpacked weight rows of a tile and the quantized inputs.
struct Tile {
  const UnpackedRow* w[kRowsW];
  int nb;
  const Q8Inputs* x;
  const std::int8_t* q;  // x's quants as the kernel reads them: x->q, or in lane order (avx512vnni, K-quants)
  int xb0;  // the inputs' first block (0: the inputs cover exactly the product's columns)
  // avx512vnni, Q8_0 and Q4_0 (tile512_0), per input row and pair of blocks (b, b + 1), 16 lanes:
  const std::int32_t* corr;  // -128 * (the sum of block b's quants) in lane 0, of b + 1's in lane 8
  const float* ydx;          // yd of block b in lanes 0-7, of b + 1 in lanes 8-15
};


// ---- portable: the reference order ------------------------------------------------------------

// out[i] for input rows [i0, i1) and weight row wr: per block, integer sums, then
//   acc += (yd * d) * isum - (yd * dmin) * msum
float dot_portable(const UnpackedRow& w, int nb, int E, bool is_signed, const Q8Inputs& x, int i) {
  const int nbx = x.K / x.E;
  const std::int8_t* y = x.q.data() + std::size_t(i) * std::size_t(x.K);
  const float* yd = x.d.data() + std::size_t(i) * std::size_t(nbx);
  const std::int16_t* bs = x.bsums.data() + std::size_t(i) * std::size_t(x.K / 16);
  float acc = 0.0f;
  for (int b = 0; b < nb; b++) {
    const std::int8_t* yb = y + std::size_t(b) * std::size_t(E);
    if (is_signed) {
      const std::int8_t* s = w.s.data() + std::size_t(b) * std::size_t(E);
      int isum = 0;
      for (int k = 0; k < E; k++) isum += int(s[k]) * int(yb[k]);
      acc += (yd[b] * w.d[std::size_t(b)]) * float(isum);
      continue;
    }
    const std::uint8_t* u = w.u.data() + std::size_t(b) * std::size_t(E);
    const std::int16_t *sc = w.sc.data() + std::size_t(b) * 16, *ca = w.ca.data() + std::size_t(b) * 16,
                       *cb = w.cb.data() + std::size_t(b) * 16;
    int isum = 0, msum = 0;
    for (int g = 0; g < 16; g++) {
      int s = 0;
      for (int k = 0; k < 16; k++) s += int(u[16 * g + k]) * int(yb[16 * g + k]);
      isum += sc[g] * s + ca[g] * bs[16 * b + g];
      msum += cb[g] * bs[16 * b + g];
    }
    acc += (yd[b] * w.d[std::size_t(b)]) * float(isum) - (yd[b] * w.dmin[std::size_t(b)]) * float(msum);
  }
  return acc;
}

void tile_portable(const Tile& t, int rows_w, int E, bool is_signed, float* out, int ldo, int N) {
  for (int i = 0; i < N; i++)
    for (int r = 0; r < rows_w; r++) out[std::size_t(i) * std::size_t(ldo) + std::size_t(r)] = dot_portable(*t.w[r], t.nb, E, is_signed, *t.x, i);
}

#if HEADLAB_Q8_X86

// ---- AVX2: vpmaddubsw (u8 x s8 pairs to int16) then vpmaddwd by the scales ---------------------

__attribute__((target("avx2,fma"))) inline float hsum256(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// K-quants (E = 256), RW weight rows x RI input rows. Each 32 weights: maddubs (exact: a pair
// is at most 2 * 63 * 127) and madd by the 16's scales, added in int32 lanes over the block;
// then the bsums' corrections (madd) and the two float products per block into float lanes.
template <int RW, int RI, bool kMin>
__attribute__((target("avx2,fma"))) void tile256_k(const Tile& t, float* out, int ldo, int i0) {
  const Q8Inputs& x = *t.x;
  const int nbx = x.K / x.E;
  __m256 acc[RW][RI];
  for (int r = 0; r < RW; r++)
    for (int i = 0; i < RI; i++) acc[r][i] = _mm256_setzero_ps();
  for (int b = 0; b < t.nb; b++) {
    __m256i isum[RW][RI];
    for (int r = 0; r < RW; r++)
      for (int i = 0; i < RI; i++) isum[r][i] = _mm256_setzero_si256();
    for (int c = 0; c < 8; c++) {
      __m256i u[RW], sv[RW];
      for (int r = 0; r < RW; r++) {
        u[r] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t.w[r]->u.data() + std::size_t(b) * 256 + 32 * c));
        sv[r] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t.w[r]->scv.data() + std::size_t(b) * 128 + 16 * c));
      }
      for (int i = 0; i < RI; i++) {
        const __m256i y = _mm256_loadu_si256(
            reinterpret_cast<const __m256i*>(x.q.data() + std::size_t(i0 + i) * std::size_t(x.K) + std::size_t(t.xb0 + b) * 256 + 32 * c));
        for (int r = 0; r < RW; r++)
          isum[r][i] = _mm256_add_epi32(isum[r][i], _mm256_madd_epi16(_mm256_maddubs_epi16(u[r], y), sv[r]));
      }
    }
    for (int i = 0; i < RI; i++) {
      const std::size_t row = std::size_t(i0 + i);
      const __m256i bs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.bsums.data() + row * std::size_t(x.K / 16) + std::size_t(t.xb0 + b) * 16));
      const float yd = x.d[row * std::size_t(nbx) + std::size_t(t.xb0 + b)];
      for (int r = 0; r < RW; r++) {
        const __m256i ca = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t.w[r]->ca.data() + std::size_t(b) * 16));
        const __m256i is = _mm256_add_epi32(isum[r][i], _mm256_madd_epi16(bs, ca));
        acc[r][i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(is), _mm256_set1_ps(yd * t.w[r]->d[std::size_t(b)]), acc[r][i]);
        if constexpr (kMin) {
          const __m256i cb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t.w[r]->cb.data() + std::size_t(b) * 16));
          acc[r][i] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(_mm256_madd_epi16(bs, cb)),
                                       _mm256_set1_ps(yd * t.w[r]->dmin[std::size_t(b)]), acc[r][i]);
        }
      }
    }
  }
  for (int i = 0; i < RI; i++)
    for (int r = 0; r < RW; r++) out[std::size_t(i) * std::size_t(ldo) + std::size_t(r)] = hsum256(acc[r][i]);
}

// Q8_0, Q4_0 (E = 32): the sign trick, |q| times y * sign(q) (a pair at most 2 * 128 * 127), a
// madd by ones to int32 lanes, one float product per block.
template <int RW, int RI>
__attribute__((target("avx2,fma"))) void tile256_0(const Tile& t, float* out, int ldo, int i0) {
  const Q8Inputs& x = *t.x;
  const int nbx = x.K / x.E;
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 acc[RW][RI];
  for (int r = 0; r < RW; r++)
    for (int i = 0; i < RI; i++) acc[r][i] = _mm256_setzero_ps();
  for (int b = 0; b < t.nb; b++) {
    __m256i u[RW], s[RW];
    for (int r = 0; r < RW; r++) {
      u[r] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t.w[r]->u.data() + std::size_t(b) * 32));
      s[r] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t.w[r]->s.data() + std::size_t(b) * 32));
    }
    for (int i = 0; i < RI; i++) {
      const std::size_t row = std::size_t(i0 + i);
      const __m256i y = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.q.data() + row * std::size_t(x.K) + std::size_t(t.xb0 + b) * 32));
      const float yd = x.d[row * std::size_t(nbx) + std::size_t(t.xb0 + b)];
      for (int r = 0; r < RW; r++) {
        const __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(u[r], _mm256_sign_epi8(y, s[r])), ones);
        acc[r][i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(yd * t.w[r]->d[std::size_t(b)]), acc[r][i]);
      }
    }
  }
  for (int i = 0; i < RI; i++)
    for (int r = 0; r < RW; r++) out[std::size_t(i) * std::size_t(ldo) + std::size_t(r)] = hsum256(acc[r][i]);
}

// ---- AVX512_VNNI: vpdpbusd (4 u8 x s8 products into an int32 lane) -----------------------------

#define HEADLAB_VNNI_TARGET "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma"

// K-quants, with a block's 256 weights and inputs both in the lane order (lane_order): byte
// 64c + 4l + b holds weight 16l + 4c + b, so lane l of every 64-byte step belongs to group l
// (16 weights, one scale) and four accumulating vpdpbusd give each group's whole dot product.
// Then per block and pair, in float32 lanes (the group's dot product and bsum are exact in
// float32: below 2^24):  acc += yd * (dot * A - bsum * B),  A = d * sc and B = dmin * m - d * sc * a
// per group (unpack_row), yd * bsum once per input row and block.
template <int RW, int RI>
__attribute__((target(HEADLAB_VNNI_TARGET))) void tile512_k(const Tile& t, float* out, int ldo, int i0) {
  const Q8Inputs& x = *t.x;
  const int nbx = x.K / x.E;
  __m512 acc[RW][RI];
  for (int r = 0; r < RW; r++)
    for (int i = 0; i < RI; i++) acc[r][i] = _mm512_setzero_ps();
  for (int b = 0; b < t.nb; b++) {
    __m512i dot[RW][RI];
    for (int r = 0; r < RW; r++)
      for (int i = 0; i < RI; i++) dot[r][i] = _mm512_setzero_si512();
    for (int c = 0; c < 4; c++) {
      __m512i u[RW];
      for (int r = 0; r < RW; r++) u[r] = _mm512_loadu_si512(t.w[r]->u.data() + std::size_t(b) * 256 + 64 * c);
      for (int i = 0; i < RI; i++) {
        const __m512i y = _mm512_loadu_si512(t.q + std::size_t(i0 + i) * std::size_t(x.K) + std::size_t(t.xb0 + b) * 256 + 64 * c);
        for (int r = 0; r < RW; r++) dot[r][i] = _mm512_dpbusd_epi32(dot[r][i], u[r], y);
      }
    }
    for (int i = 0; i < RI; i++) {
      const std::size_t row = std::size_t(i0 + i);
      const __m512 yd = _mm512_set1_ps(x.d[row * std::size_t(nbx) + std::size_t(t.xb0 + b)]);
      const __m512 bsy = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi16_epi32(_mm256_loadu_si256(
                                           reinterpret_cast<const __m256i*>(x.bsums.data() + row * std::size_t(x.K / 16) + std::size_t(t.xb0 + b) * 16)))),
                                       yd);
      for (int r = 0; r < RW; r++) {
        const float* f = t.w[r]->ab.data() + std::size_t(b) * 32;
        acc[r][i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot[r][i]), _mm512_mul_ps(_mm512_loadu_ps(f), yd), acc[r][i]);
        acc[r][i] = _mm512_fnmadd_ps(bsy, _mm512_loadu_ps(f + 16), acc[r][i]);
      }
    }
  }
  for (int i = 0; i < RI; i++)
    for (int r = 0; r < RW; r++) out[std::size_t(i) * std::size_t(ldo) + std::size_t(r)] = _mm512_reduce_add_ps(acc[r][i]);
}

// Q8_0, Q4_0: two blocks of 32 a step (the last one alone, its other half masked to zero). The
// weights as q + 128 (unsigned, as vpdpbusd wants them); the accumulator starts at -128 * the
// block's input sum (corr), so each block's 8 lanes add up to sum q * y exactly; then one float
// product by d * yd (dx, ydx: 8 lanes per block).
template <int RW, int RI>
__attribute__((target(HEADLAB_VNNI_TARGET))) void tile512_0(const Tile& t, float* out, int ldo, int i0) {
  const int nbp = (t.nb + 1) / 2;
  __m512 acc[RW][RI];
  for (int r = 0; r < RW; r++)
    for (int i = 0; i < RI; i++) acc[r][i] = _mm512_setzero_ps();
  const std::size_t K = std::size_t(t.x->K);
  for (int b = 0; b < t.nb; b += 2) {
    const __mmask64 m = b + 1 < t.nb ? ~__mmask64(0) : __mmask64(0xFFFFFFFFu);
    __m512i u[RW];
    __m512 dw[RW];
    for (int r = 0; r < RW; r++) {
      u[r] = _mm512_maskz_loadu_epi8(m, t.w[r]->u.data() + std::size_t(b) * 32);
      dw[r] = _mm512_loadu_ps(t.w[r]->dx.data() + std::size_t(b) * 8);
    }
    for (int i = 0; i < RI; i++) {
      const std::size_t row = std::size_t(i0 + i), pair = row * std::size_t(nbp) + std::size_t(b / 2);
      const __m512i y = _mm512_maskz_loadu_epi8(m, t.x->q.data() + row * K + std::size_t(t.xb0 + b) * 32);
      const __m512i corr = _mm512_loadu_si512(t.corr + pair * 16);
      const __m512 yd = _mm512_loadu_ps(t.ydx + pair * 16);
      for (int r = 0; r < RW; r++)
        acc[r][i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_dpbusd_epi32(corr, u[r], y)), _mm512_mul_ps(dw[r], yd), acc[r][i]);
    }
  }
  for (int i = 0; i < RI; i++)
    for (int r = 0; r < RW; r++) out[std::size_t(i) * std::size_t(ldo) + std::size_t(r)] = _mm512_reduce_add_ps(acc[r][i]);
}

#endif  // HEADLAB_Q8_X86

// One tile shape of a kernel: RW weight rows x RI input rows.
using TileFn = void (*)(const Tile&, float*, int, int);

template <int RW, int RI>
TileFn tile_fn(Q8Kernel kernel, bool is_signed, bool has_min) {
#if HEADLAB_Q8_X86
  if (kernel == Q8Kernel::avx512vnni)
    return is_signed ? tile512_0<RW, RI> : tile512_k<RW, RI>;
  if (kernel == Q8Kernel::avx2)
    return is_signed ? tile256_0<RW, RI> : has_min ? tile256_k<RW, RI, true> : tile256_k<RW, RI, false>;
#endif
  (void)kernel, (void)is_signed, (void)has_min;
  return nullptr;
}

// The input rows [0, N) against rows_w (<= kRowsW) unpacked weight rows: out (N, rows_w) at ldo.
// AVX-512: tiles of up to 4 weight rows x 2 input rows; AVX2: 2 x 2.
void run_tile(Q8Kernel kernel, const Tile& t, int rows_w, int E, bool is_signed, bool has_min, float* out, int ldo, int N) {
  if (kernel == Q8Kernel::portable || !HEADLAB_Q8_X86) return tile_portable(t, rows_w, E, is_signed, out, ldo, N);
  const int tw = kernel == Q8Kernel::avx512vnni ? 4 : 2;
  for (int r0 = 0; r0 < rows_w; r0 += tw) {
    const int rw = std::min(tw, rows_w - r0);
    Tile sub = t;
    for (int r = 0; r < rw; r++) sub.w[r] = t.w[r0 + r];
    for (int i = 0; i < N; i += 2) {
      const int ri = std::min(2, N - i);
      TileFn fn = nullptr;
      switch (rw * 10 + ri) {
        case 41: fn = tile_fn<4, 1>(kernel, is_signed, has_min); break;
        case 42: fn = tile_fn<4, 2>(kernel, is_signed, has_min); break;
        case 31: fn = tile_fn<3, 1>(kernel, is_signed, has_min); break;
        case 32: fn = tile_fn<3, 2>(kernel, is_signed, has_min); break;
        case 21: fn = tile_fn<2, 1>(kernel, is_signed, has_min); break;
        case 22: fn = tile_fn<2, 2>(kernel, is_signed, has_min); break;
        case 11: fn = tile_fn<1, 1>(kernel, is_signed, has_min); break;
        default: fn = tile_fn<1, 2>(kernel, is_signed, has_min); break;
      }
      fn(sub, out + std::size_t(i) * std::size_t(ldo) + std::size_t(r0), ldo, i);
    }
  }
}

bool has_min(WeightType t) { return t == WeightType::q4_k || t == WeightType::q5_k; }
bool is_signed_type(WeightType t) { return t == WeightType::q8_0 || t == WeightType::q4_0; }

// Weight rows [r0, r1) of the product: each band's rows kRowsW at a time, unpacked once, against
// every input row; out (N, OC) at ldo, columns r0..r1 written (the bias added).
struct VnniInputs {  // what the avx512vnni kernels read besides the quants (Tile)
  const std::int8_t* lanes = nullptr;  // Q8_K quants in lane order
  const std::int32_t* corr = nullptr;  // Q8_0: tile512_0's corr and ydx
  const float* ydx = nullptr;
};

void run_rows(Q8Kernel kernel, float* out, int ldo, const Q8Inputs* x8_k, const VnniInputs& vnni,
              const Q8Inputs* x8_0, const PackedMatrix& w, int k0, int K, const float* bias, int N, int r0, int r1) {
  thread_local UnpackedRow rows[kRowsW];
  thread_local std::vector<float> tile_out;
  tile_out.resize(std::size_t(N) * kRowsW);
  int band_start = 0;
  for (const RowBand& band : w.bands) {
    if (band.rows == 0) break;
    const int a = std::max(r0, band_start), e = std::min(r1, band_start + band.rows);
    band_start += band.rows;
    if (a >= e) continue;
    const int E = quant_block_elements(band.type);
    const Q8Inputs* x = E == 256 ? x8_k : x8_0;
    Tile t{};
    t.nb = K / E, t.x = x, t.q = E == 256 && kernel == Q8Kernel::avx512vnni ? vnni.lanes : x->q.data(), t.xb0 = 0;
    t.corr = vnni.corr, t.ydx = vnni.ydx;
    for (int r = a; r < e; r += kRowsW) {
      const int rw = std::min(kRowsW, e - r);
      for (int j = 0; j < rw; j++) {
        WeightType type;
        const unsigned char* row = packed_quant_row(w, r + j, type);
        unpack_row(kernel, type, row, k0 / E, t.nb, rows[j]);
        t.w[j] = &rows[j];
      }
      run_tile(kernel, t, rw, E, is_signed_type(band.type), has_min(band.type), tile_out.data(), kRowsW, N);
      for (int i = 0; i < N; i++)
        for (int j = 0; j < rw; j++)
          out[std::size_t(i) * std::size_t(ldo) + std::size_t(r + j)] =
              tile_out[std::size_t(i) * kRowsW + std::size_t(j)] + (bias ? bias[r + j] : 0.0f);
    }
  }
}

constexpr Q8Kernel kAllKernels[] = {Q8Kernel::portable, Q8Kernel::avx2, Q8Kernel::avx512vnni};

Q8Kernel best_kernel() {
  static const Q8Kernel best = [] {
    const CpuFeatures f = cpu_features();
    if (HEADLAB_Q8_X86 && f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq && f.avx512_vnni && f.fma)
      return Q8Kernel::avx512vnni;
    if (HEADLAB_Q8_X86 && f.avx2 && f.fma) return Q8Kernel::avx2;
    return Q8Kernel::portable;
  }();
  return best;
}

// HEADLAB_KERNELS (the packed kernels' names: ops/matmul_packed.h) lowers this path too:
// avx2 -> avx2, portable -> portable; the AVX-512 names leave the best.
const char* kernels_asked() {
  const char* env = std::getenv("HEADLAB_KERNELS");
  if (!env) return nullptr;
  const std::string_view e(env);
  if (e == "portable" || (e == "avx2" && matmul_q8_kernel_supported(Q8Kernel::avx2))) return env;
  return nullptr;
}

}  // namespace

bool matmul_q8_kernel_supported(Q8Kernel kernel) { return int(kernel) <= int(best_kernel()); }

std::string_view matmul_q8_kernel_name(Q8Kernel kernel) {
  switch (kernel) {
    case Q8Kernel::avx512vnni: return "avx512vnni";
    case Q8Kernel::avx2: return "avx2";
    case Q8Kernel::portable: return "portable";
  }
  return "?";
}

Q8Kernel matmul_q8_kernel() {
  static const Q8Kernel kernel = [] {
    if (const char* asked = kernels_asked())
      for (Q8Kernel k : kAllKernels)
        if (matmul_q8_kernel_name(k) == asked) return k;
    return best_kernel();
  }();
  return kernel;
}

std::string matmul_q8_kernels_description() {
  const Q8Kernel k = matmul_q8_kernel();
  const char* what = k == Q8Kernel::avx512vnni ? "AVX-512 VNNI vpdpbusd" : k == Q8Kernel::avx2 ? "AVX2 vpmaddubsw" : "plain loops";
  return "8-bit-activation kernels " + std::string(matmul_q8_kernel_name(k)) + " (" + what +
         "; under --compute q8 the inputs of the products with Q4_0, Q8_0, Q4_K, Q5_K and Q6_K blocks are rounded to "
         "8 bits, Q8_K or Q8_0 as llama.cpp does, integer dot products)";
}

bool matmul_q8_type_supported(WeightType t) {
  return t == WeightType::q4_0 || t == WeightType::q8_0 || t == WeightType::q4_k || t == WeightType::q5_k ||
         t == WeightType::q6_k;
}

int matmul_q8_input_block(WeightType t) { return quant_block_elements(t) == 256 ? 256 : 32; }

bool matmul_q8_applies(const PackedMatrix& w, int k0, int K) {
  if (!w.quantized() || K <= 0 || k0 < 0 || k0 + K > w.cols) return false;
  for (const RowBand& band : w.bands) {
    if (band.rows == 0) break;
    const int E = quant_block_elements(band.type);
    if (!matmul_q8_type_supported(band.type) || k0 % E || K % E) return false;
  }
  return true;
}

void q8_quantize_rows(Q8Inputs& y, int E, const float* x, int ldx, int K, int N) {
  HEADLAB_CHECK((E == 256 || E == 32) && K % E == 0 && N >= 0);
  y.E = E, y.N = N, y.K = K;
  y.q.resize(std::size_t(N) * std::size_t(K));
  y.d.resize(std::size_t(N) * std::size_t(K / E));
  y.bsums.resize(std::size_t(N) * std::size_t(K / 16));
  const int nb = K / E;
  thread_pool_for_parts(
      std::size_t(N),
      [&](std::size_t i0, std::size_t i1) {
        for (std::size_t i = i0; i < i1; i++)
          for (int b = 0; b < nb; b++)
            quantize_block(E, x + i * std::size_t(ldx) + std::size_t(b) * std::size_t(E),
                           y.q.data() + i * std::size_t(K) + std::size_t(b) * std::size_t(E), y.d[i * std::size_t(nb) + std::size_t(b)],
                           y.bsums.data() + i * std::size_t(K / 16) + std::size_t(b) * std::size_t(E / 16));
      },
      std::size_t(K));
}

void matmul_forward_q8_quantized(Q8Kernel kernel, float* out, int ldo, const Q8Inputs* x8_k, const Q8Inputs* x8_0,
                                 const PackedMatrix& w, int k0, int K, const float* bias, int N) {
  HEADLAB_CHECK(matmul_q8_kernel_supported(kernel));
  HEADLAB_CHECK(N >= 1 && ldo >= w.rows && matmul_q8_applies(w, k0, K));
  for (const RowBand& band : w.bands) {
    if (band.rows == 0) break;
    const Q8Inputs* x = quant_block_elements(band.type) == 256 ? x8_k : x8_0;
    HEADLAB_CHECK(x != nullptr && x->K == K && x->N >= N && x->E == quant_block_elements(band.type));
  }
  // the avx512vnni kernel reads the Q8_K quants in its lane order: a copy, once per product
  thread_local std::vector<std::int8_t> lanes;
  thread_local std::vector<std::int32_t> corr;
  thread_local std::vector<float> ydx;
  VnniInputs vnni;
  if (kernel == Q8Kernel::avx512vnni && x8_k) {
    lanes.resize(std::size_t(x8_k->N) * std::size_t(K));
    for (std::size_t blk = 0; blk < lanes.size() / 256; blk++) lane_order(x8_k->q.data() + 256 * blk, lanes.data() + 256 * blk);
    vnni.lanes = lanes.data();
  }
  if (kernel == Q8Kernel::avx512vnni && x8_0) {  // per input row and pair of blocks, 16 lanes
    const int nb = K / 32, nbp = (nb + 1) / 2;
    corr.assign(std::size_t(x8_0->N) * std::size_t(nbp) * 16, 0);
    ydx.assign(corr.size(), 0.0f);
    for (int i = 0; i < x8_0->N; i++)
      for (int b = 0; b < nb; b++) {
        const std::size_t at = (std::size_t(i) * std::size_t(nbp) + std::size_t(b / 2)) * 16 + std::size_t(b % 2) * 8;
        const std::int16_t* bs = x8_0->bsums.data() + std::size_t(i) * std::size_t(K / 16) + std::size_t(b) * 2;
        corr[at] = -128 * (int(bs[0]) + int(bs[1]));
        for (int l = 0; l < 8; l++) ydx[at + std::size_t(l)] = x8_0->d[std::size_t(i) * std::size_t(nb) + std::size_t(b)];
      }
    vnni.corr = corr.data(), vnni.ydx = ydx.data();
  }
  const int tiles = (w.rows + kRowsW - 1) / kRowsW;
  const int parts = thread_pool_parts(std::size_t(N) * std::size_t(K) * std::size_t(w.rows), tiles);
  thread_pool_run(parts, [&](int part) {
    const int t0 = int(std::int64_t(tiles) * part / parts), t1 = int(std::int64_t(tiles) * (part + 1) / parts);
    if (t0 < t1) run_rows(kernel, out, ldo, x8_k, vnni, x8_0, w, k0, K, bias, N, t0 * kRowsW, std::min(w.rows, t1 * kRowsW));
  });
}

void matmul_forward_q8_with(Q8Kernel kernel, float* out, int ldo, const float* inp, int ldx, const PackedMatrix& w,
                            int k0, int K, const float* bias, int N) {
  HEADLAB_CHECK(N >= 1 && ldx >= K && matmul_q8_applies(w, k0, K));
  bool need_k = false, need_0 = false;
  for (const RowBand& band : w.bands) {
    if (band.rows == 0) break;
    (quant_block_elements(band.type) == 256 ? need_k : need_0) = true;
  }
  // quantized once per product, kept by the calling thread for the next
  thread_local Q8Inputs x8_k, x8_0;
  if (need_k) q8_quantize_rows(x8_k, 256, inp, ldx, K, N);
  if (need_0) q8_quantize_rows(x8_0, 32, inp, ldx, K, N);
  matmul_forward_q8_quantized(kernel, out, ldo, need_k ? &x8_k : nullptr, need_0 ? &x8_0 : nullptr, w, k0, K, bias, N);
}

}  // namespace headlab::model
