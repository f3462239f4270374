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
  // How the attention scores are scaled (GPT2Config's switches of the same names):
  //   scores = q.k * attention_scale(layer),
  //   attention_scale(l) = (scale_attn_weights ? 1/sqrt(HS) : 1) * (scale_attn_by_inverse_layer_idx ? 1/(l+1) : 1)
  bool scale_attn_weights = true;
  bool scale_attn_by_inverse_layer_idx = false;
  // Hugging Face computes the scores in float32 with the scale applied inside the product
  // (baddbmm's alpha) instead of dividing a half-precision product afterwards. headlab's
  // engine always does that (sgemm with alpha = the scale, all float32), so the switch is
  // kept for the round trip and changes nothing in headlab's numbers.
  bool reorder_and_upcast_attn = false;

  int head_size() const { return n_head > 0 ? n_embd / n_head : 0; }
  // The factor the scores q.k of layer `layer` are multiplied by (see above).
  float attention_scale(int layer) const;
};

// ok when a tokenizer of `tokenizer_size` tokens fits the model: every id it can produce
// has a row in wte (tokenizer_size <= vocab_size; a larger vocab_size, padded as many
// GPT-2 ports are, is fine). Errors: invalid_argument saying both sizes, `where` first.
Status config_check_tokenizer(const ModelConfig& config, int tokenizer_size, const std::string& where);

// The names of the config's settings a training run cannot honour (its backward scales
// the scores by 1/sqrt(HS) only), comma-separated; empty when the config trains as it runs.
std::string config_untrainable_keys(const ModelConfig& config);

// The GPT-2 small shape (124M): L=12, NH=12, C=768, maxT=1024, V=50257.
ModelConfig config_gpt2_small();

// ok, or an invalid_argument Error naming the field that is wrong (non-positive sizes,
// n_embd not divisible by n_head, token ids outside the vocabulary, eps <= 0).
Status config_validate(const ModelConfig& config);

// Parses config.json text. Honours HF GPT-2 keys (n_layer, n_head, n_embd, n_positions
// or n_ctx, vocab_size, layer_norm_epsilon, bos/eos_token_id, tie_word_embeddings,
// scale_attn_weights, scale_attn_by_inverse_layer_idx, reorder_and_upcast_attn), GPT2Config's
// attribute_map aliases (hidden_size, num_attention_heads, num_hidden_layers,
// max_position_embeddings), and headlab's own (headlab_mlp). Keys that would change the
// forward in a way headlab does not implement are refused by name; keys that do not change
// an inference forward (dropouts, initializer_range, use_cache, summary_*) are ignored.
// `what` names the source in error messages.
// Errors: corrupt (not JSON, wrong types, an alias that disagrees with GPT-2's own key),
// unsupported (model_type not gpt2, activation other than gelu_new, n_inner other than
// 4 * n_embd, add_cross_attention, is_encoder_decoder, pruned_heads), invalid_argument
// (config_validate).
Result<ModelConfig> config_parse(const std::string& json_text, const std::string& what);
Result<ModelConfig> config_load(const std::string& path);  // + not_found, io_error

// The config.json text HF transformers reads back as a GPT2Config.
std::string config_to_json(const ModelConfig& config);
Status config_save(const ModelConfig& config, const std::string& path);

}  // namespace headlab::model
