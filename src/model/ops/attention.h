// model/ops/attention.h — causal multi-head self-attention, the heads headlab inspects.
// For each head h (HS = C / NH columns at h*HS of q, k and v):
//   scores[t, t2]  = q_t . k_t2 / sqrt(HS)                        (preatt)
//   masked         = scores, with t2 > t set to -inf              (the causal mask)
//   pattern[t, :]  = softmax(masked[t, :])                         (att; zeros for t2 > t)
//   z[t, h*HS + i] = sum_t2 pattern[t, t2] v_t2[i]                 (out)
// backward (walks the same steps in reverse):
//   dpattern[t,t2] = dz_t . v_t2;        dv_t2 += pattern[t,t2] dz_t
//   dscores[t,t2]  = p (dpattern - sum_j p_j dpattern_j)   (softmax backward, t2 <= t)
//   dq_t += dscores[t,t2] k_t2 / sqrt(HS);   dk_t2 += dscores[t,t2] q_t / sqrt(HS)
//
// attention_forward/attention_backward are the plain loops (llm.c layout) the faster
// kernels are tested against: they keep the full (B, NH, T, T) scores and pattern;
// entries above the diagonal are 0.
// attention_forward_causal is the inference kernel: it computes only the causal half,
// by blocks of queries through sgemm, and hands each head's pattern to the caller. It
// takes the scale of the scores (ModelConfig::attention_scale: 1/sqrt(HS) for GPT-2, and
// other factors when config.json's scale_attn_* switches say so); the others use 1/sqrt(HS).
#pragma once

namespace headlab::model {

void attention_forward(float* out,        // (B, T, C)      z, heads side by side
                       float* preatt,     // (B, NH, T, T)  scores (upper half 0)
                       float* att,        // (B, NH, T, T)  pattern (upper half 0)
                       const float* inp,  // (B, T, 3*C)    q, k, v side by side
                       int B, int T, int C, int NH);
void attention_backward(float* dinp,        // (B, T, 3*C)     +=
                        float* dpreatt,     // (B, NH, T, T)   scratch, overwritten
                        float* datt,        // (B, NH, T, T)   scratch, overwritten
                        const float* dout,  // (B, T, C)
                        const float* inp,   // (B, T, 3*C)
                        const float* att,   // (B, NH, T, T)
                        int B, int T, int C, int NH);

// The training pair: the same for one head h of one sequence, through sgemm by blocks of
// queries, so every product skips the masked half (the training step runs one task per
// sequence and head). Pointers are that sequence's: inp (T, 3C), out (T, C), dout (T, C),
// dinp (T, 3C) +=; att is that head's (T, T) pattern. Same numbers as the loops above, to
// float rounding.
// The forward keeps no scores: they are computed into att and turned into the pattern in
// place. It writes only the causal half of each block of queries (row t: keys 0..t, then
// zeros up to the block's last query); entries further right are never written nor read.
// The backward needs attention_block_scratch_size(T) floats of scratch for dpattern and
// dscores of one block of queries, which stay in cache.
void attention_head_forward(float* out, float* att, const float* inp, int T, int C, int NH, int h);
void attention_head_backward(float* dinp, const float* dout, const float* inp, const float* att, int T, int C,
                             int NH, int h, float* scratch);

// What attention_forward_causal may change in a head (the interventions), and where it
// reports. All pointers may be null.
struct AttentionHeadHooks {
  // Per head h, a row-major (T, T) pattern to use instead of softmax(masked), or null.
  // Rows must be zero above the diagonal. (Used to replace a head's pattern.)
  const float* const* replace_pattern = nullptr;  // [NH] -> (T, T) or null
  // Per head h and key t2: true hides key t2 from every query of head h (blocks it),
  // except from a query that has no other visible key (its own position when t2 = 0),
  // whose row then falls back to attending to itself.
  const unsigned char* const* block_key = nullptr;  // [NH] -> (T) or null
  // Receives the causal half of each head's scores and pattern, packed by rows:
  // row t holds t+1 values (keys 0..t) at offset t*(t+1)/2. Layout [NH][T*(T+1)/2].
  float* scores_out = nullptr;
  float* pattern_out = nullptr;
  // Sliding-window attention, another mask: with window W > 0 query t sees only keys t2 with
  // t - t2 < W (the others get -inf before the softmax, so their pattern is 0). 0: no window.
  int window = 0;
  // Gemma 2's soft-capping: scores = softcap * tanh(scores / softcap) before the mask (and
  // so in scores_out). 0: off.
  float softcap = 0.0f;
};

// Inference attention for one sequence (B = 1): out = z (T, C), the heads split over the
// pool; scores = q.k * scale, computed in float32 with the scale inside the product.
// `scratch` holds attention_causal_scratch_size(T) floats. Matches attention_forward to
// float rounding when scale = 1/sqrt(HS).
void attention_forward_causal(float* out,        // (T, C)
                              const float* inp,  // (T, 3*C)
                              int T, int C, int NH, float scale,
                              const AttentionHeadHooks& hooks,
                              float* scratch);
long long attention_causal_scratch_size(int T);  // one block's scratch per pool thread
long long attention_block_scratch_size(int T);   // one block of queries: (64, T)

// The backward of attention_forward_causal without interventions (for attribution: the
// gradient of a metric with respect to the activations, not the weights). It recomputes each
// row's pattern from q and k (plain loops, softmax in double), then walks the steps back:
//   s[t,t2] = q_t.k_t2 * scale;  c = softcap ? cap tanh(s / cap) : s;  masked: t2 > t, or t - t2 >= window
//   p = softmax(c over the visible keys);  z_t = sum_t2 p[t,t2] v_t2
//   dp[t,t2] = dz_t . v_t2;   dv_t2 += p dz_t;   dc = p (dp - sum_j p_j dp_j)
//   ds = dc (1 - tanh^2(s / cap)) (dc without the soft-cap)
//   dq_t += ds scale k_t2;   dk_t2 += ds scale q_t
// window and softcap as AttentionHeadHooks' (0: off).
void attention_backward_causal(float* dinp,        // (T, 3*C)  +=  dq, dk, dv per query head
                               const float* dout,  // (T, C)    dz
                               const float* inp,   // (T, 3*C)  q, k, v as the forward read them
                               int T, int C, int NH, float scale, int window, float softcap);

}  // namespace headlab::model
