// model/config.cpp — ModelConfig's checks and GPT-2 small's shape (config.json: formats/hf/config_json.cpp).
#include "model/config.h"

#include <cmath>

namespace headlab::model {

float ModelConfig::attention_scale(int layer) const {
  // Gemma scales by query_pre_attn_scalar^-0.5, which need not be HS (Gemma 2 27B: C / NH)
  const float d = query_pre_attn_scalar > 0.0f ? query_pre_attn_scalar : static_cast<float>(head_size());
  float scale = scale_attn_weights ? 1.0f / std::sqrt(d) : 1.0f;
  if (scale_attn_by_inverse_layer_idx) scale /= static_cast<float>(layer + 1);
  return scale;
}

std::string config_untrainable_keys(const ModelConfig& c) {
  std::string keys;
  auto add = [&](const char* key) { keys += (keys.empty() ? "" : ", ") + std::string(key); };
  if (!c.scale_attn_weights) add("scale_attn_weights: false");
  if (c.scale_attn_by_inverse_layer_idx) add("scale_attn_by_inverse_layer_idx: true");
  return keys;
}

Status config_check_tokenizer(const ModelConfig& c, int tokenizer_size, const std::string& where) {
  if (tokenizer_size <= c.vocab_size) return {};
  return make_error(ErrorCode::invalid_argument,
                    where + ": the tokenizer has " + std::to_string(tokenizer_size) + " tokens but config.json's vocab_size is " +
                        std::to_string(c.vocab_size) + ": ids " + std::to_string(c.vocab_size) + " and above would have no "
                        "embedding (is the tokenizer this model's?)");
}

ModelConfig config_gpt2_small() {
  ModelConfig c;
  c.n_layer = 12;
  c.n_head = 12;
  c.n_embd = 768;
  c.n_ctx = 1024;
  c.vocab_size = 50257;
  return c;
}

Status config_validate(const ModelConfig& c) {
  auto bad = [](const std::string& m) { return make_error(ErrorCode::invalid_argument, "config: " + m); };
  if (c.n_layer <= 0) return bad("n_layer must be positive, got " + std::to_string(c.n_layer));
  if (c.n_head <= 0) return bad("n_head must be positive, got " + std::to_string(c.n_head));
  if (c.n_embd <= 0) return bad("n_embd must be positive, got " + std::to_string(c.n_embd));
  if (!c.sliding_layers.empty() && int(c.sliding_layers.size()) != c.n_layer)
    return bad("the list of sliding layers has " + std::to_string(c.sliding_layers.size()) + " entries for " +
               std::to_string(c.n_layer) + " layers");
  if (c.head_dim < 0 || c.n_kv_head < 0 || c.d_mlp < 0 || c.rotary_dim < 0 || c.sliding_window < 0)
    return bad("head_dim, num_key_value_heads, intermediate_size, rotary_dim and sliding_window must not be negative");
  if (c.n_head > 1024 || c.kv_heads() > c.n_head || c.n_head % c.kv_heads() != 0)
    return bad("n_head (" + std::to_string(c.n_head) + ") must be a multiple of the KV heads (" +
               std::to_string(c.kv_heads()) + ")");
  if (c.head_dim > 4096 || c.d_mlp > 1 << 20) return bad("head_dim or intermediate_size is implausibly large");
  if (c.rotary_size() % 2 != 0 || c.rotary_size() > c.head_size())
    return bad("the rotary channels (" + std::to_string(c.rotary_size()) + ") must be even and at most the head size (" +
               std::to_string(c.head_size()) + ")");
  if (!c.rope_freq_factors.empty()) {
    if (int(c.rope_freq_factors.size()) * 2 != c.rotary_size())
      return bad("rope_freq_factors has " + std::to_string(c.rope_freq_factors.size()) +
                 " entries; the rotary channels need one per pair (" + std::to_string(c.rotary_size() / 2) + ")");
    for (float f : c.rope_freq_factors)
      if (!(f > 0.0f) || !std::isfinite(f)) return bad("rope_freq_factors must be positive finite numbers");
  }
  if (c.head_dim == 0 && c.n_embd % c.n_head != 0)
    return bad("n_embd (" + std::to_string(c.n_embd) + ") must be divisible by n_head (" +
               std::to_string(c.n_head) + ")");
  if (c.n_ctx <= 0) return bad("n_positions/n_ctx must be positive, got " + std::to_string(c.n_ctx));
  if (c.vocab_size <= 0) return bad("vocab_size must be positive, got " + std::to_string(c.vocab_size));
  // Guards against sizes that overflow the buffers (a lying config.json).
  if (c.n_layer > 1024 || c.n_head > 1024 || c.n_embd > 65536 || c.n_ctx > 1 << 20 || c.vocab_size > 1 << 22)
    return bad("a size is implausibly large (n_layer <= 1024, n_head <= 1024, n_embd <= 65536, "
               "n_ctx <= 1048576, vocab_size <= 4194304)");
  if (!(c.layer_norm_eps > 0.0f)) return bad("layer_norm_epsilon must be positive");
  if (c.bos_token_id < 0 || c.bos_token_id >= c.vocab_size)
    return bad("bos_token_id " + std::to_string(c.bos_token_id) + " is outside the vocabulary [0, " +
               std::to_string(c.vocab_size) + ")");
  if (c.eos_token_id < 0 || c.eos_token_id >= c.vocab_size)
    return bad("eos_token_id " + std::to_string(c.eos_token_id) + " is outside the vocabulary [0, " +
               std::to_string(c.vocab_size) + ")");
  return {};
}

}  // namespace headlab::model
