// model/config.h — the shape of a transformer of any family headlab runs: what a model is.
// Hugging Face's config.json is read into it and written from it in formats/hf/config_json.h.
//
//   Result<ModelConfig> c = formats::config_load("models/tiny/config.json");
//   if (!c) return tl::unexpected(c.error());
//   int HS = c->head_size();                      // n_embd / n_head
//
// One struct describes GPT-2 (pre-LayerNorm blocks with attention + GELU MLP of width
// 4*C) and the attention-only variant (Elhage et al. 2021: `mlp = false`, no ln_2 and
// no MLP). The unembedding is tied to wte (`tied = true`, GPT-2) or a separate lm_head.
//
// The same struct configures the one block of the other families (TransformerLens's
// HookedTransformerConfig): which positions (learned, rotary, none), which norm, which MLP,
// how many KV heads, biases, parallel attention + MLP, the head size. Its defaults are
// GPT-2's, so a GPT-2 config sets none of them. config_families.cpp reads them from the
// config.json of gpt_neox (Pythia), llama, mistral, qwen2, qwen3, gemma2 and gemma3.
#pragma once

#include <string>
#include <vector>

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
  // (with query_pre_attn_scalar set, Gemma's, 1/sqrt(query_pre_attn_scalar) instead of 1/sqrt(HS))
  bool scale_attn_weights = true;
  bool scale_attn_by_inverse_layer_idx = false;
  // Hugging Face computes the scores in float32 with the scale applied inside the product
  // (baddbmm's alpha) instead of dividing a half-precision product afterwards. headlab's
  // engine always does that (sgemm with alpha = the scale, all float32), so the switch is
  // kept for the round trip and changes nothing in headlab's numbers.
  bool reorder_and_upcast_attn = false;

  // ---- the configured block (defaults: GPT-2) ----
  // config.json's model_type: gpt2, gpt_neox, llama, mistral, qwen2, qwen3, gemma2, gemma3_text
  // (gemma3, a multimodal config, reads its text_config and is "gemma3" here)
  std::string family = "gpt2";
  enum class Positions { learned, rotary, none };
  enum class Norm { layernorm, rmsnorm };                 // rmsnorm has no bias
  enum class Mlp { gelu_tanh, gelu_erf, swiglu, geglu };  // swiglu: down(silu(gate(x)) * up(x));
                                                          // geglu: down(gelu_tanh(gate(x)) * up(x))
  Positions positions = Positions::learned;
  int rotary_dim = 0;               // rotated channels of each head (even, <= HS); 0 = HS
  bool rotary_interleaved = false;  // false: NeoX halves (i, i + d/2); true: GPT-J pairs (2i, 2i+1)
  float rope_theta = 10000.0f;      // base of the rotary frequencies theta^(-2i/d)
  float rope_linear_factor = 1.0f;  // rope_scaling {"type": "linear"}: positions divided by it
  Norm norm = Norm::layernorm;
  Mlp mlp_kind = Mlp::gelu_tanh;
  int n_kv_head = 0;      // KV heads (NKV); 0 = n_head (MHA). Query head h reads KV head h / (NH / NKV)
  int head_dim = 0;       // HS; 0 = n_embd / n_head
  int d_mlp = 0;          // the MLP's hidden width F; 0 = 4 * n_embd
  bool qkv_bias = true;        // q, k, v projections have biases
  bool attn_out_bias = true;   // the attention output projection has a bias
  bool mlp_bias = true;        // the MLP's projections have biases
  bool parallel_residual = false;  // x + attn(ln_1(x)) + mlp(ln_2(x)) (GPT-NeoX)
  // Sliding-window attention, another mask: query t of a sliding layer sees keys t2 with
  // t - t2 < sliding_window (itself and the sliding_window - 1 before it). 0 = none.
  int sliding_window = 0;
  // (L) which layers slide: 1 sliding, 0 global. Empty: every layer when sliding_window > 0.
  std::vector<unsigned char> sliding_layers;

  // ---- added for Llama 3, Qwen 3, Gemma 2 and Gemma 3 (defaults: off) ----
  // rope_scaling {"rope_type": "llama3"}: each rotary frequency f (wavelength w = 2 pi / f) is
  //   w < orig / high: kept;  w > orig / low: f / factor;  else mixed by
  //   s = (orig / w - low) / (high - low):  (1 - s) f / factor + s f.     0 = not llama3
  float rope_llama3_factor = 0.0f;
  float rope_llama3_low_freq_factor = 1.0f;
  float rope_llama3_high_freq_factor = 4.0f;
  int rope_llama3_original_max_positions = 8192;
  // llama.cpp's rope_freqs.weight (how a GGUF file stores Llama 3's scaling): one divisor per
  // rotary frequency of the global layers, f_i / rope_freq_factors[i].   (rotary_size / 2)
  // Empty = none. Applied after rope_llama3_* (a config sets one or the other).
  std::vector<float> rope_freq_factors;
  // Gemma 3: the sliding (local) layers rotate with this base and without rope_scaling;
  // rope_theta and the scaling are the global layers'. 0 = every layer uses rope_theta.
  float rope_local_theta = 0.0f;
  bool qk_norm = false;         // Qwen 3, Gemma 3: RMSNorm over each head of q and of k, before the rotation
  bool norm_plus_one = false;   // Gemma: every RMSNorm multiplies by (1 + w) instead of w
  bool sandwich_norm = false;   // Gemma 2/3: a norm on the attention output and on the MLP output too
  bool embed_scale = false;     // Gemma: x = wte[ids] * sqrt(C)
  float attn_softcap = 0.0f;    // Gemma 2: scores = cap * tanh(scores / cap) before the mask (0 = off)
  float final_softcap = 0.0f;   // Gemma 2: logits = cap * tanh(logits / cap) (0 = off)
  float query_pre_attn_scalar = 0.0f;  // Gemma: scores scaled by 1/sqrt(this) instead of 1/sqrt(HS) (0 = HS)
  // Gemma 3's multimodal checkpoint (model_type gemma3): the text model, read from text_config
  // and from the tensors under language_model; the vision tower's tensors are not loaded.
  bool multimodal_text = false;

  bool is_gpt2() const { return family == "gpt2"; }
  // Whether a text gets bos_token_id put first unless the caller says otherwise (TransformerLens's
  // default_prepend_bos): off for GPT-NeoX and Qwen 2/3, whose own tokenizers never add one;
  // on for GPT-2, Llama, Mistral and Gemma (their heads park on the first token).
  bool default_prepend_bos() const { return family != "gpt_neox" && family != "qwen2" && family != "qwen3"; }
  int head_size() const { return head_dim > 0 ? head_dim : (n_head > 0 ? n_embd / n_head : 0); }
  int kv_heads() const { return n_kv_head > 0 ? n_kv_head : n_head; }
  int kv_head_of(int query_head) const { return query_head / (n_head / kv_heads()); }
  int q_width() const { return n_head * head_size(); }                 // D = NH * HS
  int qkv_width() const { return (n_head + 2 * kv_heads()) * head_size(); }  // q, k, v rows of qkvw
  int mlp_width() const { return d_mlp > 0 ? d_mlp : 4 * n_embd; }     // F
  bool gated() const { return mlp_kind == Mlp::swiglu || mlp_kind == Mlp::geglu; }  // a gated MLP: [gate; up]
  int fc_width() const { return gated() ? 2 * mlp_width() : mlp_width(); }  // gate and up stacked
  int rotary_size() const { return positions != Positions::rotary ? 0 : (rotary_dim > 0 ? rotary_dim : head_size()); }
  // The keys a query of layer `layer` sees back from itself (sliding_window), or 0 for all.
  int window_of(int layer) const {
    if (sliding_window <= 0) return 0;
    if (sliding_layers.empty()) return sliding_window;
    return layer >= 0 && layer < int(sliding_layers.size()) && sliding_layers[layer] ? sliding_window : 0;
  }
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

}  // namespace headlab::model
