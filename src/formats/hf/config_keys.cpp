// formats/hf/config_keys.cpp — which keys of a config.json headlab read and what each set in the
// configured block (`headlab info`). The parsers (config.cpp, config_families.cpp) refuse a
// key that changes the maths and is not implemented; the keys left here unread are the ones
// that do not change an inference forward (dropouts, initializer_range, use_cache, ...).
#include <cstdio>
#include <functional>
#include <map>

#include <nlohmann/json.hpp>

#include "formats/hf/config_json.h"
#include "util/json_depth.h"
#include "util/json_error.h"

namespace headlab::model {

namespace {

using json = nlohmann::json;

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

std::string layers_list(const ModelConfig& c) {
  std::string s;
  for (int l = 0; l < c.n_layer; l++)
    if (c.window_of(l) > 0) s += (s.empty() ? "" : ", ") + std::to_string(l);
  return s.empty() ? "none" : s;
}

std::string norm_name(const ModelConfig& c) {
  if (c.norm == ModelConfig::Norm::layernorm) return "LayerNorm eps " + num(c.layer_norm_eps);
  return std::string(c.norm_plus_one ? "RMSNorm (1 + w)" : "RMSNorm") + " eps " + num(c.layer_norm_eps);
}

std::string mlp_name(const ModelConfig& c) {
  switch (c.mlp_kind) {
    case ModelConfig::Mlp::gelu_tanh: return "GELU (tanh)";
    case ModelConfig::Mlp::gelu_erf: return "GELU (erf)";
    case ModelConfig::Mlp::swiglu: return "SwiGLU";
    case ModelConfig::Mlp::geglu: return "GeGLU (tanh GELU gate)";
  }
  return "?";
}

using Effect = std::function<std::string(const ModelConfig&)>;

// What each key sets, from the parsed config.
const std::map<std::string, Effect>& effects() {
  static const std::map<std::string, Effect> kEffects = [] {
    std::map<std::string, Effect> e;
    auto I = [](const char* label, int ModelConfig::*f) {
      return Effect([label, f](const ModelConfig& c) { return std::string(label) + " = " + std::to_string(c.*f); });
    };
    e["model_type"] = [](const ModelConfig& c) { return "family " + c.family; };
    for (const char* k : {"n_layer", "num_hidden_layers"}) e[k] = I("L", &ModelConfig::n_layer);
    for (const char* k : {"n_head", "num_attention_heads"}) e[k] = I("NH", &ModelConfig::n_head);
    for (const char* k : {"n_embd", "hidden_size"}) e[k] = I("C", &ModelConfig::n_embd);
    for (const char* k : {"n_ctx", "n_positions", "max_position_embeddings"}) e[k] = I("maxT (n_ctx)", &ModelConfig::n_ctx);
    e["vocab_size"] = I("V", &ModelConfig::vocab_size);
    e["bos_token_id"] = I("BOS id", &ModelConfig::bos_token_id);
    e["eos_token_id"] = I("EOS id (the first when a list)", &ModelConfig::eos_token_id);
    e["num_key_value_heads"] = [](const ModelConfig& c) { return "NKV = " + std::to_string(c.kv_heads()); };
    e["head_dim"] = [](const ModelConfig& c) { return "HS = " + std::to_string(c.head_size()); };
    for (const char* k : {"intermediate_size", "n_inner"})
      e[k] = [](const ModelConfig& c) { return "F (MLP width) = " + std::to_string(c.mlp_width()); };
    for (const char* k : {"layer_norm_epsilon", "layer_norm_eps", "rms_norm_eps"})
      e[k] = [](const ModelConfig& c) { return norm_name(c); };
    e["tie_word_embeddings"] = [](const ModelConfig& c) {
      return std::string(c.tied ? "tied: logits = x @ wte^T" : "untied: a separate unembedding");
    };
    for (const char* k : {"activation_function", "hidden_act", "hidden_activation"})
      e[k] = [](const ModelConfig& c) { return "MLP " + mlp_name(c); };
    e["scale_attn_weights"] = [](const ModelConfig& c) {
      return std::string(c.scale_attn_weights ? "scores scaled by 1/sqrt(HS)" : "scores not scaled");
    };
    e["scale_attn_by_inverse_layer_idx"] = [](const ModelConfig& c) {
      return std::string(c.scale_attn_by_inverse_layer_idx ? "scores of layer l also / (l + 1)" : "off");
    };
    e["reorder_and_upcast_attn"] = [](const ModelConfig&) { return std::string("kept for the round trip (scores are float32 anyway)"); };
    e["headlab_mlp"] = [](const ModelConfig& c) { return std::string(c.mlp ? "MLP present" : "attention-only"); };
    for (const char* k : {"rope_theta", "rotary_emb_base"})
      e[k] = [](const ModelConfig& c) { return "rotary base theta = " + num(c.rope_theta); };
    for (const char* k : {"rotary_pct", "partial_rotary_factor"})
      e[k] = [](const ModelConfig& c) { return "rotates " + std::to_string(c.rotary_size()) + " of HS = " + std::to_string(c.head_size()) + " channels"; };
    e["rope_scaling"] = [](const ModelConfig& c) {
      if (c.rope_llama3_factor > 0)
        return "llama3: factor " + num(c.rope_llama3_factor) + ", low " + num(c.rope_llama3_low_freq_factor) + ", high " +
               num(c.rope_llama3_high_freq_factor) + ", original context " + std::to_string(c.rope_llama3_original_max_positions);
      if (c.rope_linear_factor != 1.0f)
        return "linear: positions / " + num(c.rope_linear_factor) + (c.rope_local_theta > 0 ? " (global layers)" : "");
      return std::string("none");
    };
    // transformers v5: the rotary base and scaling in one object (flat, or by layer type)
    e["rope_parameters"] = [](const ModelConfig& c) {
      std::string out = "rotary base theta = " + num(c.rope_theta);
      if (c.rope_llama3_factor > 0)
        out += "; llama3 scaling: factor " + num(c.rope_llama3_factor) + ", low " + num(c.rope_llama3_low_freq_factor) +
               ", high " + num(c.rope_llama3_high_freq_factor) + ", original context " +
               std::to_string(c.rope_llama3_original_max_positions);
      else if (c.rope_linear_factor != 1.0f)
        out += "; linear scaling: positions / " + num(c.rope_linear_factor);
      if (c.rope_local_theta > 0) out += "; local layers' base = " + num(c.rope_local_theta);
      return out;
    };
    e["rope_local_base_freq"] = [](const ModelConfig& c) { return "local layers' rotary base = " + num(c.rope_local_theta); };
    e["use_parallel_residual"] = [](const ModelConfig& c) {
      return std::string(c.parallel_residual ? "parallel: x + attn(ln_1 x) + mlp(ln_2 x)" : "sequential");
    };
    e["attention_bias"] = [](const ModelConfig& c) { return std::string(c.qkv_bias ? "q/k/v and output biases" : "no attention biases"); };
    e["mlp_bias"] = [](const ModelConfig& c) { return std::string(c.mlp_bias ? "MLP biases" : "no MLP biases"); };
    for (const char* k : {"sliding_window", "use_sliding_window", "max_window_layers", "sliding_window_pattern", "layer_types"})
      e[k] = [](const ModelConfig& c) {
        return c.sliding_window > 0 ? "window " + std::to_string(c.sliding_window) + " keys on layers " + layers_list(c)
                                    : std::string("no sliding window");
      };
    e["query_pre_attn_scalar"] = [](const ModelConfig& c) { return "scores scaled by 1/sqrt(" + num(c.query_pre_attn_scalar) + ")"; };
    e["attn_logit_softcapping"] = [](const ModelConfig& c) {
      return c.attn_softcap > 0 ? "scores = " + num(c.attn_softcap) + " tanh(scores / " + num(c.attn_softcap) + ")" : std::string("off");
    };
    e["final_logit_softcapping"] = [](const ModelConfig& c) {
      return c.final_softcap > 0 ? "logits = " + num(c.final_softcap) + " tanh(logits / " + num(c.final_softcap) + ")" : std::string("off");
    };
    e["text_config"] = [](const ModelConfig&) { return std::string("the text model (its keys below)"); };
    return e;
  }();
  return kEffects;
}

// Keys reviewed as not changing an inference forward, each with why. A key in neither this list
// nor effects() is unknown: headlab does not read it and says so by name rather than assume it
// harmless (tests/formats/hf/config_keys_test.cpp walks every fixture config against both).
const std::map<std::string, const char*>& not_forward() {
  static const std::map<std::string, const char*> kReviewed = {
      {"architectures", "the transformers class name"},
      {"_name_or_path", "where the file came from"},
      {"transformers_version", "the version that wrote the file"},
      {"torch_dtype", "the dtype the weights were saved in; each tensor's own dtype is read"},
      {"dtype", "the dtype the weights were saved in; each tensor's own dtype is read"},
      {"use_cache", "a generation option (the key/value cache)"},
      {"cache_implementation", "a generation option (the key/value cache)"},
      {"initializer_range", "training only (the initial weights' spread)"},
      {"pretraining_tp", "a tensor-parallel split of the same products"},
      {"pad_token_id", "which id pads a batch; no padding in a forward of one text"},
      {"sep_token_id", "a special token's id"},
      {"decoder_start_token_id", "a special token's id"},
      {"attention_dropout", "dropout: off at inference"},
      {"hidden_dropout", "dropout: off at inference"},
      {"classifier_dropout", "dropout: off at inference (a classification head)"},
      {"resid_pdrop", "dropout: off at inference"},
      {"embd_pdrop", "dropout: off at inference"},
      {"attn_pdrop", "dropout: off at inference"},
      {"summary_type", "GPT-2's classification head, not the language model"},
      {"summary_use_proj", "GPT-2's classification head, not the language model"},
      {"summary_activation", "GPT-2's classification head, not the language model"},
      {"summary_proj_to_labels", "GPT-2's classification head, not the language model"},
      {"summary_first_dropout", "GPT-2's classification head, not the language model"},
      {"task_specific_params", "generation settings for tasks"},
      {"use_return_dict", "how transformers returns outputs"},
      {"output_attentions", "how transformers returns outputs"},
      {"output_hidden_states", "how transformers returns outputs"},
      {"is_decoder", "transformers' bookkeeping; every model here is a decoder"},
      {"model_name", "a name"},
      {"gradient_checkpointing", "training only"},
      {"use_flash_attention", "which attention kernel; the same maths"},
      {"attn_implementation", "which attention kernel; the same maths"},
  };
  return kReviewed;
}

std::string short_value(const json& v) {
  std::string s = v.dump();
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

void add_keys(const json& j, const std::string& prefix, const ModelConfig& c, std::vector<ConfigKeyUse>& out) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    ConfigKeyUse u{prefix + it.key(), short_value(it.value())};
    auto e = effects().find(it.key());
    // Qwen reads sliding_window only with use_sliding_window; the GPT-2 parser reads its own keys only
    const bool gpt2_only = it.key() == "activation_function" || it.key() == "n_layer" || it.key() == "n_head" ||
                           it.key() == "n_embd" || it.key() == "n_ctx" || it.key() == "n_positions" ||
                           it.key() == "layer_norm_epsilon" || it.key() == "n_inner" || it.key() == "scale_attn_weights" ||
                           it.key() == "scale_attn_by_inverse_layer_idx" || it.key() == "reorder_and_upcast_attn" ||
                           it.key() == "headlab_mlp";
    const bool gemma_hidden_act = it.key() == "hidden_act" && c.norm_plus_one;
    if (gemma_hidden_act) {
      u.effect = "not read: Gemma's MLP reads hidden_activation";
    } else if (e != effects().end() && !(gpt2_only && !c.is_gpt2()) && !it.value().is_null()) {
      u.read = true;
      u.effect = e->second(c);
    } else if (it.value().is_null()) {
      u.effect = "null: the default";
      if (e != effects().end()) u.read = true, u.effect = "null: " + e->second(c);
    } else if (c.multimodal_text && prefix.empty() && it.key() != "model_type") {
      u.effect = it.key().find("vision") != std::string::npos || it.key().find("mm_") == 0 || it.key().find("image") != std::string::npos
                     ? "not read: the vision part (headlab runs Gemma 3's text model only)"
                     : "not read: does not change the text model's forward";
    } else if (auto r = not_forward().find(it.key()); r != not_forward().end()) {
      u.effect = std::string("not read: does not change the inference forward (") + r->second + ")";
    } else {
      u.known = false;
      u.effect = "UNKNOWN to headlab: not read; if it changes the model's maths, the numbers are wrong";
    }
    out.push_back(std::move(u));
    if (it.key() == "text_config" && it.value().is_object()) add_keys(it.value(), "text_config.", c, out);
  }
}

}  // namespace

Result<std::vector<ConfigKeyUse>> config_key_uses(const std::string& json_text, const ModelConfig& config) {
  if (auto s = json_depth_check(json_text, "config.json"); !s) return tl::unexpected(s.error());
  json j;
  try {
    j = json::parse(json_text);
  } catch (const json::exception& e) {
    return make_error(ErrorCode::corrupt, std::string("config.json: not valid JSON: ") + json_error_text(e.what()));
  }
  if (!j.is_object()) return make_error(ErrorCode::corrupt, "config.json: expected a JSON object");
  std::vector<ConfigKeyUse> out;
  add_keys(j, "", config, out);
  return out;
}

}  // namespace headlab::model
