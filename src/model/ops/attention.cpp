// model/ops/attention.cpp — causal multi-head self-attention (see attention.h): the plain
// llm.c-layout loops, and the training and inference kernels that skip the masked half.
#include "model/ops/attention.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>

#include "model/blas.h"
#include "model/ops/fast_exp.h"

namespace headlab::model {

void attention_forward(float* out, float* preatt, float* att, const float* inp, int B, int T, int C,
                       int NH) {
  const int C3 = C * 3;
  const int hs = C / NH;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  for (int b = 0; b < B; b++) {
    for (int t = 0; t < T; t++) {
      for (int h = 0; h < NH; h++) {
        const float* query_t = inp + (std::size_t(b) * T + t) * C3 + h * hs;
        float* preatt_bth = preatt + ((std::size_t(b) * NH + h) * T + t) * T;
        float* att_bth = att + ((std::size_t(b) * NH + h) * T + t) * T;

        // 1. scores = q.k / sqrt(HS) for keys t2 <= t, and their max (exp overflows)
        float maxval = -std::numeric_limits<float>::infinity();
        for (int t2 = 0; t2 <= t; t2++) {
          const float* key_t2 = inp + (std::size_t(b) * T + t2) * C3 + h * hs + C;
          float val = 0.0f;
          for (int i = 0; i < hs; i++) val += query_t[i] * key_t2[i];
          val *= scale;
          maxval = std::max(maxval, val);
          preatt_bth[t2] = val;
        }
        // 2. pattern = softmax over the visible keys; the masked half is exactly 0
        float expsum = 0.0f;
        for (int t2 = 0; t2 <= t; t2++) {
          float e = std::exp(preatt_bth[t2] - maxval);
          expsum += e;
          att_bth[t2] = e;
        }
        float expsum_inv = 1.0f / expsum;
        for (int t2 = 0; t2 < T; t2++) {
          if (t2 <= t) {
            att_bth[t2] *= expsum_inv;
          } else {
            att_bth[t2] = 0.0f;
            preatt_bth[t2] = 0.0f;
          }
        }
        // 3. z = pattern @ v
        float* out_bth = out + (std::size_t(b) * T + t) * C + h * hs;
        for (int i = 0; i < hs; i++) out_bth[i] = 0.0f;
        for (int t2 = 0; t2 <= t; t2++) {
          const float* value_t2 = inp + (std::size_t(b) * T + t2) * C3 + h * hs + C * 2;
          float a = att_bth[t2];
          for (int i = 0; i < hs; i++) out_bth[i] += a * value_t2[i];
        }
      }
    }
  }
}

void attention_backward(float* dinp, float* dpreatt, float* datt, const float* dout, const float* inp,
                        const float* att, int B, int T, int C, int NH) {
  const int C3 = C * 3;
  const int hs = C / NH;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  for (int b = 0; b < B; b++) {
    for (int t = 0; t < T; t++) {
      for (int h = 0; h < NH; h++) {
        const float* att_bth = att + ((std::size_t(b) * NH + h) * T + t) * T;
        float* datt_bth = datt + ((std::size_t(b) * NH + h) * T + t) * T;
        float* dpreatt_bth = dpreatt + ((std::size_t(b) * NH + h) * T + t) * T;
        float* dquery_t = dinp + (std::size_t(b) * T + t) * C3 + h * hs;
        const float* query_t = inp + (std::size_t(b) * T + t) * C3 + h * hs;
        const float* dout_bth = dout + (std::size_t(b) * T + t) * C + h * hs;

        // 3 (reversed). z = pattern @ v
        for (int t2 = 0; t2 < T; t2++) datt_bth[t2] = 0.0f;
        for (int t2 = 0; t2 <= t; t2++) {
          const float* value_t2 = inp + (std::size_t(b) * T + t2) * C3 + h * hs + C * 2;
          float* dvalue_t2 = dinp + (std::size_t(b) * T + t2) * C3 + h * hs + C * 2;
          float d = 0.0f;
          for (int i = 0; i < hs; i++) {
            d += value_t2[i] * dout_bth[i];
            dvalue_t2[i] += att_bth[t2] * dout_bth[i];
          }
          datt_bth[t2] = d;
        }
        // 2 (reversed). softmax: dscores = p * (dp - sum_j p_j dp_j)
        float dot = 0.0f;
        for (int t2 = 0; t2 <= t; t2++) dot += att_bth[t2] * datt_bth[t2];
        for (int t2 = 0; t2 < T; t2++)
          dpreatt_bth[t2] = t2 <= t ? att_bth[t2] * (datt_bth[t2] - dot) : 0.0f;
        // 1 (reversed). scores = q.k * scale
        for (int t2 = 0; t2 <= t; t2++) {
          const float* key_t2 = inp + (std::size_t(b) * T + t2) * C3 + h * hs + C;
          float* dkey_t2 = dinp + (std::size_t(b) * T + t2) * C3 + h * hs + C;
          float g = dpreatt_bth[t2] * scale;
          for (int i = 0; i < hs; i++) {
            dquery_t[i] += key_t2[i] * g;
            dkey_t2[i] += query_t[i] * g;
          }
        }
      }
    }
  }
}

namespace {
constexpr int kQueryBlock = 64;
}

void attention_head_forward(float* out, float* preatt, float* att, const float* inp, int T, int C, int NH, int h) {
  const int C3 = C * 3;
  const int hs = C / NH;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  const float* q = inp + h * hs;          // (T, HS), row stride 3C
  const float* k = inp + C + h * hs;      // (T, HS), row stride 3C
  const float* v = inp + 2 * C + h * hs;  // (T, HS), row stride 3C
  for (int t0 = 0; t0 < T; t0 += kQueryBlock) {
    const int t1 = std::min(T, t0 + kQueryBlock), rows = t1 - t0, keys = t1;
    // 1. scores = q k^T / sqrt(HS) for the block's queries and the keys they may see
    blas_sgemm(false, true, rows, keys, hs, scale, q + std::size_t(t0) * C3, C3, k, C3, 0.0f,
               preatt + std::size_t(t0) * T, T);
    // 2. pattern = softmax over keys <= t; both buffers 0 above the diagonal
    for (int t = t0; t < t1; t++) {
      float* s_row = preatt + std::size_t(t) * T;
      float* p_row = att + std::size_t(t) * T;
      float maxval = -std::numeric_limits<float>::infinity();
      for (int t2 = 0; t2 <= t; t2++) maxval = std::max(maxval, s_row[t2]);
      std::copy(s_row, s_row + t + 1, p_row);
      float expsum = 0.0f;
      exp_shifted_inplace(p_row, t + 1, maxval, &expsum);
      const float inv = 1.0f / expsum;
      for (int t2 = 0; t2 <= t; t2++) p_row[t2] *= inv;
      std::fill(s_row + t + 1, s_row + T, 0.0f);
      std::fill(p_row + t + 1, p_row + T, 0.0f);
    }
    // 3. z = pattern @ v
    blas_sgemm(false, false, rows, hs, keys, 1.0f, att + std::size_t(t0) * T, T, v, C3, 0.0f,
               out + std::size_t(t0) * C + h * hs, C);
  }
}

void attention_head_backward(float* dinp, float* dpreatt, float* datt, const float* dout, const float* inp,
                             const float* att, int T, int C, int NH, int h) {
  const int C3 = C * 3;
  const int hs = C / NH;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  const float* q = inp + h * hs;
  const float* k = inp + C + h * hs;
  const float* v = inp + 2 * C + h * hs;
  float* dq = dinp + h * hs;
  float* dk = dinp + C + h * hs;
  float* dv = dinp + 2 * C + h * hs;
  const float* dz = dout + h * hs;  // (T, HS), row stride C
  for (int t0 = 0; t0 < T; t0 += kQueryBlock) {
    const int t1 = std::min(T, t0 + kQueryBlock), rows = t1 - t0, keys = t1;
    const float* p = att + std::size_t(t0) * T;  // the block's pattern rows (rows, keys), stride T
    // 3 (reversed). z = pattern @ v:  dpattern = dz v^T,  dv += pattern^T dz
    blas_sgemm(false, true, rows, keys, hs, 1.0f, dz + std::size_t(t0) * C, C, v, C3, 0.0f,
               datt + std::size_t(t0) * T, T);
    blas_sgemm(true, false, keys, hs, rows, 1.0f, p, T, dz + std::size_t(t0) * C, C, 1.0f, dv, C3);
    // 2 (reversed). softmax: dscores = p * (dp - sum_j p_j dp_j), 0 above the diagonal
    for (int t = t0; t < t1; t++) {
      const float* p_row = att + std::size_t(t) * T;
      float* dp_row = datt + std::size_t(t) * T;
      float* ds_row = dpreatt + std::size_t(t) * T;
      float dot = 0.0f;
      for (int t2 = 0; t2 <= t; t2++) dot += p_row[t2] * dp_row[t2];
      for (int t2 = 0; t2 <= t; t2++) ds_row[t2] = p_row[t2] * (dp_row[t2] - dot);
      std::fill(dp_row + t + 1, dp_row + T, 0.0f);
      std::fill(ds_row + t + 1, ds_row + T, 0.0f);
    }
    // 1 (reversed). scores = q k^T * scale:  dq += dscores k * scale,  dk += dscores^T q * scale
    const float* ds = dpreatt + std::size_t(t0) * T;
    blas_sgemm(false, false, rows, hs, keys, scale, ds, T, k, C3, 1.0f, dq + std::size_t(t0) * C3, C3);
    blas_sgemm(true, false, keys, hs, rows, scale, ds, T, q + std::size_t(t0) * C3, C3, 1.0f, dk, C3);
  }
}

long long attention_causal_scratch_size(int T) { return static_cast<long long>(kQueryBlock) * T; }

void attention_forward_causal(float* out, const float* inp, int T, int C, int NH,
                              const AttentionHeadHooks& hooks, float* scratch) {
  const int C3 = C * 3;
  const int hs = C / NH;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  for (int h = 0; h < NH; h++) {
    const float* q = inp + h * hs;          // (T, HS), row stride 3C
    const float* k = inp + C + h * hs;      // (T, HS), row stride 3C
    const float* v = inp + 2 * C + h * hs;  // (T, HS), row stride 3C
    const float* replace = hooks.replace_pattern ? hooks.replace_pattern[h] : nullptr;
    const unsigned char* blocked = hooks.block_key ? hooks.block_key[h] : nullptr;
    float* scores_h = hooks.scores_out ? hooks.scores_out + std::size_t(h) * T * (T + 1) / 2 : nullptr;
    float* pattern_h = hooks.pattern_out ? hooks.pattern_out + std::size_t(h) * T * (T + 1) / 2 : nullptr;

    for (int t0 = 0; t0 < T; t0 += kQueryBlock) {
      const int t1 = std::min(T, t0 + kQueryBlock);
      const int rows = t1 - t0;
      const int keys = t1;  // queries t0..t1-1 see keys 0..t1-1 at most
      float* s = scratch;   // (rows, keys), row stride `keys`
      // 1. scores = q k^T / sqrt(HS), for the block's queries against keys < t1 only
      blas_sgemm(false, true, rows, keys, hs, scale, q + std::size_t(t0) * C3,
                  C3, k, C3, 0.0f, s, keys);
      for (int r = 0; r < rows; r++) {
        const int t = t0 + r;
        float* row = s + std::size_t(r) * keys;
        const std::size_t packed = std::size_t(t) * (t + 1) / 2;
        if (scores_h) std::copy(row, row + t + 1, scores_h + packed);
        if (replace) {
          // 2'. a replaced pattern ignores the scores
          const float* rp = replace + std::size_t(t) * T;
          std::copy(rp, rp + t + 1, row);
        } else {
          // 2. mask (future keys and blocked keys), then softmax over what is left
          if (blocked) {
            int visible = 0;
            for (int t2 = 0; t2 <= t; t2++) visible += blocked[t2] ? 0 : 1;
            if (visible > 0)
              for (int t2 = 0; t2 <= t; t2++)
                if (blocked[t2]) row[t2] = -std::numeric_limits<float>::infinity();
          }
          float maxval = -std::numeric_limits<float>::infinity();
          for (int t2 = 0; t2 <= t; t2++) maxval = std::max(maxval, row[t2]);
          float expsum = 0.0f;
          exp_shifted_inplace(row, t + 1, maxval, &expsum);
          const float inv = 1.0f / expsum;
          for (int t2 = 0; t2 <= t; t2++) row[t2] *= inv;
        }
        for (int t2 = t + 1; t2 < keys; t2++) row[t2] = 0.0f;
        if (pattern_h) std::copy(row, row + t + 1, pattern_h + packed);
      }
      // 3. z = pattern @ v
      blas_sgemm(false, false, rows, hs, keys, 1.0f, s, keys, v, C3, 0.0f,
                  out + std::size_t(t0) * C + h * hs, C);
    }
  }
}

}  // namespace headlab::model
