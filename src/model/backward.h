// model/backward.h — the forward's backward with respect to the activations (not the weights),
// for every family the engine runs: the gradient of a metric of the logits at the hook points
// attribution patching reads (Syed, Rager & Conmy 2023; Kramár et al. 2024, "AtP*").
//
//   ForwardOptions opt;  opt.record.residual = true;         // the resid_pre of every block
//   ForwardOutput out;
//   forward(params, ids, opt, out, ws);
//   LogitGradient g{/*position=*/T - 1, {answer, wrong}, {1.0f, -1.0f}};   // d(logit diff)/d logits
//   ActivationGradients grads;
//   Status s = backward(params, ids, out.record.residual, {&g, 1}, grads);
//   grads.resid_pre_at(3)[t * C + i];                        // d metric / d blocks.3.hook_resid_pre[t, i]
// (the pattern's gradient is dpattern[h, t, t2] = dz[t, h] . v[t2, kv(h)], from z_at and the run's v)
//
// It walks the forward in reverse (model/forward.h's numbered steps), one block at a time:
// from the block's recorded resid_pre it runs the block again (cheap: one block), keeping what
// each op's backward reads, then calls the ops' backwards (model/ops/*: each beside its forward)
// from the block's output back to its input:
//   5b. Gemma 2's final soft-cap:  dlogits_raw = dlogits (1 - tanh^2(logits_raw / cap))
//   5.  dln_f = dlogits_raw @ unembedding;  dx_L = ln_f backward
//   per block l = L-1 .. 0, dx = d resid_post:
//   4.  d mlp_out = dx (Gemma: back through its post-norm), down, act, up/gate, ln_2
//       sequential: d resid_mid = dx + that;  parallel: added to d resid_pre at the end
//   3.  d attn_out = d resid_mid (parallel: dx) (Gemma: back through its post-norm); dz = @ W_O
//   2.  attention backward (scale, soft-cap, window, causal mask; the pattern recomputed)
//   1c-1. GQA: the KV heads' gradients summed over their query heads; rotary backward;
//       q/k-norm backward; @ c_attn; ln_1 backward; d resid_pre = d resid_mid + that
// The embedding (and Gemma's scale of it) comes before every hook point attribution reads,
// so the walk stops at resid_pre of block 0.
// The recomputed block runs in float32 through sgemm on float32 copies of the layer's matrices
// (widened from bf16/f16 as the forward widens them), so its activations equal the forward's
// to float rounding (under --compute bf16 the forward rounds the products' inputs, the
// recomputation does not).
#pragma once

#include <span>
#include <vector>

#include "model/parameters.h"
#include "util/result.h"

namespace headlab::model {

// d metric / d logits at one position (after Gemma 2's final soft-cap, as the forward's
// logits). tokens: the columns the metric reads, with one gradient each; empty: every column,
// grad then has V values.
struct LogitGradient {
  int position = 0;
  std::vector<int> tokens;
  std::vector<float> grad;
};

// d metric / d the activation at each hook point; shapes as the hooks' (model/hooks.h).
struct ActivationGradients {
  int L = 0, T = 0, C = 0, D = 0, NH = 0, HS = 0, QKV = 0;
  bool sequential_mlp = false;   // the block has a resid_mid (sequential with an MLP)
  std::vector<float> resid_pre;  // (L+1, T, C)  [l]: blocks.l.hook_resid_pre; [L]: the final resid_post
  std::vector<float> resid_mid;  // (L, T, C)    when sequential_mlp, else empty
  std::vector<float> z;          // (L, T, D)    attn.hook_z, head h at columns h*HS..
  // (L, T, QKV)  attn.hook_q, hook_k, hook_v (after the q/k norm, before the rotary, as TL's):
  // q's NH heads at [0, D), k's NKV heads at [D, D + NKV*HS), v's after
  std::vector<float> qkv;

  const float* resid_pre_at(int l) const { return resid_pre.data() + std::size_t(l) * T * C; }
  const float* resid_post_at(int l) const { return resid_pre_at(l + 1); }
  const float* resid_mid_at(int l) const { return resid_mid.data() + std::size_t(l) * T * C; }
  // attn_out is added to the stream that becomes resid_mid (resid_post in a parallel or
  // attention-only block), mlp_out to resid_post: their gradients are those streams'.
  const float* attn_out_at(int l) const { return sequential_mlp ? resid_mid_at(l) : resid_post_at(l); }
  const float* mlp_out_at(int l) const { return resid_post_at(l); }
  const float* z_at(int l) const { return z.data() + std::size_t(l) * T * D; }
  const float* qkv_at(int l) const { return qkv.data() + std::size_t(l) * T * QKV; }
};

// The gradient of the metric whose logit gradients are `dlogits` (positions need not be
// distinct: their gradients add), at every hook point above, for the run of `ids` whose
// record.residual (L+1, T, C) is `residual` (a forward with RecordRequest::residual; that
// forward's hooks may have added steering vectors: an added constant changes no gradient).
// The forward must have run without interventions (ablations, pattern replacements, key
// blocks): the backward does not know them.
// Errors: invalid_argument for a residual of the wrong size, a position outside 0..T-1, a
// token outside the vocabulary, or a gradient count that does not match its tokens.
Status backward(const Parameters& params, std::span<const int> ids, std::span<const float> residual,
                std::span<const LogitGradient> dlogits, ActivationGradients& out);

}  // namespace headlab::model
