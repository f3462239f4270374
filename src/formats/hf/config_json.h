// formats/hf/config_json.h — Hugging Face's config.json to and from a ModelConfig
// (model/config.h). GPT-2's keys here; the other families' (model_type gpt_neox, llama,
// mistral, qwen2, qwen3, gemma2, gemma3_text, gemma3) in config_families.cpp; what each key of
// a file did, for `headlab info`, in config_keys.cpp.
//
//   Result<ModelConfig> c = config_load("models/tiny/config.json");
//   Status s = config_save(*c, "out/config.json");   // transformers reads it back
#pragma once

#include <string>
#include <vector>

#include "formats/model_description.h"  // ConfigKeyUse
#include "model/config.h"
#include "util/result.h"

namespace headlab::model {

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

// Parses the config.json of a family other than GPT-2 (model_type gpt_neox, llama, mistral,
// qwen2, qwen3, gemma2, gemma3_text, gemma3) into the configured block (config_families.cpp).
// Errors as config_parse.
Result<ModelConfig> config_parse_family(const std::string& json_text, const std::string& what);

// Every key of `json_text` (the config.json `config` was parsed from) with what it set in
// `config` (config_keys.cpp). Errors: corrupt (not a JSON object).
Result<std::vector<ConfigKeyUse>> config_key_uses(const std::string& json_text, const ModelConfig& config);

}  // namespace headlab::model
