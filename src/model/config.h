// model/config.h — the shape of a GPT-2-family transformer, read from and written to
// Hugging Face's config.json.
//
//   Result<ModelConfig> c = config_load("models/tiny/config.json");
//   if (!c) return tl::unexpected(c.error());
//   int HS = c->head_size();                      // n_embd / n_head
//
// One struct describes GPT-2 (pre-LayerNorm blocks with attention + GELU MLP of width
// 4*C) and the attention-only variant (Elhage et al. 2021: `mlp = false`, no ln_2 and
// no MLP). The unembedding is tied to wte (`tied = true`, GPT-2) or a separate lm_head.
#pragma once

#include <string>

#include "util/result.h"

namespace headlab::model {

struct ModelConfig {
  int n_layer = 0;             // L
  int n_head = 0;              // NH
  int n_embd = 0;              // C  (head size HS = C / NH)
  int n_ctx = 0;               // maxT: rows of wpe, the longest input
  int vocab_size = 0;          // V
  bool mlp = true;             // false: attention-only blocks
  bool tied = true;            // true: logits = x @ wte^T; false: a separate lm_head (V, C)
  float layer_norm_eps = 1e-5f;
  int bos_token_id = 50256;    // GPT-2's <|endoftext|> doubles as BOS and EOS
  int eos_token_id = 50256;

  int head_size() const { return n_head > 0 ? n_embd / n_head : 0; }
};

// The GPT-2 small shape (124M): L=12, NH=12, C=768, maxT=1024, V=50257.
ModelConfig config_gpt2_small();

// ok, or an invalid_argument Error naming the field that is wrong (non-positive sizes,
// n_embd not divisible by n_head, token ids outside the vocabulary, eps <= 0).
Status config_validate(const ModelConfig& config);

// Parses config.json text. Accepts HF GPT-2 keys (n_layer, n_head, n_embd, n_positions
// or n_ctx, vocab_size, layer_norm_epsilon, bos/eos_token_id, tie_word_embeddings) and
// headlab's own (headlab_mlp). `what` names the source in error messages.
// Errors: corrupt (not JSON, wrong types), unsupported (model_type not gpt2,
// activation other than gelu_new), invalid_argument (config_validate).
Result<ModelConfig> config_parse(const std::string& json_text, const std::string& what);
Result<ModelConfig> config_load(const std::string& path);  // + not_found, io_error

// The config.json text HF transformers reads back as a GPT2Config.
std::string config_to_json(const ModelConfig& config);
Status config_save(const ModelConfig& config, const std::string& path);

}  // namespace headlab::model
