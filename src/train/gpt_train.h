// train/gpt_train.h — the model as the trainer sees it: a forward over a batch that keeps
// every activation, and the backward that walks the same steps in reverse (llm.c's
// gpt2_forward / gpt2_backward), built from the engine's ops (model/ops/*).
//
//   Result<TrainModel> m = train_model_create(config, /*B=*/16, /*T=*/128);
//   model::parameters_init_random(m->params, seed);
//   float loss = train_forward(*m, inputs, targets);   // (B, T) each
//   train_zero_grad(*m);
//   train_backward(*m);                                 // m->grads now holds dloss/dparams
//
// The loss is the mean cross-entropy over the positions whose target is not -1.
#pragma once

#include <array>
#include <cstddef>
#include <vector>

#include "model/config.h"
#include "model/parameters.h"
#include "train/rotary.h"
#include "util/result.h"

namespace headlab::train {

inline constexpr int kNumActivationTensors = 22;

// Every intermediate value of the forward, per layer where it has one (llm.c's layout).
// For an attention-only config the MLP tensors (ln2 .. residual3) have size 0, and the
// layer's output is residual2.
struct ActivationTensors {
  float* encoded;    // (B, T, C)        wte[x] + wpe (rotary or no positions: wte[x])
  float* ln1;        // (L, B, T, C)
  float* ln1_mean;   // (L, B, T)
  float* ln1_rstd;   // (L, B, T)
  float* qkv;        // (L, B, T, 3*C)   rotary: q and k after the rotation
  float* atty;       // (L, B, T, C)     z: the heads' outputs side by side
  float* att;        // (L, B, NH, T, T) pattern, its causal half (attention_head_forward)
  float* attproj;    // (L, B, T, C)     z @ c_proj^T + b
  float* residual2;  // (L, B, T, C)     residual + attproj
  float* ln2;        // (L, B, T, C)     (mlp only)
  float* ln2_mean;   // (L, B, T)        (mlp only)
  float* ln2_rstd;   // (L, B, T)        (mlp only)
  float* fch;        // (L, B, T, 4*C)   (mlp only)
  float* fch_gelu;   // (L, B, T, 4*C)   (mlp only)
  float* fcproj;     // (L, B, T, C)     (mlp only)
  float* residual3;  // (L, B, T, C)     (mlp only) residual2 + fcproj
  float* lnf;        // (B, T, C)
  float* lnf_mean;   // (B, T)
  float* lnf_rstd;   // (B, T)
  float* logits;     // (B, T, V)
  float* probs;      // (B, T, V)
  float* losses;     // (B, T)
};

// Sizes of the tensors above; `gradients` gives the sizes of their gradients, where att
// and probs have none (size 0).
std::array<std::size_t, kNumActivationTensors> activations_sizes(const model::ModelConfig& c, int B, int T,
                                                                 bool gradients);

struct TrainModel {
  model::ModelConfig config;
  int B = 0, T = 0;
  model::Parameters params;
  std::vector<float> grads_memory;  // (parameters_count)
  model::ParameterTensors grads{};
  std::vector<float> acts_memory;
  ActivationTensors acts{};
  std::vector<float> dacts_memory;  // gradients of the activations, same layout
  ActivationTensors dacts{};        // (no att, no probs)
  std::vector<float> attention_scratch;  // per thread: dpattern of one block of queries
  RotaryTable rotary;        // rotary positions: cos and sin of (T, rotary_dim / 2); else empty
  std::vector<int> inputs;   // (B, T) of the last forward
  std::vector<int> targets;  // (B, T)
  float mean_loss = 0.0f;    // of the last forward
  int n_targets = 0;         // positions that counted in it

  TrainModel() = default;
  TrainModel(TrainModel&&) noexcept = default;
  TrainModel& operator=(TrainModel&&) noexcept = default;
};

// Bytes the model needs for (B, T): weights, gradients, AdamW's two moments, activations
// and their gradients.
std::size_t train_memory_bytes(const model::ModelConfig& config, int B, int T);

// Allocates a model of the config (zero weights) for batches of (B, T). Positions may be
// learned (wpe), rotary (NeoX halves, any rotary_dim and rope_theta) or none.
// Errors: invalid_argument (config_validate, B or T < 1, T > n_ctx), unsupported (a family
// other than GPT-2, GPT-J's interleaved rotary pairs, rope scaling, scores not scaled by
// 1/sqrt(HS)), too_long when
// train_memory_bytes exceeds max_bytes (the message gives both in MiB).
Result<TrainModel> train_model_create(const model::ModelConfig& config, int B, int T,
                                      std::size_t max_bytes = std::size_t(16) << 30);

// Runs the forward on inputs/targets (B, T) (targets -1 are not scored) and returns the
// mean loss. Ids must be in [0, V): the caller validates data (the trainer's data does).
float train_forward(TrainModel& m, const int* inputs, const int* targets);
void train_zero_grad(TrainModel& m);
// Adds dloss/dparams of the last forward to m.grads.
void train_backward(TrainModel& m);

}  // namespace headlab::train
