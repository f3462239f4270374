// model/ops/attention.cpp — causal multi-head self-attention (see attention.h): the plain
// llm.c-layout loops, and the training and inference kernels that skip the masked half.
#include "model/ops/attention.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

#include "model/blas.h"
#include "model/ops/fast_exp.h"
#include "model/thread_pool.h"

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

// Softmax of row[0..n) in place (the row holds the scores of one query's visible keys).
void softmax_inplace(float* row, int n) {
  float sum = 0.0f;
  exp_shifted_inplace(row, n, row_max(row, n), &sum);
  const float inv = 1.0f / sum;
  for (int i = 0; i < n; i++) row[i] *= inv;
}

// The softmax backward of one row in place: d[i] = p[i] * (d[i] - sum_j p[j] d[j]).
HEADLAB_MULTIVERSION
void softmax_backward_inplace(float* d, const float* p, int n) {
  float lanes[16] = {};
  int i = 0;
  for (; i + 16 <= n; i += 16)
    for (int j = 0; j < 16; j++) lanes[j] += p[i + j] * d[i + j];
  float dot = 0.0f;
  for (; i < n; i++) dot += p[i] * d[i];
  for (int j = 0; j < 16; j++) dot += lanes[j];
  for (i = 0; i < n; i++) d[i] = p[i] * (d[i] - dot);
}
}  // namespace

void attention_head_forward(float* out, float* att, const float* inp, int T, int C, int NH, int h) {
  const int C3 = C * 3;
  const int hs = C / NH;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  const float* q = inp + h * hs;          // (T, HS), row stride 3C
  const float* k = inp + C + h * hs;      // (T, HS), row stride 3C
  const float* v = inp + 2 * C + h * hs;  // (T, HS), row stride 3C
  for (int t0 = 0; t0 < T; t0 += kQueryBlock) {
    const int t1 = std::min(T, t0 + kQueryBlock), rows = t1 - t0, keys = t1;
    float* p = att + std::size_t(t0) * T;  // the block's rows (rows, keys), stride T
    // 1. scores = q k^T / sqrt(HS) for the block's queries and the keys they may see,
    //    straight into the pattern's rows
    blas_sgemm(false, true, rows, keys, hs, scale, q + std::size_t(t0) * C3, C3, k, C3, 0.0f, p, T);
    // 2. pattern = softmax over keys <= t, in place; 0 for the block's keys above t
    for (int t = t0; t < t1; t++) {
      float* row = att + std::size_t(t) * T;
      softmax_inplace(row, t + 1);
      std::fill(row + t + 1, row + keys, 0.0f);
    }
    // 3. z = pattern @ v
    blas_sgemm(false, false, rows, hs, keys, 1.0f, p, T, v, C3, 0.0f, out + std::size_t(t0) * C + h * hs, C);
  }
}

void attention_head_backward(float* dinp, const float* dout, const float* inp, const float* att, int T, int C,
                             int NH, int h, float* scratch) {
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
    float* ds = scratch;                          // (rows, keys), stride keys: dpattern, then dscores
    // 3 (reversed). z = pattern @ v:  dpattern = dz v^T,  dv += pattern^T dz
    blas_sgemm(false, true, rows, keys, hs, 1.0f, dz + std::size_t(t0) * C, C, v, C3, 0.0f, ds, keys);
    blas_sgemm(true, false, keys, hs, rows, 1.0f, p, T, dz + std::size_t(t0) * C, C, 1.0f, dv, C3);
    // 2 (reversed). softmax: dscores = p * (dp - sum_j p_j dp_j), 0 above the diagonal
    for (int r = 0; r < rows; r++) {
      const int t = t0 + r;
      float* d_row = ds + std::size_t(r) * keys;
      softmax_backward_inplace(d_row, att + std::size_t(t) * T, t + 1);
      std::fill(d_row + t + 1, d_row + keys, 0.0f);
    }
    // 1 (reversed). scores = q k^T * scale:  dq += dscores k * scale,  dk += dscores^T q * scale
    blas_sgemm(false, false, rows, hs, keys, scale, ds, keys, k, C3, 1.0f, dq + std::size_t(t0) * C3, C3);
    blas_sgemm(true, false, keys, hs, rows, scale, ds, keys, q + std::size_t(t0) * C3, C3, 1.0f, dk, C3);
  }
}

long long attention_block_scratch_size(int T) { return static_cast<long long>(kQueryBlock) * T; }

long long attention_causal_scratch_size(int T) { return attention_block_scratch_size(T) * thread_pool_size(); }

namespace {

// One head of attention_forward_causal; `s` holds attention_block_scratch_size(T) floats.
void causal_head_forward(float* out, const float* inp, int T, int C, int NH, int h, float scale,
                         const AttentionHeadHooks& hooks, float* s) {
  const int C3 = C * 3;
  const int hs = C / NH;
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
    // 1. scores = q k^T * scale (1/sqrt(HS) for GPT-2), for the block's queries against keys < t1 only;
    //    s is (rows, keys), row stride `keys`
    blas_sgemm(false, true, rows, keys, hs, scale, q + std::size_t(t0) * C3, C3, k, C3, 0.0f, s, keys);
    for (int r = 0; r < rows; r++) {
      const int t = t0 + r;
      float* row = s + std::size_t(r) * keys;
      const std::size_t packed = std::size_t(t) * (t + 1) / 2;
      if (hooks.softcap > 0.0f) {
        const float cap = hooks.softcap, inv = 1.0f / hooks.softcap;
        for (int t2 = 0; t2 <= t; t2++) row[t2] = cap * std::tanh(row[t2] * inv);
      }
      if (scores_h) std::copy(row, row + t + 1, scores_h + packed);
      if (replace) {
        // 2'. a replaced pattern ignores the scores
        const float* rp = replace + std::size_t(t) * T;
        std::copy(rp, rp + t + 1, row);
      } else {
        // 2. mask (future keys, keys outside the sliding window, blocked keys), then softmax
        //    over what is left; the window always holds the query's own key
        const int first = hooks.window > 0 ? std::max(0, t - hooks.window + 1) : 0;  // first visible key
        for (int t2 = 0; t2 < first; t2++) row[t2] = -std::numeric_limits<float>::infinity();
        if (blocked) {
          int visible = 0;
          for (int t2 = first; t2 <= t; t2++) visible += blocked[t2] ? 0 : 1;
          if (visible > 0)
            for (int t2 = first; t2 <= t; t2++)
              if (blocked[t2]) row[t2] = -std::numeric_limits<float>::infinity();
        }
        softmax_inplace(row, t + 1);
      }
      std::fill(row + t + 1, row + keys, 0.0f);
      if (pattern_h) std::copy(row, row + t + 1, pattern_h + packed);
    }
    // 3. z = pattern @ v
    blas_sgemm(false, false, rows, hs, keys, 1.0f, s, keys, v, C3, 0.0f, out + std::size_t(t0) * C + h * hs, C);
  }
}

}  // namespace

void attention_forward_causal(float* out, const float* inp, int T, int C, int NH, float scale,
                              const AttentionHeadHooks& hooks, float* scratch) {
  // the heads split over the pool, one contiguous run of heads and one scratch per thread
  const int parts = thread_pool_parts(std::size_t(T) * T * C, NH);  // q.k and pattern.v: T*T*C/2 each
  const std::size_t per_part = attention_block_scratch_size(T);
  thread_pool_run(parts, [&](int part) {
    for (int h = NH * part / parts; h < NH * (part + 1) / parts; h++)
      causal_head_forward(out, inp, T, C, NH, h, scale, hooks, scratch + part * per_part);
  });
}

void attention_backward_causal(float* dinp, const float* dout, const float* inp, int T, int C, int NH, float scale,
                               int window, float softcap) {
  const int HS = C / NH;
  const std::size_t row = std::size_t(3) * C;
  thread_pool_run(NH, [&](int h) {
    std::vector<double> s(T), p(T), dp(T);
    for (int t = 0; t < T; t++) {
      const float* q = inp + std::size_t(t) * row + h * HS;
      const int first = window > 0 ? std::max(0, t - window + 1) : 0;  // the visible keys: first..t
      double mx = -std::numeric_limits<double>::infinity();
      for (int t2 = first; t2 <= t; t2++) {
        const float* k = inp + std::size_t(t2) * row + C + h * HS;
        double dot = 0.0;
        for (int i = 0; i < HS; i++) dot += double(q[i]) * k[i];
        s[t2] = dot * scale;
        const double c = softcap > 0.0f ? softcap * std::tanh(s[t2] / softcap) : s[t2];
        p[t2] = c;
        mx = std::max(mx, c);
      }
      double sum = 0.0;
      for (int t2 = first; t2 <= t; t2++) sum += (p[t2] = std::exp(p[t2] - mx));
      const float* dz = dout + std::size_t(t) * C + h * HS;
      double pdp = 0.0;
      for (int t2 = first; t2 <= t; t2++) {
        p[t2] /= sum;
        const float* v = inp + std::size_t(t2) * row + 2 * C + h * HS;
        double d = 0.0;
        for (int i = 0; i < HS; i++) d += double(dz[i]) * v[i];
        dp[t2] = d;
        pdp += p[t2] * d;
      }
      float* dq = dinp + std::size_t(t) * row + h * HS;
      for (int t2 = first; t2 <= t; t2++) {
        float* dv = dinp + std::size_t(t2) * row + 2 * C + h * HS;
        for (int i = 0; i < HS; i++) dv[i] += static_cast<float>(p[t2] * dz[i]);
        double ds = p[t2] * (dp[t2] - pdp);
        if (softcap > 0.0f) {
          const double th = std::tanh(s[t2] / softcap);
          ds *= 1.0 - th * th;
        }
        ds *= scale;
        const float* k = inp + std::size_t(t2) * row + C + h * HS;
        float* dk = dinp + std::size_t(t2) * row + C + h * HS;
        for (int i = 0; i < HS; i++) {
          dq[i] += static_cast<float>(ds * k[i]);
          dk[i] += static_cast<float>(ds * q[i]);
        }
      }
    }
  });
}

}  // namespace headlab::model
