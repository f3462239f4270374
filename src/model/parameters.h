// model/parameters.h — every weight of the model, llm.c style: the float32 tensors in one
// buffer, and the matrices either there too (rows, what the trainer changes) or packed once in
// their own precision (what a loaded model runs on, packed_weights.h).
//
//   Parameters p = parameters_allocate(config);   // zeros, every tensor float32 in p.memory
//   parameters_init_random(p, /*seed=*/1);        // GPT-2's init: N(0, 0.02), ...
//   float* ln1w_of_layer_2 = p.t.ln1w + 2 * C;
//
// The trainer points a gradient struct of the same layout at its own buffer:
//   std::vector<float> grad(parameters_count(config));
//   ParameterTensors d = parameters_point(grad.data(), config);
//
// A loaded model (checkpoint_load) keeps its matrices — wte, c_attn, c_proj, c_fc, mlp
// c_proj, lm_head — only in p.packed, each in its file's precision or the --dtype asked for;
// their pointers in p.t are null, and one accessor reads them as float32 rows wherever they are:
//   std::vector<float> wo(std::size_t(C) * D);
//   parameters_read_rows(p, &ParameterTensors::attprojw, layer, 0, C, wo.data());   // (C, D)
// The vectors (norms, biases) and wpe are float32 in p.memory in both cases.
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
#include <string>
#include <string_view>
#include <vector>

#include "model/config.h"
#include "model/packed_weights.h"
#include "model/weight_type.h"

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
// The index of a member of ParameterTensors in its order (&ParameterTensors::qkvw -> 4).
int parameters_index(float* ParameterTensors::*tensor);

// The matrices: wte, qkvw, attprojw, fcw, fcprojw, lm_head (the products' weights, kept in
// panels by a loaded model). Everything else is a vector or wpe, always float32 in memory.
bool parameters_is_matrix(int index);
// (rows, cols) of one layer's slice of matrix `index`: wte and lm_head (V, C) (one "layer"),
// qkvw (QKV, C), attprojw (C, D), fcw (FC, C), fcprojw (C, F).
std::array<int, 2> parameters_matrix_shape(const ModelConfig& config, int index);

// Points each tensor into `memory` in ParameterTensors order: parameters_count floats, or,
// with matrices = false, the sizes of the other tensors only (the matrices' pointers null).
ParameterTensors parameters_point(float* memory, const ModelConfig& config, bool matrices = true);

// A ParameterTensors as an array of pointers, in order, for loops over all tensors.
std::array<float*, kNumParameterTensors> parameters_list(const ParameterTensors& t);

// The unembedding matrix (V, C): wte when tied, lm_head otherwise. Null for a packed model:
// read it with parameters_read_rows(p, parameters_unembedding_tensor(c), ...).
inline const float* parameters_unembedding(const ParameterTensors& t, const ModelConfig& c) {
  return c.tied ? t.wte : t.lm_head;
}
inline float* ParameterTensors::*parameters_unembedding_tensor(const ModelConfig& c) {
  return c.tied ? &ParameterTensors::wte : &ParameterTensors::lm_head;
}

// Owns the weights. Move-only: ParameterTensors points into `memory`.
struct Parameters {
  ModelConfig config;
  std::vector<float> memory;  // every float32 tensor: all of them, or all but the matrices when packed
  ParameterTensors t{};       // into memory; null for each matrix when packed
  // The matrices in panels, each in its own precision (packed_weights.h), or null: every
  // tensor is float32 rows in `memory` (parameters_allocate, the trainer).
  std::shared_ptr<PackedWeights> packed;
  // The loader rounded some matrix to a narrower type than the file's (--dtype bf16 or f16).
  bool rounded = false;
  // What the loader wants the user told, one sentence each (a weights cache it wrote, could not
  // use or could not write: formats/weights_cache.h). The CLI prints them as notes.
  std::vector<std::string> notes;

  Parameters() = default;
  Parameters(Parameters&&) noexcept = default;
  Parameters& operator=(Parameters&&) noexcept = default;
  Parameters(const Parameters&) = delete;
  Parameters& operator=(const Parameters&) = delete;
};

// The type each matrix is kept in, by tensor index (entries of non-matrices are not read).
using MatrixTypes = std::array<WeightType, kNumParameterTensors>;
MatrixTypes matrix_types_all(WeightType t);

// How a loader (checkpoint_load, gguf::parameters_load) keeps the weights.
struct LoadOptions {
  // --dtype: the type the matrices are kept in (weight_type.h). keep: each matrix in its
  // file's type (F32, BF16, F16; F64 and GGUF's quantized types become f32); f32 widens; bf16
  // and f16 round. Norms, biases and wpe are float32 whatever the choice.
  DtypeChoice dtype = DtypeChoice::keep;
  // --compute: bf16 rounds the inputs of the products with bf16 matrices (weight_type.h).
  ComputeChoice compute = ComputeChoice::f32;
  // true: every tensor float32 rows in Parameters::memory and nothing packed (the trainer,
  // which changes the weights); the dtype must then be keep or f32.
  bool rows = false;
  // Keep the packed weights in a cache file beside the model and map it on the next load
  // (formats/weights_cache.h; model_load only, never with rows). Off by default: a test or a
  // tool that loads a model must not write beside it unasked; `run`, `scan` and `serve` ask.
  bool cache = false;
  // Models whose weights take less memory than this load from their files in well under a
  // second: no cache is written beside them (the built-in models, the test fixtures).
  std::uint64_t cache_min_bytes = std::uint64_t(256) << 20;
};

// Zero weights of the config's shape (LayerNorm weights zero too), every tensor float32 rows.
// The config must be valid (config_validate), or this is a programmer error.
Parameters parameters_allocate(const ModelConfig& config);
// Quantized matrices (a GGUF file's blocks, kept by --dtype auto): bands[index][layer] are the
// bands of rows of that matrix (packed_weights.h); an empty or missing entry keeps the matrix in
// `types`' float type.
struct MatrixBands {
  std::array<std::vector<std::vector<RowBand>>, kNumParameterTensors> bands;
  const std::vector<RowBand>* find(int index, int layer) const;  // null: not quantized
  bool empty() const;  // no matrix quantized
};

// Zero weights with the matrices packed in `types` (or quantized as `bands` say; their blocks
// are not cleared: the loader writes every row). Throws std::bad_alloc when the machine cannot
// hold them (the loaders turn that into a message saying how much is needed).
Parameters parameters_allocate_packed(const ModelConfig& config, const MatrixTypes& types,
                                      const MatrixBands* bands = nullptr);
// The bytes of the weights so kept: the vectors and each matrix (parameters_bytes of the result).
std::uint64_t parameters_packed_bytes(const ModelConfig& config, const MatrixTypes& types, const MatrixBands* bands);

// A packed-weights cache (formats/weights_cache.h) stores what a loaded model is made of: the
// vectors (parameters_vector_count floats, ParameterTensors order without the matrices) and the
// block of panels (parameters_packed_block_bytes, each matrix where parameters_allocate_packed
// puts it). parameters_from_packed_block makes Parameters whose matrices point into `block`
// (64-byte aligned, that many bytes; kept alive by the shared_ptr: a file mapping's owner) and
// copies the vectors. The panels are read as they are: nothing checks their values.
std::size_t parameters_vector_count(const ModelConfig& config);
std::size_t parameters_packed_block_bytes(const ModelConfig& config, const MatrixTypes& types);
Parameters parameters_from_packed_block(const ModelConfig& config, const MatrixTypes& types,
                                        std::shared_ptr<unsigned char> block, const float* vectors);

// Writes `count` values into tensor `index` from flat offset `offset` of its (out, in)
// row-major layout, wherever it is kept (rounded to a packed matrix's type; not a quantized
// matrix, whose blocks parameters_write_blocks copies). Returns the
// position in `values` of the first value that type cannot hold (f16 beyond ±65504), or -1.
std::int64_t parameters_write(Parameters& p, int index, std::size_t offset, const float* values, std::size_t count);
// Copies rows [row0, row0 + n) of layer `layer`'s slice of quantized matrix `index` from
// `blocks` (as the GGUF file stores them; the rows lie in one band).
void parameters_write_blocks(Parameters& p, int index, int layer, int row0, int n, const unsigned char* blocks);
// Whether some matrix of p is kept in quantized blocks.
bool parameters_quantized(const Parameters& p);
// Reads `count` values of tensor `index` from flat offset `offset`, as float32 (exactly).
void parameters_read(const Parameters& p, int index, std::size_t offset, std::size_t count, float* out);
// Rows [row0, row0 + n) of layer `layer`'s slice of a matrix (parameters_matrix_shape; wte
// and lm_head have layer 0) into out (n, cols), as float32, packed or not.
void parameters_read_rows(const Parameters& p, float* ParameterTensors::*tensor, int layer, int row0, int n, float* out);
// A whole tensor as float32 (for tests and the writers).
std::vector<float> parameters_tensor(const Parameters& p, int index);
// Every tensor as float32, in ParameterTensors order: what `memory` holds in the rows layout
// (so two models compare equal however each keeps its matrices).
std::vector<float> parameters_to_rows(const Parameters& p);

// The type matrix `index` is kept in (f32 when it is in memory).
WeightType parameters_matrix_type(const Parameters& p, int index);
// The bytes the weights take: memory's floats and the packed matrices.
std::uint64_t parameters_bytes(const Parameters& p);

// From rows to panels: each matrix packed in `choice`'s type (keep: f32), the rows freed.
// Returns false (and leaves p as it was) when a value does not fit f16, naming nothing:
// the loaders check before. Throws std::bad_alloc when the panels do not fit in memory.
bool parameters_pack(Parameters& p, DtypeChoice choice = DtypeChoice::keep);
// --compute: marks every bf16 matrix's products to round their inputs (bf16), or every
// quantized matrix's whose blocks the 8-bit kernels take (q8: ops/matmul_quant_q8.h), or none
// (f32). Returns how many matrices it marked (0: the model keeps none of those, nothing changes).
int parameters_set_compute(Parameters& p, ComputeChoice choice);
// Whether some product of p rounds its inputs to bfloat16.
bool parameters_rounds_inputs(const Parameters& p);
// Whether p keeps some matrix in bfloat16 (what --compute bf16 would round the inputs of).
bool parameters_keeps_bf16(const Parameters& p);
// Whether some product of p rounds its inputs to 8 bits (--compute q8).
bool parameters_quantizes_inputs(const Parameters& p);
// From panels back to float32 rows (for code that changes weights), the panels freed.
void parameters_unpack(Parameters& p);

// GPT-2's initialisation, deterministic in `seed`: weights N(0, 0.02), residual
// projections (attprojw, fcprojw) N(0, 0.02/sqrt(2L)), biases 0, LayerNorm weights 1.
// Rows only (p.packed null).
void parameters_init_random(Parameters& p, std::uint64_t seed);

// The first non-finite weight as "qkvw[123]" or an empty string if all are finite.
std::string parameters_find_nonfinite(const Parameters& p);

}  // namespace headlab::model
