// model/parameters.h — every weight of the model in one float buffer, llm.c style.
//
//   Parameters p = parameters_allocate(config);   // zeros
//   parameters_init_random(p, /*seed=*/1);        // GPT-2's init: N(0, 0.02), ...
//   float* ln1w_of_layer_2 = p.t.ln1w + 2 * C;
//
// The trainer points a gradient struct of the same layout at its own buffer:
//   std::vector<float> grad(parameters_count(config));
//   ParameterTensors d = parameters_point(grad.data(), config);
//
// Matrices are stored (out, in) like llm.c and torch.nn.Linear: y = x @ W^T + b.
// (HF GPT-2's Conv1D stores them (in, out); the checkpoint reader transposes.)
// Tensors that a config does not have (the MLP when mlp = false, lm_head when tied)
// have size 0 and a pointer that must not be read.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "model/config.h"

namespace headlab::model {

inline constexpr int kNumParameterTensors = 22;

// Shapes for GPT-2; other families (model/config.h) use QKV = (NH + 2 NKV) HS rows of q, k,
// v projections, D = NH HS, the MLP width F and FC = F, or 2F for SwiGLU (rows [gate; up]).
// Tensors the config lacks (wpe without learned positions, norm biases with RMSNorm, the
// biases a family has not) have size 0.
struct ParameterTensors {
  float* wte;       // (V, C)        token embedding, also the unembedding when tied
  float* wpe;       // (maxT, C)     position embedding                (learned positions only)
  float* ln1w;      // (L, C)        ln_1 weight
  float* ln1b;      // (L, C)        ln_1 bias                         (LayerNorm only)
  float* qkvw;      // (L, QKV, C)   attn.c_attn weight: rows [q; k; v], head h at h*HS
  float* qkvb;      // (L, QKV)      attn.c_attn bias
  float* attprojw;  // (L, C, D)     attn.c_proj weight (W_O; head h reads columns h*HS..)
  float* attprojb;  // (L, C)        attn.c_proj bias
  float* ln2w;      // (L, C)        ln_2 weight                       (mlp only)
  float* ln2b;      // (L, C)        ln_2 bias                         (mlp only)
  float* fcw;       // (L, FC, C)    mlp.c_fc weight (SwiGLU: [gate; up]) (mlp only)
  float* fcb;       // (L, FC)       mlp.c_fc bias                     (mlp only)
  float* fcprojw;   // (L, C, F)     mlp.c_proj weight                 (mlp only)
  float* fcprojb;   // (L, C)        mlp.c_proj bias                   (mlp only)
  float* lnfw;      // (C)           ln_f weight
  float* lnfb;      // (C)           ln_f bias
  float* lm_head;   // (V, C)        separate unembedding              (untied only)
  float* unused;    // (0)           keeps the count even; always size 0
  // Qwen 3 and Gemma (size 0 for the other families):
  float* qnormw;    // (L, HS)       q_norm weight, the same for every query head   (qk_norm)
  float* knormw;    // (L, HS)       k_norm weight, the same for every KV head      (qk_norm)
  float* postattnw; // (L, C)        the norm of the attention output (Gemma's post_attention_layernorm) (sandwich_norm)
  float* postmlpw;  // (L, C)        the norm of the MLP output (post_feedforward_layernorm)             (sandwich_norm)
};

// The number of floats in each tensor, in ParameterTensors order.
std::array<std::size_t, kNumParameterTensors> parameters_sizes(const ModelConfig& config);
std::size_t parameters_count(const ModelConfig& config);  // sum of the sizes
// The tensors' names in ParameterTensors order ("wte", "qkvw", ...), for messages.
std::string_view parameters_name(int index);

// Points each tensor into `memory` (parameters_count floats) in ParameterTensors order.
ParameterTensors parameters_point(float* memory, const ModelConfig& config);

// A ParameterTensors as an array of pointers, in order, for loops over all tensors.
std::array<float*, kNumParameterTensors> parameters_list(const ParameterTensors& t);

// The unembedding matrix (V, C): wte when tied, lm_head otherwise.
inline const float* parameters_unembedding(const ParameterTensors& t, const ModelConfig& c) {
  return c.tied ? t.wte : t.lm_head;
}

struct PackedWeights;  // model/packed_weights.h

// Owns the weights. Move-only: ParameterTensors points into `memory`.
struct Parameters {
  ModelConfig config;
  std::vector<float> memory;  // (parameters_count(config))
  ParameterTensors t{};
  // The matrices again in the layout of the short-input kernel, made by parameters_pack
  // (checkpoint_load calls it), or null. A copy: changing `memory` does not change it.
  std::shared_ptr<const PackedWeights> packed;

  Parameters() = default;
  Parameters(Parameters&&) noexcept = default;
  Parameters& operator=(Parameters&&) noexcept = default;
  Parameters(const Parameters&) = delete;
  Parameters& operator=(const Parameters&) = delete;
};

// Zero weights of the config's shape (LayerNorm weights zero too). The config must be
// valid (config_validate), or this is a programmer error.
Parameters parameters_allocate(const ModelConfig& config);

// GPT-2's initialisation, deterministic in `seed`: weights N(0, 0.02), residual
// projections (attprojw, fcprojw) N(0, 0.02/sqrt(2L)), biases 0, LayerNorm weights 1.
void parameters_init_random(Parameters& p, std::uint64_t seed);

// The first non-finite weight as "qkvw[123]" or an empty string if all are finite.
std::string parameters_find_nonfinite(const Parameters& p);

}  // namespace headlab::model
