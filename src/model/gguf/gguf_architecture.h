// model/gguf/gguf_architecture.h — a GGUF file's architecture onto headlab's one configured
// block: general.architecture and its "<arch>.*" keys onto ModelConfig, llama.cpp's tensor
// names (llama-arch.cpp: token_embd, blk.N.attn_q, ...) onto headlab's parameters.
//   gpt2     learned positions, LayerNorm, fused attn_qkv [q; k; v], GELU (tanh)
//   gptneox  LayerNorm, partial NeoX rotary, fused attn_qkv (the converter already put it
//            in [q; k; v] order), GELU, parallel residual
//   llama    RMSNorm, rotary, GQA, SwiGLU. llama.cpp rotates pairs (2i, 2i+1), so its
//            converter permuted the rows of attn_q and attn_k head by head from Hugging
//            Face's halves order; the loader undoes that, so q and k match the HF model's
//   qwen2    llama's block with q/k/v biases and NeoX rotary (rows not permuted)
// qwen3, gemma2, gemma3 and every other architecture are refused by name, as is any
// "<arch>.*" key that changes the maths and is not implemented.
//
//   Result<Parameters> p = gguf::parameters_load(path);   // F16/BF16 kept, quantized types as f32
#pragma once

#include <string>
#include <vector>

#include "model/gguf/gguf_file.h"
#include "model/parameters.h"
#include "util/result.h"

namespace headlab::model::gguf {

// The ModelConfig the file's metadata and tensor shapes describe.
// Errors: unsupported (the architecture, a key, a rope scaling type, named), corrupt (a key
// missing or of the wrong type, named), invalid_argument (config_validate).
Result<ModelConfig> config_from_file(const File& file);

// Every weight into headlab's layout: the matrices packed in their own precision (F32, F16,
// BF16 kept; the quantized types dequantized to f32) or the --dtype asked for, as
// checkpoint_load does (LoadOptions). The shape of each tensor is checked against the config
// before anything is allocated.
// Errors: those of config_from_file; corrupt (a missing tensor, a tensor of the wrong shape,
// a tensor no weight of the config reads, a non-finite weight), unsupported (a weight f16
// cannot hold, not enough memory), each naming the tensor.
Result<Parameters> parameters_from_file(const File& file, const LoadOptions& options = {});

// A model file: file_open and parameters_from_file. Errors: those of both.
Result<Parameters> parameters_load(const std::string& path, const LoadOptions& options = {});

// One tensor as llama.cpp names and shapes it, with its values in llama.cpp's row order
// (for the writer).
struct NamedTensor {
  std::string name;
  std::vector<std::int64_t> ne;  // ne[0] fastest
  std::vector<float> values;
};
// The metadata keys of the architecture ("general.architecture", "<arch>.block_count", ...)
// and the tensors of `params`, as gguf::file_write takes them.
// Errors: unsupported (a config llama.cpp's architectures cannot express, named).
Result<std::vector<NamedTensor>> tensors_for_file(const Parameters& params);
// The llama.cpp architecture name of a config: "gpt2", "gptneox", "llama", "qwen2"; empty if none.
std::string architecture_of(const ModelConfig& config);

}  // namespace headlab::model::gguf
