// train/gpt_train.cpp — the training forward (keeping activations) and its backward.
// The forward numbers its steps; the backward walks the same numbers in reverse.
// Positions: learned (wpe added in step 0), rotary (q and k turned in step 1b) or none.
#include "train/gpt_train.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "model/blas.h"
#include "model/ops/attention.h"
#include "model/ops/embedding.h"
#include "model/ops/gelu.h"
#include "model/ops/layernorm.h"
#include "model/ops/matmul.h"
#include "model/ops/residual.h"
#include "model/thread_pool.h"
#include "train/cross_entropy.h"
#include "train/parallel.h"
#include "util/check.h"

namespace headlab::train {

using namespace headlab::model;

std::array<std::size_t, kNumActivationTensors> activations_sizes(const ModelConfig& c, int B_, int T_,
                                                                 bool gradients) {
  const std::size_t B = B_, T = T_, C = c.n_embd, L = c.n_layer, NH = c.n_head, V = c.vocab_size;
  const std::size_t mlp = c.mlp ? 1 : 0;
  // the gradients have no pattern (the attention backward keeps dpattern of one block of
  // queries in scratch) and no probs (the loss's backward goes straight to dlogits)
  const std::size_t fwd = gradients ? 0 : 1;
  return {
      B * T * C,             // encoded
      L * B * T * C,         // ln1
      L * B * T,             // ln1_mean
      L * B * T,             // ln1_rstd
      L * B * T * 3 * C,     // qkv
      L * B * T * C,         // atty
      fwd * L * B * NH * T * T,  // att
      L * B * T * C,         // attproj
      L * B * T * C,         // residual2
      mlp * L * B * T * C,   // ln2
      mlp * L * B * T,       // ln2_mean
      mlp * L * B * T,       // ln2_rstd
      mlp * L * B * T * 4 * C,  // fch
      mlp * L * B * T * 4 * C,  // fch_gelu
      mlp * L * B * T * C,   // fcproj
      mlp * L * B * T * C,   // residual3
      B * T * C,             // lnf
      B * T,                 // lnf_mean
      B * T,                 // lnf_rstd
      B * T * V,             // logits
      fwd * B * T * V,       // probs
      B * T,                 // losses
  };
}

namespace {

ActivationTensors activations_point(float* memory, const ModelConfig& c, int B, int T, bool gradients) {
  auto sizes = activations_sizes(c, B, T, gradients);
  ActivationTensors a{};
  std::array<float**, kNumActivationTensors> ptrs = {
      &a.encoded, &a.ln1,      &a.ln1_mean, &a.ln1_rstd, &a.qkv,      &a.atty,     &a.att,
      &a.attproj, &a.residual2, &a.ln2,     &a.ln2_mean, &a.ln2_rstd, &a.fch,      &a.fch_gelu,
      &a.fcproj,  &a.residual3, &a.lnf,     &a.lnf_mean, &a.lnf_rstd, &a.logits,   &a.probs, &a.losses};
  for (int i = 0; i < kNumActivationTensors; ++i) {
    *ptrs[i] = memory;
    memory += sizes[i];
  }
  return a;
}

std::size_t activations_count(const ModelConfig& c, int B, int T, bool gradients) {
  std::size_t n = 0;
  for (std::size_t s : activations_sizes(c, B, T, gradients)) n += s;
  return n;
}

// Every product of a training step is split over headlab's pool, each part a single-threaded
// sgemm (model/blas.h): the pool's workers sleep between jobs, where OpenBLAS's spin and
// yield, which cost a third of the step when the two took turns. matmul_forward splits its
// output columns itself.

// dinp (N, C) = dout @ weight (written: every dinp of the step is its first writer), split by
// rows; dweight (OC, C) += dout^T @ inp and dbias, split by output columns: every part writes
// its own slice.
void matmul_backward_pooled(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                            const float* weight, int N, int C, int OC) {
  const int parts = thread_pool_size();
  thread_pool_run(parts, [&](int t) {
    const int n0 = int(split_at(N, t, parts)), n1 = int(split_at(N, t + 1, parts));
    if (n1 > n0)
      blas_sgemm(false, false, n1 - n0, C, OC, 1.0f, dout + std::size_t(n0) * OC, OC, weight, C, 0.0f,
                 dinp + std::size_t(n0) * C, C);
    const int o0 = int(split_at(OC, t, parts)), o1 = int(split_at(OC, t + 1, parts));
    if (o1 > o0) {
      blas_sgemm(true, false, o1 - o0, C, N, 1.0f, dout + o0, OC, inp, C, 1.0f, dweight + std::size_t(o0) * C, C);
      if (dbias)
        for (int n = 0; n < N; n++) {
          const float* d = dout + std::size_t(n) * OC;
          for (int o = o0; o < o1; o++) dbias[o] += d[o];
        }
    }
  });
}

void fill_zero_pooled(float* v, std::size_t n) {
  for_parts(n, [&](std::size_t i0, std::size_t i1) { std::fill(v + i0, v + i1, 0.0f); });
}

void layernorm_forward_pooled(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                              const float* bias, int N, int C, float eps) {
  for_parts(std::size_t(N), [&](std::size_t n0, std::size_t n1) {
    layernorm_forward(out + n0 * C, mean + n0, rstd + n0, inp + n0 * C, weight, bias, int(n1 - n0), C, eps);
  }, C);
}

// The rows split over the pool; each part sums its dweight and dbias apart, then the parts
// are added in order (the same order every step).
void layernorm_backward_pooled(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                               const float* weight, const float* mean, const float* rstd, int N, int C) {
  const int parts = thread_pool_size();
  std::vector<float> partial(std::size_t(parts) * 2 * C, 0.0f);  // per part: dweight (C), dbias (C)
  for_numbered_parts(std::size_t(N), parts, [&](int part, std::size_t n0, std::size_t n1) {
    float* dw = partial.data() + std::size_t(part) * 2 * C;
    if (n1 > n0)
      layernorm_backward(dinp + n0 * C, dw, dw + C, dout + n0 * C, inp + n0 * C, weight, mean + n0, rstd + n0,
                         int(n1 - n0), C);
  });
  for (int part = 0; part < parts; part++) {
    const float* dw = partial.data() + std::size_t(part) * 2 * C;
    for (int i = 0; i < C; i++) {
      dweight[i] += dw[i];
      dbias[i] += dw[C + i];
    }
  }
}

void residual_forward_pooled(float* out, const float* inp1, const float* inp2, std::size_t N) {
  for_parts(N, [&](std::size_t i0, std::size_t i1) { residual_forward(out + i0, inp1 + i0, inp2 + i0, int(i1 - i0)); });
}

void residual_backward_pooled(float* dinp1, float* dinp2, const float* dout, std::size_t N) {
  for_parts(N, [&](std::size_t i0, std::size_t i1) { residual_backward(dinp1 + i0, dinp2 + i0, dout + i0, int(i1 - i0)); });
}

// The attention op over the batch: one task per sequence and head, each through sgemm by
// blocks of queries (attention_head_forward / _backward skip the masked half).
void attention_forward_parallel(float* out, float* att, const float* inp, int B, int T, int C, int NH) {
  const std::size_t tc = std::size_t(T) * C, tt = std::size_t(T) * T;
  thread_pool_run(B * NH, [&](int task) {
    const int b = task / NH, h = task % NH;
    attention_head_forward(out + b * tc, att + (std::size_t(b) * NH + h) * tt, inp + b * 3 * tc, T, C, NH, h);
  });
}

// The backward's tasks split into one contiguous run per thread, each with its own scratch.
void attention_backward_parallel(float* dinp, const float* dout, const float* inp, const float* att, int B, int T,
                                 int C, int NH, std::vector<float>& scratch) {
  const std::size_t tc = std::size_t(T) * C, tt = std::size_t(T) * T;
  const int parts = thread_pool_size();
  const std::size_t per_part = attention_block_scratch_size(T);
  if (scratch.size() < parts * per_part) scratch.assign(parts * per_part, 0.0f);
  for_numbered_parts(std::size_t(B) * NH, parts, [&](int part, std::size_t i0, std::size_t i1) {
    for (std::size_t task = i0; task < i1; task++) {
      const std::size_t b = task / NH, h = task % NH;
      attention_head_backward(dinp + b * 3 * tc, dout + b * tc, inp + b * 3 * tc, att + (b * NH + h) * tt, T, C, NH,
                              int(h), scratch.data() + part * per_part);
    }
  });
}

// Rotary positions: q and k of every head of every sequence turn by their position
// (train/rotary.h). `x` is qkv (B, T, 3C), or its gradient for the backward.
void rotary_qk_parallel(float* x, const RotaryTable& r, bool backward, int B, int T, int C, int NH) {
  const std::size_t t3c = std::size_t(T) * 3 * C;
  thread_pool_run(B, [&](int b) {
    for (float* part : {x + b * t3c, x + b * t3c + C}) {  // q, then k
      if (backward) rotary_backward(part, r, T, NH, C / NH, 3 * C);
      else rotary_forward(part, r, T, NH, C / NH, 3 * C);
    }
  });
}

}  // namespace

std::size_t train_memory_bytes(const ModelConfig& config, int B, int T) {
  // weights + grads + AdamW m and v, activations + their gradients
  return sizeof(float) * (4 * parameters_count(config) + activations_count(config, B, T, false) +
                          activations_count(config, B, T, true));
}

Result<TrainModel> train_model_create(const ModelConfig& config, int B, int T, std::size_t max_bytes) {
  if (auto ok = config_validate(config); !ok) return tl::unexpected(ok.error());
  if (!config.is_gpt2())
    return make_error(ErrorCode::unsupported, "the trainer trains GPT-2 models only, not model_type \"" + config.family +
                                                  "\" (its backward has LayerNorm, GELU and learned, rotary or no "
                                                  "positions)");
  if (config.positions == ModelConfig::Positions::rotary && config.rotary_interleaved)
    return make_error(ErrorCode::unsupported,
                      "the trainer rotates NeoX halves (i, i + d/2) only, not GPT-J's interleaved pairs (rotary_interleaved)");
  if (config.positions == ModelConfig::Positions::rotary && config.rope_linear_factor != 1.0f)
    return make_error(ErrorCode::unsupported, "the trainer does not scale rotary positions (rope_scaling)");
  if (std::string keys = config_untrainable_keys(config); !keys.empty())
    return make_error(ErrorCode::unsupported, "config.json sets " + keys +
                                                  ": the trainer's backward scales the scores by 1/sqrt(HS) only");
  if (B < 1 || T < 1)
    return make_error(ErrorCode::invalid_argument, "batch size and context must be at least 1");
  if (T > config.n_ctx)
    return make_error(ErrorCode::invalid_argument, "context T = " + std::to_string(T) +
                                                       " is longer than the model's n_ctx = " +
                                                       std::to_string(config.n_ctx));
  const std::size_t need = train_memory_bytes(config, B, T);
  if (need > max_bytes)
    return make_error(ErrorCode::too_long,
                      "training this config at batch " + std::to_string(B) + " x context " + std::to_string(T) +
                          " needs " + std::to_string(need >> 20) + " MiB, more than the " +
                          std::to_string(max_bytes >> 20) +
                          " MiB allowed: lower --batch, the context or the model size");
  TrainModel m;
  m.config = config;
  m.B = B;
  m.T = T;
  m.params = parameters_allocate(config);
  m.grads_memory.assign(parameters_count(config), 0.0f);
  m.grads = parameters_point(m.grads_memory.data(), config);
  m.acts_memory.assign(activations_count(config, B, T, false), 0.0f);
  m.acts = activations_point(m.acts_memory.data(), config, B, T, false);
  m.dacts_memory.assign(activations_count(config, B, T, true), 0.0f);
  m.dacts = activations_point(m.dacts_memory.data(), config, B, T, true);
  m.inputs.assign(std::size_t(B) * T, 0);
  m.targets.assign(std::size_t(B) * T, -1);
  if (config.positions == ModelConfig::Positions::rotary)
    m.rotary = rotary_table(T, config.rotary_size(), config.rope_theta);
  return m;
}

float train_forward(TrainModel& m, const int* inputs, const int* targets) {
  const ModelConfig& c = m.config;
  const int B = m.B, T = m.T, C = c.n_embd, L = c.n_layer, NH = c.n_head, V = c.vocab_size;
  const float eps = c.layer_norm_eps;
  const int BT = B * T;
  const ParameterTensors& p = m.params.t;
  ActivationTensors& a = m.acts;
  std::copy(inputs, inputs + BT, m.inputs.begin());
  std::copy(targets, targets + BT, m.targets.begin());

  // 0. x = wte[inputs] + wpe[0..T)                                       (B, T, C)
  //    (rotary or no positions: x = wte[inputs]; rotary turns q and k in step 1b)
  const bool learned = c.positions == ModelConfig::Positions::learned;
  const bool rotary = c.positions == ModelConfig::Positions::rotary;
  if (learned) {
    embedding_forward(a.encoded, inputs, p.wte, p.wpe, B, T, C);
  } else {
    for (int i = 0; i < BT; ++i)
      std::copy(p.wte + std::size_t(inputs[i]) * C, p.wte + std::size_t(inputs[i] + 1) * C, a.encoded + std::size_t(i) * C);
  }
  const float* residual = a.encoded;
  for (int l = 0; l < L; ++l) {
    const std::size_t btc = std::size_t(BT) * C;
    const float* ln1w = p.ln1w + l * C;
    const float* ln1b = p.ln1b + l * C;
    const float* qkvw = p.qkvw + std::size_t(l) * 3 * C * C;
    const float* qkvb = p.qkvb + l * 3 * C;
    const float* attprojw = p.attprojw + std::size_t(l) * C * C;
    const float* attprojb = p.attprojb + l * C;
    float* l_ln1 = a.ln1 + l * btc;
    float* l_ln1_mean = a.ln1_mean + l * BT;
    float* l_ln1_rstd = a.ln1_rstd + l * BT;
    float* l_qkv = a.qkv + l * 3 * btc;
    float* l_atty = a.atty + l * btc;
    float* l_att = a.att + std::size_t(l) * B * NH * T * T;
    float* l_attproj = a.attproj + l * btc;
    float* l_residual2 = a.residual2 + l * btc;
    // 1. qkv = ln_1(x) @ c_attn^T + b                                    (B, T, 3C)
    layernorm_forward_pooled(l_ln1, l_ln1_mean, l_ln1_rstd, residual, ln1w, ln1b, BT, C, eps);
    matmul_forward(l_qkv, l_ln1, qkvw, qkvb, BT, C, 3 * C);
    // 1b. rotary: q and k turn by their position, in place               (B, T, 3C)
    if (rotary) rotary_qk_parallel(l_qkv, m.rotary, false, B, T, C, NH);
    // 2. z = attention(qkv): scores, mask, pattern, pattern @ v          (B, T, C)
    attention_forward_parallel(l_atty, l_att, l_qkv, B, T, C, NH);
    // 3. x = x + z @ c_proj^T + b
    matmul_forward(l_attproj, l_atty, attprojw, attprojb, BT, C, C);
    residual_forward_pooled(l_residual2, residual, l_attproj, btc);
    residual = l_residual2;
    if (!c.mlp) continue;
    // 4. x = x + c_proj(gelu(c_fc(ln_2(x))))                             (B, T, 4C) inside
    float* l_ln2 = a.ln2 + l * btc;
    float* l_fch = a.fch + l * 4 * btc;
    float* l_fch_gelu = a.fch_gelu + l * 4 * btc;
    float* l_fcproj = a.fcproj + l * btc;
    float* l_residual3 = a.residual3 + l * btc;
    layernorm_forward_pooled(l_ln2, a.ln2_mean + l * BT, a.ln2_rstd + l * BT, l_residual2, p.ln2w + l * C,
                      p.ln2b + l * C, BT, C, eps);
    matmul_forward(l_fch, l_ln2, p.fcw + std::size_t(l) * 4 * C * C, p.fcb + l * 4 * C, BT, C, 4 * C);
    for_parts(4 * btc, [&](std::size_t i0, std::size_t i1) { gelu_forward(l_fch_gelu + i0, l_fch + i0, int(i1 - i0)); });
    matmul_forward(l_fcproj, l_fch_gelu, p.fcprojw + std::size_t(l) * C * 4 * C, p.fcprojb + l * C, BT,
                   4 * C, C);
    residual_forward_pooled(l_residual3, l_residual2, l_fcproj, btc);
    residual = l_residual3;
  }
  // 5. logits = ln_f(x) @ unembedding^T                                  (B, T, V)
  layernorm_forward_pooled(a.lnf, a.lnf_mean, a.lnf_rstd, residual, p.lnfw, p.lnfb, BT, C, eps);
  matmul_forward(a.logits, a.lnf, parameters_unembedding(p, c), nullptr, BT, C, V);
  // 6. losses = cross-entropy(softmax(logits), targets)                  (B, T)
  for_parts(std::size_t(BT), [&](std::size_t n0, std::size_t n1) {
    cross_entropy_forward(a.losses + n0, a.probs + n0 * V, a.logits + n0 * V, targets + n0, int(n1 - n0), V);
  }, V);
  double sum = 0.0;
  int n = 0;
  for (int i = 0; i < BT; ++i)
    if (targets[i] >= 0) {
      sum += a.losses[i];
      ++n;
    }
  m.n_targets = n;
  m.mean_loss = n > 0 ? static_cast<float>(sum / n) : 0.0f;
  return m.mean_loss;
}

void train_zero_grad(TrainModel& m) { fill_zero_pooled(m.grads_memory.data(), m.grads_memory.size()); }

void train_backward(TrainModel& m) {
  const ModelConfig& c = m.config;
  const int B = m.B, T = m.T, C = c.n_embd, L = c.n_layer, NH = c.n_head, V = c.vocab_size;
  const int BT = B * T;
  const ParameterTensors& p = m.params.t;
  ParameterTensors& g = m.grads;
  const ActivationTensors& a = m.acts;
  ActivationTensors& d = m.dacts;
  // Most activation gradients are written whole by the first op that reaches them (the
  // residual and matmul backwards, GELU's, the loss's). Two are summed into from the start and
  // begin at zero: the last residual (ln_f's backward adds to it) and every dqkv (the
  // attention backward adds each block of queries' share).
  const std::size_t btc = std::size_t(BT) * C;
  float* dlast_residual = c.mlp ? d.residual3 + (L - 1) * btc : d.residual2 + (L - 1) * btc;
  fill_zero_pooled(dlast_residual, btc);
  fill_zero_pooled(d.qkv, std::size_t(L) * 3 * btc);

  // The forward in reverse: 6, 5, then the layers from last to first (4, 3, 2, 1), then 0.
  // 6. the loss is the mean over scored positions: dlosses = 1 / n
  const float dloss = m.n_targets > 0 ? 1.0f / m.n_targets : 0.0f;
  for (int i = 0; i < BT; ++i) d.losses[i] = m.targets[i] >= 0 ? dloss : 0.0f;
  for_parts(std::size_t(BT), [&](std::size_t n0, std::size_t n1) {
    cross_entropy_backward(d.logits + n0 * V, d.losses + n0, a.probs + n0 * V, m.targets.data() + n0, int(n1 - n0), V);
  }, V);
  // 5. logits = ln_f(x) @ unembedding^T
  float* dunembedding = c.tied ? g.wte : g.lm_head;
  matmul_backward_pooled(d.lnf, dunembedding, nullptr, d.logits, a.lnf, parameters_unembedding(p, c), BT, C, V);
  const float* last_residual = c.mlp ? a.residual3 + (L - 1) * btc : a.residual2 + (L - 1) * btc;
  layernorm_backward_pooled(dlast_residual, g.lnfw, g.lnfb, d.lnf, last_residual, p.lnfw, a.lnf_mean, a.lnf_rstd,
                     BT, C);

  for (int l = L - 1; l >= 0; --l) {
    const float* residual = l == 0 ? a.encoded : (c.mlp ? a.residual3 : a.residual2) + (l - 1) * btc;
    float* dresidual = l == 0 ? d.encoded : (c.mlp ? d.residual3 : d.residual2) + (l - 1) * btc;
    if (c.mlp) {
      // 4. x = x + c_proj(gelu(c_fc(ln_2(x))))
      float* dl_residual3 = d.residual3 + l * btc;
      float* dl_fcproj = d.fcproj + l * btc;
      residual_backward_pooled(d.residual2 + l * btc, dl_fcproj, dl_residual3, btc);
      matmul_backward_pooled(d.fch_gelu + l * 4 * btc, g.fcprojw + std::size_t(l) * C * 4 * C, g.fcprojb + l * C,
                      dl_fcproj, a.fch_gelu + l * 4 * btc, p.fcprojw + std::size_t(l) * C * 4 * C, BT, 4 * C, C);
      {
        float* dfch = d.fch + l * 4 * btc;
        const float* fch = a.fch + l * 4 * btc;
        const float* dfch_gelu = d.fch_gelu + l * 4 * btc;
        for_parts(4 * btc, [&](std::size_t i0, std::size_t i1) {
          gelu_backward(dfch + i0, fch + i0, dfch_gelu + i0, int(i1 - i0));
        });
      }
      matmul_backward_pooled(d.ln2 + l * btc, g.fcw + std::size_t(l) * 4 * C * C, g.fcb + l * 4 * C,
                      d.fch + l * 4 * btc, a.ln2 + l * btc, p.fcw + std::size_t(l) * 4 * C * C, BT, C, 4 * C);
      layernorm_backward_pooled(d.residual2 + l * btc, g.ln2w + l * C, g.ln2b + l * C, d.ln2 + l * btc,
                         a.residual2 + l * btc, p.ln2w + l * C, a.ln2_mean + l * BT, a.ln2_rstd + l * BT, BT, C);
    }
    // 3. x = x + z @ c_proj^T + b
    float* dl_attproj = d.attproj + l * btc;
    residual_backward_pooled(dresidual, dl_attproj, d.residual2 + l * btc, btc);
    matmul_backward_pooled(d.atty + l * btc, g.attprojw + std::size_t(l) * C * C, g.attprojb + l * C, dl_attproj,
                    a.atty + l * btc, p.attprojw + std::size_t(l) * C * C, BT, C, C);
    // 2. z = attention(qkv)
    const std::size_t tt = std::size_t(B) * NH * T * T;
    attention_backward_parallel(d.qkv + l * 3 * btc, d.atty + l * btc, a.qkv + l * 3 * btc, a.att + l * tt, B, T, C,
                                NH, m.attention_scratch);
    // 1b. rotary: dq and dk turn back by the negative angle (the rotation's transpose)
    if (c.positions == ModelConfig::Positions::rotary)
      rotary_qk_parallel(d.qkv + l * 3 * btc, m.rotary, true, B, T, C, NH);
    // 1. qkv = ln_1(x) @ c_attn^T + b
    matmul_backward_pooled(d.ln1 + l * btc, g.qkvw + std::size_t(l) * 3 * C * C, g.qkvb + l * 3 * C,
                    d.qkv + l * 3 * btc, a.ln1 + l * btc, p.qkvw + std::size_t(l) * 3 * C * C, BT, C, 3 * C);
    layernorm_backward_pooled(dresidual, g.ln1w + l * C, g.ln1b + l * C, d.ln1 + l * btc, residual, p.ln1w + l * C,
                       a.ln1_mean + l * BT, a.ln1_rstd + l * BT, BT, C);
  }
  // 0. x = wte[inputs] + wpe   (rotary or no positions: x = wte[inputs])
  if (c.positions == ModelConfig::Positions::learned) {
    embedding_backward(g.wte, g.wpe, d.encoded, m.inputs.data(), B, T, C);
  } else {
    for (int i = 0; i < BT; ++i) {
      float* dwte = g.wte + std::size_t(m.inputs[i]) * C;
      const float* dx = d.encoded + std::size_t(i) * C;
      for (int k = 0; k < C; ++k) dwte[k] += dx[k];
    }
  }
}

}  // namespace headlab::train
