// model/quant_blocks.cpp — the block layouts of ggml's quantized types (ggml-common.h), one
// decoder per type, each reading one block. Multi-byte fields are little-endian.
#include "model/quant_blocks.h"

#include <cmath>
#include <cstring>

#include "util/check.h"

namespace headlab::model {

namespace {

std::uint16_t u16_at(const unsigned char* p) { return std::uint16_t(p[0] | (p[1] << 8)); }
float half_at(const unsigned char* p) { return f16_to_f32(u16_at(p)); }

// Q8_0: d (half) | qs[32] int8.  x_i = d * qs_i
void decode_q8_0(const unsigned char* b, float* y) {
  const float d = half_at(b);
  for (int i = 0; i < 32; i++) y[i] = d * float(std::int8_t(b[2 + i]));
}

// Q4_0: d | qs[16]: weight i < 16 is the low nibble of qs[i], weight i + 16 its high nibble.
//   x = d * (q - 8)
void decode_q4_0(const unsigned char* b, float* y) {
  const float d = half_at(b);
  const unsigned char* qs = b + 2;
  for (int i = 0; i < 16; i++) {
    y[i] = d * float((qs[i] & 0x0f) - 8);
    y[i + 16] = d * float((qs[i] >> 4) - 8);
  }
}

// p + m, but p itself when p is a NaN: when both are NaNs, x86 returns the first operand's, and
// a compiler may swap an addition's operands, so the NaN that comes out is fixed here instead (the
// SIMD decoders do the same: quant_simd_decoders.inc).
float add_min(float p, float m) { return p != p ? p : p + m; }

// Q4_1: d | m | qs[16] (nibbles as Q4_0).  x = d * q + m
void decode_q4_1(const unsigned char* b, float* y) {
  const float d = half_at(b), m = half_at(b + 2);
  const unsigned char* qs = b + 4;
  for (int i = 0; i < 16; i++) {
    y[i] = add_min(d * float(qs[i] & 0x0f), m);
    y[i + 16] = add_min(d * float(qs[i] >> 4), m);
  }
}

// The fifth bit of weight i of a Q5 block: bit i of the little-endian u32 qh.
std::uint32_t u32_at(const unsigned char* p) {
  return std::uint32_t(p[0]) | std::uint32_t(p[1]) << 8 | std::uint32_t(p[2]) << 16 | std::uint32_t(p[3]) << 24;
}

// Q5_0: d | qh[4] | qs[16].  q = nibble | (bit i of qh) << 4;  x = d * (q - 16)
void decode_q5_0(const unsigned char* b, float* y) {
  const float d = half_at(b);
  const std::uint32_t qh = u32_at(b + 2);
  const unsigned char* qs = b + 6;
  for (int i = 0; i < 16; i++) {
    const int lo = (qs[i] & 0x0f) | int((qh >> i) & 1) << 4;
    const int hi = (qs[i] >> 4) | int((qh >> (i + 16)) & 1) << 4;
    y[i] = d * float(lo - 16);
    y[i + 16] = d * float(hi - 16);
  }
}

// Q5_1: d | m | qh[4] | qs[16].  x = d * q + m
void decode_q5_1(const unsigned char* b, float* y) {
  const float d = half_at(b), m = half_at(b + 2);
  const std::uint32_t qh = u32_at(b + 4);
  const unsigned char* qs = b + 8;
  for (int i = 0; i < 16; i++) {
    const int lo = (qs[i] & 0x0f) | int((qh >> i) & 1) << 4;
    const int hi = (qs[i] >> 4) | int((qh >> (i + 16)) & 1) << 4;
    y[i] = add_min(d * float(lo), m);
    y[i + 16] = add_min(d * float(hi), m);
  }
}

// Q2_K: scales[16] | qs[64] | d | dmin. 16 sub-blocks of 16 weights; scales[s] holds the
// sub-block's scale (low nibble) and minimum (high nibble). The 2-bit quants: weight
// 128*h + 32*j + l (h < 2 halves, j < 4 shifts, l < 32) is bits 2j..2j+1 of qs[32*h + l];
// its sub-block is 8*h + 2*j + l/16.   x = d * scale * q - dmin * min
void decode_q2_k(const unsigned char* b, float* y) {
  const unsigned char* scales = b;
  const unsigned char* qs = b + 16;
  const float d = half_at(b + 80), dmin = half_at(b + 82);
  for (int h = 0; h < 2; h++)
    for (int j = 0; j < 4; j++)
      for (int l = 0; l < 32; l++) {
        const int s = 8 * h + 2 * j + l / 16;
        const int q = (qs[32 * h + l] >> (2 * j)) & 3;
        y[128 * h + 32 * j + l] = d * float(scales[s] & 0x0f) * float(q) - dmin * float(scales[s] >> 4);
      }
}

// Q3_K: hmask[32] | qs[64] | scales[12] | d. 16 sub-blocks of 16 with 6-bit scales stored
// minus 32: scale s has its low 4 bits in scales[s % 8] (low nibble for s < 8, high for the
// rest) and its high 2 bits at bits 2*(s/4) of scales[8 + s % 4]. The low 2 bits of weight
// 128*h + 32*j + l are as in Q2_K; its third bit is bit (4h + j) of hmask[l], and a clear
// bit subtracts 4.   x = d * (scale - 32) * (q - (bit ? 0 : 4))
void decode_q3_k(const unsigned char* b, float* y) {
  const unsigned char* hmask = b;
  const unsigned char* qs = b + 32;
  const unsigned char* sc = b + 96;
  const float d = half_at(b + 108);
  int scale[16];
  for (int s = 0; s < 16; s++) scale[s] = quant_scale_k3(sc, s);
  for (int h = 0; h < 2; h++)
    for (int j = 0; j < 4; j++)
      for (int l = 0; l < 32; l++) {
        const int s = 8 * h + 2 * j + l / 16;
        const int low = (qs[32 * h + l] >> (2 * j)) & 3;
        const int q = low - ((hmask[l] >> (4 * h + j)) & 1 ? 0 : 4);
        y[128 * h + 32 * j + l] = d * float(scale[s]) * float(q);
      }
}

// Q4_K: d | dmin | scales[12] | qs[128]. 8 sub-blocks of 32: weights 64*g + l (l < 32) are
// the low nibbles of qs[32*g + l] (sub-block 2g), weights 64*g + 32 + l the high nibbles
// (sub-block 2g + 1).   x = d * scale * q - dmin * min
void decode_q4_k(const unsigned char* b, float* y) {
  const float d = half_at(b), dmin = half_at(b + 2);
  const unsigned char* scales = b + 4;
  const unsigned char* qs = b + 16;
  for (int g = 0; g < 4; g++) {
    int sc0, m0, sc1, m1;
    quant_scale_min_k4(scales, 2 * g, sc0, m0);
    quant_scale_min_k4(scales, 2 * g + 1, sc1, m1);
    for (int l = 0; l < 32; l++) {
      y[64 * g + l] = d * float(sc0) * float(qs[32 * g + l] & 0x0f) - dmin * float(m0);
      y[64 * g + 32 + l] = d * float(sc1) * float(qs[32 * g + l] >> 4) - dmin * float(m1);
    }
  }
}

// Q5_K: d | dmin | scales[12] | qh[32] | qs[128]. As Q4_K, with a fifth bit: bit 2g of qh[l]
// for weight 64*g + l, bit 2g + 1 for weight 64*g + 32 + l.
void decode_q5_k(const unsigned char* b, float* y) {
  const float d = half_at(b), dmin = half_at(b + 2);
  const unsigned char* scales = b + 4;
  const unsigned char* qh = b + 16;
  const unsigned char* qs = b + 48;
  for (int g = 0; g < 4; g++) {
    int sc0, m0, sc1, m1;
    quant_scale_min_k4(scales, 2 * g, sc0, m0);
    quant_scale_min_k4(scales, 2 * g + 1, sc1, m1);
    for (int l = 0; l < 32; l++) {
      const int lo = (qs[32 * g + l] & 0x0f) | ((qh[l] >> (2 * g)) & 1) << 4;
      const int hi = (qs[32 * g + l] >> 4) | ((qh[l] >> (2 * g + 1)) & 1) << 4;
      y[64 * g + l] = d * float(sc0) * float(lo) - dmin * float(m0);
      y[64 * g + 32 + l] = d * float(sc1) * float(hi) - dmin * float(m1);
    }
  }
}

// Q6_K: ql[128] | qh[64] | scales[16] int8 | d. Two halves of 128 weights; in half h, weight
// 128*h + 32*k + l (k < 4, l < 32) takes its low 4 bits from ql[64*h + l + 32*(k%2)] (low
// nibble for k < 2, high for k >= 2) and its high 2 bits from bits 2k of qh[32*h + l];
// its scale is scales[8*h + 2*k + l/16].   x = d * scale * (q - 32)
void decode_q6_k(const unsigned char* b, float* y) {
  const unsigned char* ql = b;
  const unsigned char* qh = b + 128;
  const unsigned char* sc = b + 192;
  const float d = half_at(b + 208);
  for (int h = 0; h < 2; h++)
    for (int k = 0; k < 4; k++)
      for (int l = 0; l < 32; l++) {
        const unsigned char low_byte = ql[64 * h + l + 32 * (k % 2)];
        const int low = k < 2 ? low_byte & 0x0f : low_byte >> 4;
        const int high = (qh[32 * h + l] >> (2 * k)) & 3;
        const int q = (low | high << 4) - 32;
        y[128 * h + 32 * k + l] = d * float(std::int8_t(sc[8 * h + 2 * k + l / 16])) * float(q);
      }
}

}  // namespace

bool weight_type_quantized(WeightType t) {
  return t != WeightType::f32 && t != WeightType::bf16 && t != WeightType::f16;
}

int quant_block_elements(WeightType t) {
  switch (t) {
    case WeightType::q4_0: case WeightType::q4_1: case WeightType::q5_0: case WeightType::q5_1:
    case WeightType::q8_0: return 32;
    case WeightType::q2_k: case WeightType::q3_k: case WeightType::q4_k: case WeightType::q5_k:
    case WeightType::q6_k: return 256;
    case WeightType::f32: case WeightType::bf16: case WeightType::f16: return 1;
  }
  return 1;
}

int quant_block_bytes(WeightType t) {
  switch (t) {
    case WeightType::q4_0: return 2 + 16;           // d, 32 nibbles
    case WeightType::q4_1: return 2 + 2 + 16;       // d, m, 32 nibbles
    case WeightType::q5_0: return 2 + 4 + 16;       // d, 32 high bits, 32 nibbles
    case WeightType::q5_1: return 2 + 2 + 4 + 16;   // d, m, high bits, nibbles
    case WeightType::q8_0: return 2 + 32;           // d, 32 int8
    case WeightType::q2_k: return 16 + 64 + 2 + 2;  // 16 scale/min nibbles, 256 2-bit quants, d, dmin
    case WeightType::q3_k: return 32 + 64 + 12 + 2; // high bits, low 2 bits, 16 6-bit scales, d
    case WeightType::q4_k: return 2 + 2 + 12 + 128; // d, dmin, 8 6-bit scales and mins, nibbles
    case WeightType::q5_k: return 2 + 2 + 12 + 32 + 128;  // + high bits
    case WeightType::q6_k: return 128 + 64 + 16 + 2;      // low nibbles, high 2 bits, int8 scales, d
    case WeightType::f32: return 4;
    case WeightType::bf16: case WeightType::f16: return 2;
  }
  return 0;
}

std::size_t quant_row_bytes(WeightType t, int cols) {
  return std::size_t(cols / quant_block_elements(t)) * std::size_t(quant_block_bytes(t));
}

void quant_dequantize(WeightType t, const unsigned char* blocks, std::int64_t n, float* out) {
  const std::int64_t per = quant_block_elements(t), bytes = quant_block_bytes(t);
  HEADLAB_CHECK(weight_type_quantized(t) && n % per == 0);
  void (*one)(const unsigned char*, float*) = nullptr;
  switch (t) {
    case WeightType::q8_0: one = decode_q8_0; break;
    case WeightType::q4_0: one = decode_q4_0; break;
    case WeightType::q4_1: one = decode_q4_1; break;
    case WeightType::q5_0: one = decode_q5_0; break;
    case WeightType::q5_1: one = decode_q5_1; break;
    case WeightType::q2_k: one = decode_q2_k; break;
    case WeightType::q3_k: one = decode_q3_k; break;
    case WeightType::q4_k: one = decode_q4_k; break;
    case WeightType::q5_k: one = decode_q5_k; break;
    case WeightType::q6_k: one = decode_q6_k; break;
    case WeightType::f32: case WeightType::bf16: case WeightType::f16: break;
  }
  for (std::int64_t i = 0; i < n / per; i++) one(blocks + i * bytes, out + i * per);
}

QuantScaleOffsets quant_scale_offsets(WeightType t) {
  switch (t) {
    case WeightType::q4_0: case WeightType::q5_0: case WeightType::q8_0: return {0, -1};
    case WeightType::q4_1: case WeightType::q5_1: case WeightType::q4_k: case WeightType::q5_k: return {0, 2};
    case WeightType::q2_k: return {80, 82};
    case WeightType::q3_k: return {108, -1};
    case WeightType::q6_k: return {208, -1};
    case WeightType::f32: case WeightType::bf16: case WeightType::f16: return {-1, -1};
  }
  return {-1, -1};
}

std::int64_t quant_first_nonfinite_block(WeightType t, const unsigned char* blocks, std::int64_t n_blocks) {
  const QuantScaleOffsets o = quant_scale_offsets(t);
  const int at[2] = {o.d, o.min};
  const std::int64_t bytes = quant_block_bytes(t);
  for (std::int64_t b = 0; b < n_blocks; b++)
    for (int a : at)
      if (a >= 0 && !std::isfinite(half_at(blocks + b * bytes + a))) return b;
  return -1;
}

}  // namespace headlab::model
