// model/backward.cpp — the forward's backward with respect to the activations (see backward.h
// for the steps, numbered as forward.h's).
#include "model/backward.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "model/forward.h"
#include "model/ops/attention.h"
#include "model/ops/gelu.h"
#include "model/ops/layernorm.h"
#include "model/ops/matmul.h"
#include "model/ops/residual.h"
#include "model/ops/rmsnorm.h"
#include "model/ops/rope.h"
#include "model/ops/swiglu.h"

namespace headlab::model {

namespace {

using Floats = std::vector<float>;

// The block's norm (LayerNorm with weight and bias, or RMSNorm, Gemma's with 1 + w), forward
// and the backward of its input.                                          (T, C) each
struct Norm {
  const ModelConfig& c;
  int T, C;
  void forward(float* out, const float* in, const float* w, const float* b) const {
    if (c.norm == ModelConfig::Norm::rmsnorm) rmsnorm_forward(out, in, w, T, C, c.layer_norm_eps, c.norm_plus_one);
    else layernorm_forward(out, nullptr, nullptr, in, w, b, T, C, c.layer_norm_eps);
  }
  // din += d norm(in) / d in  applied to dout
  void backward(float* din, const float* dout, const float* in, const float* w) const {
    if (c.norm == ModelConfig::Norm::rmsnorm) {
      rmsnorm_backward(din, dout, in, w, T, C, c.layer_norm_eps, c.norm_plus_one);
      return;
    }
    Floats mean(T), rstd(T), out(std::size_t(T) * C), dw(C), db(C);  // dw, db: not wanted
    Floats zero_bias(C, 0.0f);
    layernorm_forward(out.data(), mean.data(), rstd.data(), in, w, zero_bias.data(), T, C, c.layer_norm_eps);
    layernorm_backward(din, dw.data(), db.data(), dout, in, w, mean.data(), rstd.data(), T, C);
  }
};

// A layer's slice of a matrix as float32 rows (widened from the packed type when packed) into
// `m`, which keeps its memory from layer to layer (a fresh one would fault its pages in again
// for every layer).                                                       (rows, cols)
void matrix_rows(Floats& m, const Parameters& p, float* ParameterTensors::*tensor, int layer, int rows, int cols) {
  if (m.size() < std::size_t(rows) * cols) m.resize(std::size_t(rows) * cols);
  parameters_read_rows(p, tensor, layer, 0, rows, m.data());
}

// What the block's backward reads, from running the block again on its resid_pre.
struct BlockActs {
  Floats ln1;       // (T, C)    ln_1(x)
  Floats qkv_raw;   // (T, QKV)  c_attn's output, before the q/k norm
  Floats qkv_rot;   // (T, QKV)  after the q/k norm and the rotary
  Floats heads;     // (T, 3D)   q, k, v per query head (GQA expanded)
  Floats attn;      // (T, C)    z @ W_O^T + b, before Gemma's post-norm
  Floats mlp_in;    // (T, C)    resid_mid, or resid_pre in a parallel block
  Floats fc;        // (T, FC)   c_fc's output ([gate; up] when gated)
  Floats mlp;       // (T, C)    the MLP's output before Gemma's post-norm
};

}  // namespace

Status backward(const Parameters& params, std::span<const int> ids, std::span<const float> residual,
                std::span<const LogitGradient> dlogits, ActivationGradients& out) {
  const ModelConfig& c = params.config;
  const ParameterTensors& w = params.t;
  const int T = static_cast<int>(ids.size());
  const int C = c.n_embd, NH = c.n_head, HS = c.head_size(), L = c.n_layer, V = c.vocab_size;
  const int NKV = c.kv_heads(), D = c.q_width(), QKV = c.qkv_width(), F = c.mlp_width(), FC = c.fc_width();
  const std::size_t TC = std::size_t(T) * C;
  auto bad = [](const std::string& m) { return make_error(ErrorCode::invalid_argument, "backward: " + m); };
  if (T < 1) return bad("the input has no tokens");
  if (residual.size() != std::size_t(L + 1) * TC)
    return bad("the residual record has " + std::to_string(residual.size()) + " values, not (L+1, T, C) = " +
               std::to_string(std::size_t(L + 1) * TC) + " (run the forward with record.residual)");
  for (const LogitGradient& g : dlogits) {
    if (g.position < 0 || g.position >= T)
      return bad("position " + std::to_string(g.position) + " is outside the input (0.." + std::to_string(T - 1) + ")");
    const std::size_t want = g.tokens.empty() ? std::size_t(V) : g.tokens.size();
    if (g.grad.size() != want)
      return bad("position " + std::to_string(g.position) + " has " + std::to_string(g.grad.size()) +
                 " gradients for " + std::to_string(want) + " logits");
    for (int tok : g.tokens)
      if (tok < 0 || tok >= V) return bad("token " + std::to_string(tok) + " is outside the vocabulary");
  }

  out.L = L, out.T = T, out.C = C, out.D = D, out.NH = NH, out.HS = HS, out.QKV = QKV;
  out.sequential_mlp = c.mlp && !c.parallel_residual;
  out.resid_pre.assign(std::size_t(L + 1) * TC, 0.0f);
  out.resid_mid.assign(out.sequential_mlp ? std::size_t(L) * TC : 0, 0.0f);
  out.z.assign(std::size_t(L) * T * D, 0.0f);
  out.qkv.assign(std::size_t(L) * T * QKV, 0.0f);
  const Norm norm{c, T, C};
  const bool has_norm_bias = c.norm == ModelConfig::Norm::layernorm;
  auto bias_or_null = [](const float* base, bool has, std::size_t offset) { return has ? base + offset : nullptr; };

  // 5, 5b. d ln_f(x_L)[t] = sum_j dlogits_raw[t, j] unembedding[token j]       (T, C)
  const float* xL = residual.data() + std::size_t(L) * TC;
  Floats lnf(TC), dlnf(TC, 0.0f), urow(C);
  norm.forward(lnf.data(), xL, w.lnfw, bias_or_null(w.lnfb, has_norm_bias, 0));
  for (const LogitGradient& g : dlogits) {
    const float* h = lnf.data() + std::size_t(g.position) * C;
    float* dh = dlnf.data() + std::size_t(g.position) * C;
    const int n = g.tokens.empty() ? V : static_cast<int>(g.tokens.size());
    for (int j = 0; j < n; j++) {
      if (g.grad[std::size_t(j)] == 0.0f) continue;
      const int tok = g.tokens.empty() ? j : g.tokens[std::size_t(j)];
      parameters_read_rows(params, parameters_unembedding_tensor(c), 0, tok, 1, urow.data());
      double d = g.grad[std::size_t(j)];
      if (c.final_softcap > 0.0f) {  // logits = cap tanh(raw / cap): d raw = d (1 - tanh^2)
        double raw = 0.0;
        for (int i = 0; i < C; i++) raw += double(h[i]) * urow[std::size_t(i)];
        const double th = std::tanh(raw / c.final_softcap);
        d *= 1.0 - th * th;
      }
      for (int i = 0; i < C; i++) dh[i] += static_cast<float>(d * urow[std::size_t(i)]);
    }
  }
  float* dxL = out.resid_pre.data() + std::size_t(L) * TC;
  norm.backward(dxL, dlnf.data(), xL, w.lnfw);

  // The rotary frequencies of the global layers and of Gemma 3's local ones.
  const int rd = c.rotary_size();
  LayerRope rope_global, rope_local;
  if (c.positions == ModelConfig::Positions::rotary)
    for (int l = 0; l < L; l++) {
      LayerRope& r = rope_is_local(c, l) ? rope_local : rope_global;
      if (r.inv_freq.empty() && rd > 0) r = rope_of_layer(c, l);
    }

  BlockActs a;
  std::vector<float> scratch;
  Floats wqkv, wo, wfc, wproj;  // the layer's matrices, float32
  for (int l = L - 1; l >= 0; l--) {
    const float* x = residual.data() + std::size_t(l) * TC;  // resid_pre (T, C)
    matrix_rows(wqkv, params, &ParameterTensors::qkvw, l, QKV, C);   // (QKV, C)
    matrix_rows(wo, params, &ParameterTensors::attprojw, l, C, D);   // (C, D)
    const LayerRope* rope = c.positions == ModelConfig::Positions::rotary
                                ? (rope_is_local(c, l) ? &rope_local : &rope_global) : nullptr;

    // ---- the block again, keeping what the backward reads ----
    // 1. qkv = ln_1(x) @ c_attn^T + b;  1a. q/k norm;  1b. rotary;  1c. GQA expanded
    a.ln1.resize(TC);
    norm.forward(a.ln1.data(), x, w.ln1w + std::size_t(l) * C, bias_or_null(w.ln1b, has_norm_bias, std::size_t(l) * C));
    a.qkv_raw.resize(std::size_t(T) * QKV);
    matmul_forward(a.qkv_raw.data(), a.ln1.data(), wqkv.data(), bias_or_null(w.qkvb, c.qkv_bias, std::size_t(l) * QKV),
                   T, C, QKV);
    a.qkv_rot = a.qkv_raw;
    if (c.qk_norm)
      for (int t = 0; t < T; t++) {
        float* row = a.qkv_rot.data() + std::size_t(t) * QKV;
        rmsnorm_forward(row, row, w.qnormw + std::size_t(l) * HS, NH, HS, c.layer_norm_eps, c.norm_plus_one);
        rmsnorm_forward(row + D, row + D, w.knormw + std::size_t(l) * HS, NKV, HS, c.layer_norm_eps, c.norm_plus_one);
      }
    if (rope) {
      rope_forward_frequencies(a.qkv_rot.data(), T, NH, HS, QKV, rd, c.rotary_interleaved, rope->inv_freq.data(), rope->scale);
      rope_forward_frequencies(a.qkv_rot.data() + D, T, NKV, HS, QKV, rd, c.rotary_interleaved, rope->inv_freq.data(),
                               rope->scale);
    }
    const int group = NH / NKV;
    a.heads.resize(std::size_t(T) * 3 * D);
    for (int t = 0; t < T; t++) {
      const float* src = a.qkv_rot.data() + std::size_t(t) * QKV;
      float* dst = a.heads.data() + std::size_t(t) * 3 * D;
      std::copy(src, src + D, dst);
      for (int h = 0; h < NH; h++) {
        const float* k = src + D + std::size_t(h / group) * HS;
        const float* v = src + D + std::size_t(NKV) * HS + std::size_t(h / group) * HS;
        std::copy(k, k + HS, dst + D + std::size_t(h) * HS);
        std::copy(v, v + HS, dst + 2 * D + std::size_t(h) * HS);
      }
    }
    // 2. z = attention;  3. attn = z @ W_O^T + b
    Floats z(std::size_t(T) * D);
    scratch.resize(std::size_t(attention_causal_scratch_size(T)));
    AttentionHeadHooks hooks;
    hooks.window = c.window_of(l);
    hooks.softcap = c.attn_softcap;
    attention_forward_causal(z.data(), a.heads.data(), T, D, NH, c.attention_scale(l), hooks, scratch.data());
    a.attn.resize(TC);
    matmul_forward(a.attn.data(), z.data(), wo.data(), bias_or_null(w.attprojb, c.attn_out_bias, std::size_t(l) * C), T,
                   D, C);
    Floats attn_out = a.attn;  // after Gemma's post-norm: what is added to the stream
    if (c.sandwich_norm) norm.forward(attn_out.data(), a.attn.data(), w.postattnw + std::size_t(l) * C, nullptr);
    // 4. the MLP on resid_mid (sequential) or resid_pre (parallel)
    if (c.mlp) {
      matrix_rows(wfc, params, &ParameterTensors::fcw, l, FC, C);        // (FC, C)
      matrix_rows(wproj, params, &ParameterTensors::fcprojw, l, C, F);   // (C, F)
      a.mlp_in.assign(x, x + TC);
      if (!c.parallel_residual) residual_forward(a.mlp_in.data(), x, attn_out.data(), static_cast<int>(TC));
      Floats ln2(TC);
      norm.forward(ln2.data(), a.mlp_in.data(), w.ln2w + std::size_t(l) * C,
                   bias_or_null(w.ln2b, has_norm_bias, std::size_t(l) * C));
      a.fc.resize(std::size_t(T) * FC);
      matmul_forward(a.fc.data(), ln2.data(), wfc.data(), bias_or_null(w.fcb, c.mlp_bias, std::size_t(l) * FC), T, C, FC);
      Floats act(std::size_t(T) * F);
      switch (c.mlp_kind) {
        case ModelConfig::Mlp::gelu_tanh: gelu_forward(act.data(), a.fc.data(), T * F); break;
        case ModelConfig::Mlp::gelu_erf: gelu_erf_forward(act.data(), a.fc.data(), T * F); break;
        case ModelConfig::Mlp::swiglu: swiglu_forward(act.data(), a.fc.data(), T, F); break;
        case ModelConfig::Mlp::geglu: geglu_forward(act.data(), a.fc.data(), T, F); break;
      }
      a.mlp.resize(TC);
      matmul_forward(a.mlp.data(), act.data(), wproj.data(), bias_or_null(w.fcprojb, c.mlp_bias, std::size_t(l) * C), T,
                     F, C);
    }

    // ---- the backward, from d resid_post (dy) to d resid_pre (dx) ----
    const float* dy = out.resid_pre.data() + std::size_t(l + 1) * TC;
    float* dx = out.resid_pre.data() + std::size_t(l) * TC;
    Floats dmlp_in(TC, 0.0f);
    if (c.mlp) {
      // 4b. d mlp_out = dy; Gemma: back through post_feedforward_layernorm
      Floats dmlp(dy, dy + TC);
      if (c.sandwich_norm) {
        std::fill(dmlp.begin(), dmlp.end(), 0.0f);
        norm.backward(dmlp.data(), dy, a.mlp.data(), w.postmlpw + std::size_t(l) * C);
      }
      // 4. down projection, activation, up/gate projection, ln_2
      Floats dact(std::size_t(T) * F, 0.0f), dfc(std::size_t(T) * FC, 0.0f), dln2(TC, 0.0f);
      matmul_backward_input(dact.data(), dmlp.data(), wproj.data(), T, F, C);
      switch (c.mlp_kind) {
        case ModelConfig::Mlp::gelu_tanh: gelu_backward(dfc.data(), a.fc.data(), dact.data(), T * F); break;
        case ModelConfig::Mlp::gelu_erf: gelu_erf_backward(dfc.data(), a.fc.data(), dact.data(), T * F); break;
        case ModelConfig::Mlp::swiglu: swiglu_backward(dfc.data(), dact.data(), a.fc.data(), T, F); break;
        case ModelConfig::Mlp::geglu: geglu_backward(dfc.data(), dact.data(), a.fc.data(), T, F); break;
      }
      matmul_backward_input(dln2.data(), dfc.data(), wfc.data(), T, C, FC);
      norm.backward(dmlp_in.data(), dln2.data(), a.mlp_in.data(), w.ln2w + std::size_t(l) * C);
    }
    // d resid_mid (sequential): the stream's gradient plus the MLP's; the parallel block's
    // attention and MLP both read resid_pre and add to resid_post
    Floats dmid(dy, dy + TC);
    if (out.sequential_mlp) {
      residual_forward(dmid.data(), dy, dmlp_in.data(), static_cast<int>(TC));
      std::copy(dmid.begin(), dmid.end(), out.resid_mid.begin() + std::size_t(l) * TC);
    }
    // 3b. d attn_out = dmid; Gemma: back through post_attention_layernorm
    Floats dattn(dmid);
    if (c.sandwich_norm) {
      std::fill(dattn.begin(), dattn.end(), 0.0f);
      norm.backward(dattn.data(), dmid.data(), a.attn.data(), w.postattnw + std::size_t(l) * C);
    }
    // 3. dz = dattn @ W_O                                                        (T, D)
    float* dz = out.z.data() + std::size_t(l) * T * D;
    matmul_backward_input(dz, dattn.data(), wo.data(), T, D, C);
    // 2. attention backward                                                      (T, 3D)
    Floats dheads(std::size_t(T) * 3 * D, 0.0f);
    attention_backward_causal(dheads.data(), dz, a.heads.data(), T, D, NH, c.attention_scale(l), c.window_of(l),
                              c.attn_softcap);
    // 1c. GQA: a KV head's gradient is the sum over the query heads that read it   (T, QKV)
    Floats dqkv(std::size_t(T) * QKV, 0.0f);
    for (int t = 0; t < T; t++) {
      const float* src = dheads.data() + std::size_t(t) * 3 * D;
      float* dst = dqkv.data() + std::size_t(t) * QKV;
      std::copy(src, src + D, dst);
      for (int h = 0; h < NH; h++) {
        float* dk = dst + D + std::size_t(h / group) * HS;
        float* dv = dst + D + std::size_t(NKV) * HS + std::size_t(h / group) * HS;
        for (int i = 0; i < HS; i++) {
          dk[i] += src[D + std::size_t(h) * HS + i];
          dv[i] += src[2 * D + std::size_t(h) * HS + i];
        }
      }
    }
    // 1b. rotary backward (in place);  1a. q/k norm backward
    if (rope) {
      rope_backward_frequencies(dqkv.data(), T, NH, HS, QKV, rd, c.rotary_interleaved, rope->inv_freq.data(), rope->scale);
      rope_backward_frequencies(dqkv.data() + D, T, NKV, HS, QKV, rd, c.rotary_interleaved, rope->inv_freq.data(),
                                rope->scale);
    }
    // the gradient at hook_q, hook_k, hook_v: after the q/k norm, before the rotary
    std::copy(dqkv.begin(), dqkv.end(), out.qkv.begin() + std::size_t(l) * T * QKV);
    if (c.qk_norm) {
      Floats dnormed(dqkv);
      for (int t = 0; t < T; t++) {
        const float* raw = a.qkv_raw.data() + std::size_t(t) * QKV;
        const float* dn = dnormed.data() + std::size_t(t) * QKV;
        float* dr = dqkv.data() + std::size_t(t) * QKV;
        std::fill(dr, dr + D + std::size_t(NKV) * HS, 0.0f);  // q and k: replaced by their norm's backward
        rmsnorm_backward(dr, dn, raw, w.qnormw + std::size_t(l) * HS, NH, HS, c.layer_norm_eps, c.norm_plus_one);
        rmsnorm_backward(dr + D, dn + D, raw + D, w.knormw + std::size_t(l) * HS, NKV, HS, c.layer_norm_eps,
                         c.norm_plus_one);
      }
    }
    // 1. d ln_1 = dqkv @ c_attn;  d resid_pre = dmid (+ the parallel MLP's) + ln_1 backward
    Floats dln1(TC, 0.0f);
    matmul_backward_input(dln1.data(), dqkv.data(), wqkv.data(), T, C, QKV);
    std::copy(dmid.begin(), dmid.end(), dx);
    if (c.parallel_residual) residual_forward(dx, dx, dmlp_in.data(), static_cast<int>(TC));
    norm.backward(dx, dln1.data(), x, w.ln1w + std::size_t(l) * C);
  }
  return {};
}

}  // namespace headlab::model
