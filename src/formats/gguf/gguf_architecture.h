// formats/gguf/gguf_architecture.h — a GGUF file's architecture onto headlab's one configured
// block: general.architecture and its "<arch>.*" keys onto ModelConfig, llama.cpp's tensor
// names (llama-arch.cpp: token_embd, blk.N.attn_q, ...) onto headlab's parameters. Each
// architecture is what llama.cpp's graph for it computes (src/models/<arch>.cpp):
//   gpt2     learned positions, LayerNorm, fused attn_qkv [q; k; v], GELU (tanh)
//   gptneox  LayerNorm, partial NeoX rotary, fused attn_qkv (the converter already put it
//            in [q; k; v] order), GELU, parallel residual
//   llama    RMSNorm, rotary, GQA, SwiGLU. llama.cpp rotates pairs (2i, 2i+1), so its
//            converter permuted the rows of attn_q and attn_k head by head from Hugging
//            Face's halves order; the loader undoes that, so q and k match the HF model's.
//            Llama 3's rope scaling is the tensor rope_freqs.weight: a divisor per frequency
//   qwen2    llama's block with q/k/v biases and NeoX rotary (rows not permuted)
//   qwen3    qwen2's with q/k norm (attn_q_norm, attn_k_norm) and no biases required
//   gemma2   RMSNorm stored as 1 + w (the converter adds 1; the loader takes it off, so the
//            config is the Hugging Face model's), norms after attention and MLP too
//            (post_attention_norm, post_ffw_norm), GeGLU, x * sqrt(C), soft-capping of the
//            scores and the logits, even layers sliding; the scores scaled by 1/sqrt(HS)
//            (1/sqrt(C/NH) for the 46-layer 27B): llama.cpp has no query_pre_attn_scalar key
//   gemma3   gemma2's with q/k norm, no score soft-capping, every 6th layer global
//            (sliding_window_pattern), local layers rotating with rope.freq_base_swa unscaled
// Every other architecture is refused by name, as is any "<arch>.*" key llama.cpp's graph
// reads and headlab does not implement, and any key llama.cpp ignores for that architecture
// but that would change the maths (attention.sliding_window on llama, qwen2, qwen3).
//
//   Result<Parameters> p = gguf::parameters_load(path);   // F16/BF16 kept, quantized types as f32
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "formats/model_description.h"
#include "formats/gguf/gguf_file.h"
#include "formats/gguf/gguf_writer.h"
#include "model/parameters.h"
#include "util/result.h"

namespace headlab::model::gguf {

// The ModelConfig the file's metadata and tensor shapes describe.
// Errors: unsupported (the architecture, a key, a rope scaling type, named), corrupt (a key
// missing or of the wrong type, named; a bad rope_freqs.weight), invalid_argument
// (config_validate).
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

// What parameters_load would make of the file, without reading a weight: the config, each
// metadata key with what it set (keys: "<arch>.*" read, the tokenizer's, the rest described),
// each tensor with its type, the headlab tensor and layer it fills and how (dequantized, rows
// re-paired, 1 + w), and the memory the matrices take under `dtype`. For `headlab info`.
// Errors: those of config_from_file and of parameters_from_file's shape checks.
Result<CheckpointDescription> describe_file(const std::string& path, DtypeChoice dtype = DtypeChoice::keep);

// One tensor as llama.cpp names and shapes it, with its values in llama.cpp's row order
// and convention (Gemma's norms as 1 + w), for the writer.
struct NamedTensor {
  std::string name;
  std::vector<std::int64_t> ne;  // ne[0] fastest
  // Writes its (product of ne) values, read from the model when called: a writer holds one
  // tensor's floats at a time, never the whole model widened (an 8 B model is 32 GB in float32).
  std::function<void(float*)> fill;
  std::vector<float> values() const;  // fill into a vector of its own
};
// The tensors of `params` as gguf::file_write takes them (and rope_freqs.weight for a rope
// scaled per frequency).
// Errors: unsupported (a config llama.cpp's architectures cannot express, named).
Result<std::vector<NamedTensor>> tensors_for_file(const Parameters& params);
// The keys of the architecture ("general.architecture", "<arch>.block_count", ...) for a
// model, checked both ways: the config config_from_file reads back from them and from the
// tensors of tensors_for_file is the model's own in every setting that changes the forward.
// Errors: unsupported (the first setting llama.cpp's architecture cannot express, named with
// the model's value and the one the file would carry).
Result<std::vector<Metadata>> metadata_for_file(const Parameters& params);
// The llama.cpp architecture name of a config: "gpt2", "gptneox", "llama" (also Mistral's),
// "qwen2", "qwen3", "gemma2", "gemma3"; empty if none.
std::string architecture_of(const ModelConfig& config);

}  // namespace headlab::model::gguf
