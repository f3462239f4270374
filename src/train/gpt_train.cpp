// train/gpt_train.cpp — the training forward (keeping activations) and its backward.
// The forward numbers its steps; the backward walks the same numbers in reverse.
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
#include "util/check.h"

namespace headlab::train {

using namespace headlab::model;

std::array<std::size_t, kNumActivationTensors> activations_sizes(const ModelConfig& c, int B_, int T_) {
  const std::size_t B = B_, T = T_, C = c.n_embd, L = c.n_layer, NH = c.n_head, V = c.vocab_size;
  const std::size_t mlp = c.mlp ? 1 : 0;
  return {
      B * T * C,             // encoded
      L * B * T * C,         // ln1
      L * B * T,             // ln1_mean
      L * B * T,             // ln1_rstd
      L * B * T * 3 * C,     // qkv
      L * B * T * C,         // atty
      L * B * NH * T * T,    // preatt
      L * B * NH * T * T,    // att
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
      B * T * V,             // probs
      B * T,                 // losses
  };
}

namespace {

ActivationTensors activations_point(float* memory, const ModelConfig& c, int B, int T) {
  auto sizes = activations_sizes(c, B, T);
  ActivationTensors a{};
  std::array<float**, kNumActivationTensors> ptrs = {
      &a.encoded, &a.ln1,      &a.ln1_mean, &a.ln1_rstd, &a.qkv,      &a.atty,     &a.preatt, &a.att,
      &a.attproj, &a.residual2, &a.ln2,     &a.ln2_mean, &a.ln2_rstd, &a.fch,      &a.fch_gelu,
      &a.fcproj,  &a.residual3, &a.lnf,     &a.lnf_mean, &a.lnf_rstd, &a.logits,   &a.probs, &a.losses};
  for (int i = 0; i < kNumActivationTensors; ++i) {
    *ptrs[i] = memory;
    memory += sizes[i];
  }
  return a;
}

std::size_t activations_count(const ModelConfig& c, int B, int T) {
  std::size_t n = 0;
  for (std::size_t s : activations_sizes(c, B, T)) n += s;
  return n;
}

// Every product of a training step is split over headlab's pool, each part a single-threaded
// sgemm (train_forward sets OpenBLAS to one thread): the pool's workers sleep between jobs,
// where OpenBLAS's spin and yield, which cost a third of the step when the two took turns.

// OpenBLAS at one thread for the life of the guard (the pool does the splitting).
class SingleThreadedBlas {
 public:
  SingleThreadedBlas() : before_(blas_threads()) { if (before_ != 1) blas_set_threads(1); }
  ~SingleThreadedBlas() { if (before_ != 1) blas_set_threads(before_); }
  SingleThreadedBlas(const SingleThreadedBlas&) = delete;
  SingleThreadedBlas& operator=(const SingleThreadedBlas&) = delete;

 private:
  int before_;
};

// Part `part` of `parts` of [0, n).
inline int split_at(int n, int part, int parts) { return static_cast<int>(std::int64_t(n) * part / parts); }

// out (N, OC) = inp (N, C) @ weight^T + bias, the N rows split over the pool.
void matmul_forward_pooled(float* out, const float* inp, const float* weight, const float* bias, int N, int C,
                           int OC) {
  const int parts = thread_pool_size();
  thread_pool_run(parts, [&](int t) {
    const int n0 = split_at(N, t, parts), n1 = split_at(N, t + 1, parts);
    if (n1 > n0)
      matmul_forward(out + std::size_t(n0) * OC, inp + std::size_t(n0) * C, weight, bias, n1 - n0, C, OC);
  });
}

// dinp (N, C) += dout @ weight, split by rows; dweight (OC, C) += dout^T @ inp and dbias,
// split by output columns: every part writes its own slice.
void matmul_backward_pooled(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                            const float* weight, int N, int C, int OC) {
  const int parts = thread_pool_size();
  thread_pool_run(parts, [&](int t) {
    const int n0 = split_at(N, t, parts), n1 = split_at(N, t + 1, parts);
    if (n1 > n0)
      blas_sgemm(false, false, n1 - n0, C, OC, 1.0f, dout + std::size_t(n0) * OC, OC, weight, C, 1.0f,
                 dinp + std::size_t(n0) * C, C);
    const int o0 = split_at(OC, t, parts), o1 = split_at(OC, t + 1, parts);
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

// An elementwise op over [0, n), split over the pool in contiguous parts.
template <class Op>
void elementwise_pooled(std::size_t n, const Op& op) {
  const int parts = thread_pool_size();
  thread_pool_run(parts, [&](int t) {
    const std::size_t i0 = n * t / parts, i1 = n * (t + 1) / parts;
    if (i1 > i0) op(i0, i1 - i0);
  });
}

void fill_zero_pooled(std::vector<float>& v) {
  elementwise_pooled(v.size(), [&](std::size_t i, std::size_t k) { std::fill_n(v.data() + i, k, 0.0f); });
}

// The attention op over the batch: one task per sequence and head, each through sgemm by
// blocks of queries (attention_head_forward / _backward skip the masked half).
void attention_forward_parallel(float* out, float* preatt, float* att, const float* inp, int B, int T,
                                int C, int NH) {
  const std::size_t tc = std::size_t(T) * C, tt = std::size_t(T) * T;
  thread_pool_run(B * NH, [&](int task) {
    const int b = task / NH, h = task % NH;
    attention_head_forward(out + b * tc, preatt + (std::size_t(b) * NH + h) * tt, att + (std::size_t(b) * NH + h) * tt,
                           inp + b * 3 * tc, T, C, NH, h);
  });
}

void attention_backward_parallel(float* dinp, float* dpreatt, float* datt, const float* dout,
                                 const float* inp, const float* att, int B, int T, int C, int NH) {
  const std::size_t tc = std::size_t(T) * C, tt = std::size_t(T) * T;
  thread_pool_run(B * NH, [&](int task) {
    const int b = task / NH, h = task % NH;
    const std::size_t head = (std::size_t(b) * NH + h) * tt;
    attention_head_backward(dinp + b * 3 * tc, dpreatt + head, datt + head, dout + b * tc, inp + b * 3 * tc,
                            att + head, T, C, NH, h);
  });
}

}  // namespace

std::size_t train_memory_bytes(const ModelConfig& config, int B, int T) {
  // weights + grads + AdamW m and v, activations + their gradients
  return sizeof(float) * (4 * parameters_count(config) + 2 * activations_count(config, B, T));
}

Result<TrainModel> train_model_create(const ModelConfig& config, int B, int T, std::size_t max_bytes) {
  if (auto ok = config_validate(config); !ok) return tl::unexpected(ok.error());
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
  const std::size_t n_acts = activations_count(config, B, T);
  m.acts_memory.assign(n_acts, 0.0f);
  m.acts = activations_point(m.acts_memory.data(), config, B, T);
  m.dacts_memory.assign(n_acts, 0.0f);
  m.dacts = activations_point(m.dacts_memory.data(), config, B, T);
  m.inputs.assign(std::size_t(B) * T, 0);
  m.targets.assign(std::size_t(B) * T, -1);
  return m;
}

float train_forward(TrainModel& m, const int* inputs, const int* targets) {
  SingleThreadedBlas blas_guard;
  const ModelConfig& c = m.config;
  const int B = m.B, T = m.T, C = c.n_embd, L = c.n_layer, NH = c.n_head, V = c.vocab_size;
  const float eps = c.layer_norm_eps;
  const int BT = B * T;
  const ParameterTensors& p = m.params.t;
  ActivationTensors& a = m.acts;
  std::copy(inputs, inputs + BT, m.inputs.begin());
  std::copy(targets, targets + BT, m.targets.begin());

  // 0. x = wte[inputs] + wpe[0..T)                                       (B, T, C)
  embedding_forward(a.encoded, inputs, p.wte, p.wpe, B, T, C);
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
    float* l_preatt = a.preatt + std::size_t(l) * B * NH * T * T;
    float* l_att = a.att + std::size_t(l) * B * NH * T * T;
    float* l_attproj = a.attproj + l * btc;
    float* l_residual2 = a.residual2 + l * btc;
    // 1. qkv = ln_1(x) @ c_attn^T + b                                    (B, T, 3C)
    layernorm_forward(l_ln1, l_ln1_mean, l_ln1_rstd, residual, ln1w, ln1b, BT, C, eps);
    matmul_forward_pooled(l_qkv, l_ln1, qkvw, qkvb, BT, C, 3 * C);
    // 2. z = attention(qkv): scores, mask, pattern, pattern @ v          (B, T, C)
    attention_forward_parallel(l_atty, l_preatt, l_att, l_qkv, B, T, C, NH);
    // 3. x = x + z @ c_proj^T + b
    matmul_forward_pooled(l_attproj, l_atty, attprojw, attprojb, BT, C, C);
    residual_forward(l_residual2, residual, l_attproj, BT * C);
    residual = l_residual2;
    if (!c.mlp) continue;
    // 4. x = x + c_proj(gelu(c_fc(ln_2(x))))                             (B, T, 4C) inside
    float* l_ln2 = a.ln2 + l * btc;
    float* l_fch = a.fch + l * 4 * btc;
    float* l_fch_gelu = a.fch_gelu + l * 4 * btc;
    float* l_fcproj = a.fcproj + l * btc;
    float* l_residual3 = a.residual3 + l * btc;
    layernorm_forward(l_ln2, a.ln2_mean + l * BT, a.ln2_rstd + l * BT, l_residual2, p.ln2w + l * C,
                      p.ln2b + l * C, BT, C, eps);
    matmul_forward_pooled(l_fch, l_ln2, p.fcw + std::size_t(l) * 4 * C * C, p.fcb + l * 4 * C, BT, C, 4 * C);
    elementwise_pooled(std::size_t(BT) * 4 * C,
                       [&](std::size_t i, std::size_t k) { gelu_forward(l_fch_gelu + i, l_fch + i, int(k)); });
    matmul_forward_pooled(l_fcproj, l_fch_gelu, p.fcprojw + std::size_t(l) * C * 4 * C, p.fcprojb + l * C, BT,
                   4 * C, C);
    residual_forward(l_residual3, l_residual2, l_fcproj, BT * C);
    residual = l_residual3;
  }
  // 5. logits = ln_f(x) @ unembedding^T                                  (B, T, V)
  layernorm_forward(a.lnf, a.lnf_mean, a.lnf_rstd, residual, p.lnfw, p.lnfb, BT, C, eps);
  matmul_forward_pooled(a.logits, a.lnf, parameters_unembedding(p, c), nullptr, BT, C, V);
  // 6. losses = cross-entropy(softmax(logits), targets)                  (B, T)
  cross_entropy_forward(a.losses, a.probs, a.logits, targets, BT, V);
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

void train_zero_grad(TrainModel& m) { fill_zero_pooled(m.grads_memory); }

void train_backward(TrainModel& m) {
  SingleThreadedBlas blas_guard;
  const ModelConfig& c = m.config;
  const int B = m.B, T = m.T, C = c.n_embd, L = c.n_layer, NH = c.n_head, V = c.vocab_size;
  const int BT = B * T;
  const ParameterTensors& p = m.params.t;
  ParameterTensors& g = m.grads;
  const ActivationTensors& a = m.acts;
  ActivationTensors& d = m.dacts;
  // activation gradients accumulate with +=, so they start from zero
  fill_zero_pooled(m.dacts_memory);

  // The forward in reverse: 6, 5, then the layers from last to first (4, 3, 2, 1), then 0.
  // 6. the loss is the mean over scored positions: dlosses = 1 / n
  const float dloss = m.n_targets > 0 ? 1.0f / m.n_targets : 0.0f;
  for (int i = 0; i < BT; ++i) d.losses[i] = m.targets[i] >= 0 ? dloss : 0.0f;
  cross_entropy_backward(d.logits, d.losses, a.probs, m.targets.data(), BT, V);
  // 5. logits = ln_f(x) @ unembedding^T
  float* dunembedding = c.tied ? g.wte : g.lm_head;
  matmul_backward_pooled(d.lnf, dunembedding, nullptr, d.logits, a.lnf, parameters_unembedding(p, c), BT, C, V);
  const std::size_t btc = std::size_t(BT) * C;
  const float* last_residual = c.mlp ? a.residual3 + (L - 1) * btc : a.residual2 + (L - 1) * btc;
  float* dlast_residual = c.mlp ? d.residual3 + (L - 1) * btc : d.residual2 + (L - 1) * btc;
  layernorm_backward(dlast_residual, g.lnfw, g.lnfb, d.lnf, last_residual, p.lnfw, a.lnf_mean, a.lnf_rstd,
                     BT, C);

  for (int l = L - 1; l >= 0; --l) {
    const float* residual = l == 0 ? a.encoded : (c.mlp ? a.residual3 : a.residual2) + (l - 1) * btc;
    float* dresidual = l == 0 ? d.encoded : (c.mlp ? d.residual3 : d.residual2) + (l - 1) * btc;
    if (c.mlp) {
      // 4. x = x + c_proj(gelu(c_fc(ln_2(x))))
      float* dl_residual3 = d.residual3 + l * btc;
      float* dl_fcproj = d.fcproj + l * btc;
      residual_backward(d.residual2 + l * btc, dl_fcproj, dl_residual3, BT * C);
      matmul_backward_pooled(d.fch_gelu + l * 4 * btc, g.fcprojw + std::size_t(l) * C * 4 * C, g.fcprojb + l * C,
                      dl_fcproj, a.fch_gelu + l * 4 * btc, p.fcprojw + std::size_t(l) * C * 4 * C, BT, 4 * C, C);
      {
        float* dfch = d.fch + l * 4 * btc;
        const float* fch = a.fch + l * 4 * btc;
        const float* dfch_gelu = d.fch_gelu + l * 4 * btc;
        elementwise_pooled(std::size_t(BT) * 4 * C, [&](std::size_t i, std::size_t k) {
          gelu_backward(dfch + i, fch + i, dfch_gelu + i, int(k));
        });
      }
      matmul_backward_pooled(d.ln2 + l * btc, g.fcw + std::size_t(l) * 4 * C * C, g.fcb + l * 4 * C,
                      d.fch + l * 4 * btc, a.ln2 + l * btc, p.fcw + std::size_t(l) * 4 * C * C, BT, C, 4 * C);
      layernorm_backward(d.residual2 + l * btc, g.ln2w + l * C, g.ln2b + l * C, d.ln2 + l * btc,
                         a.residual2 + l * btc, p.ln2w + l * C, a.ln2_mean + l * BT, a.ln2_rstd + l * BT, BT, C);
    }
    // 3. x = x + z @ c_proj^T + b
    float* dl_attproj = d.attproj + l * btc;
    residual_backward(dresidual, dl_attproj, d.residual2 + l * btc, BT * C);
    matmul_backward_pooled(d.atty + l * btc, g.attprojw + std::size_t(l) * C * C, g.attprojb + l * C, dl_attproj,
                    a.atty + l * btc, p.attprojw + std::size_t(l) * C * C, BT, C, C);
    // 2. z = attention(qkv)
    const std::size_t tt = std::size_t(B) * NH * T * T;
    attention_backward_parallel(d.qkv + l * 3 * btc, d.preatt + l * tt, d.att + l * tt, d.atty + l * btc,
                                a.qkv + l * 3 * btc, a.att + l * tt, B, T, C, NH);
    // 1. qkv = ln_1(x) @ c_attn^T + b
    matmul_backward_pooled(d.ln1 + l * btc, g.qkvw + std::size_t(l) * 3 * C * C, g.qkvb + l * 3 * C,
                    d.qkv + l * 3 * btc, a.ln1 + l * btc, p.qkvw + std::size_t(l) * 3 * C * C, BT, C, 3 * C);
    layernorm_backward(dresidual, g.ln1w + l * C, g.ln1b + l * C, d.ln1 + l * btc, residual, p.ln1w + l * C,
                       a.ln1_mean + l * BT, a.ln1_rstd + l * BT, BT, C);
  }
  // 0. x = wte[inputs] + wpe
  embedding_backward(g.wte, g.wpe, d.encoded, m.inputs.data(), B, T, C);
}

}  // namespace headlab::train
