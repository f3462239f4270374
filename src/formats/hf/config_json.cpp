// formats/hf/config_json.cpp — GPT-2's config.json to and from a ModelConfig (config_json.h).
#include "formats/hf/config_json.h"

#include <cmath>
#include <cstdint>

#include <nlohmann/json.hpp>

#include "util/file.h"
#include "util/json_depth.h"
#include "util/json_error.h"

namespace headlab::model {

Result<ModelConfig> config_parse(const std::string& json_text, const std::string& what) {
  if (auto s = json_depth_check(json_text, what); !s) return tl::unexpected(s.error());
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::exception& e) {
    return make_error(ErrorCode::corrupt, what + ": not valid JSON: " + json_error_text(e.what()));
  }
  if (!j.is_object()) return make_error(ErrorCode::corrupt, what + ": expected a JSON object");
  ModelConfig c;
  // GPT-2's defaults for keys a config may leave out, as GPT2Config has them.
  c.n_layer = 12;
  c.n_head = 12;
  c.n_embd = 768;
  c.n_ctx = 1024;
  c.vocab_size = 50257;
  try {
    if (j.contains("model_type") && !j["model_type"].is_string())
      return make_error(ErrorCode::corrupt, what + ": \"model_type\" is " + std::string(j["model_type"].type_name()) +
                                                ", not a string such as \"gpt2\" or \"llama\"");
    if (j.contains("model_type") && j["model_type"].get<std::string>() != "gpt2")
      return config_parse_family(json_text, what);  // gpt_neox, llama, mistral, qwen2 (or refused by name)
    if (!j.contains("model_type")) {
      // Without model_type a config is read as GPT2Config reads it; a key only the other
      // families have means the family is what is missing, not that key's value. (rope_theta
      // alone is headlab's own rotary GPT-2 layout without its headlab_positions: refused below.)
      std::string family_keys;
      for (const char* key : {"intermediate_size", "num_key_value_heads", "head_dim", "rms_norm_eps", "layer_norm_eps",
                              "hidden_act", "hidden_activation", "rope_scaling", "rotary_pct", "partial_rotary_factor",
                              "rotary_emb_base", "rope_parameters", "use_parallel_residual", "sliding_window", "text_config",
                              "attention_bias", "mlp_bias", "query_pre_attn_scalar"})
        if (j.contains(key)) family_keys += (family_keys.empty() ? "\"" : ", \"") + std::string(key) + "\"";
      if (!family_keys.empty())
        return make_error(ErrorCode::unsupported,
                          what + ": no \"model_type\": without it the config is read as GPT-2's, which has no " +
                              family_keys + "; add \"model_type\" naming the family (gpt2, gpt_neox, llama, mistral, "
                              "qwen2, qwen3, gemma2, gemma3_text, gemma3)");
    }
    if (j.contains("activation_function")) {
      // gelu_new, gelu_pytorch_tanh and gelu_fast are the same tanh approximation
      std::string act = j["activation_function"].get<std::string>();
      if (act != "gelu_new" && act != "gelu_pytorch_tanh" && act != "gelu_fast")
        return make_error(ErrorCode::unsupported,
                          what + ": activation_function \"" + act +
                              "\" is not supported (only the tanh GELU: gelu_new, gelu_pytorch_tanh, gelu_fast)");
    }
    // Keys that change the forward in ways headlab does not implement: refused by name.
    auto is_true = [&](const char* key) { return j.contains(key) && j[key].is_boolean() && j[key].get<bool>(); };
    for (const char* key : {"add_cross_attention", "is_encoder_decoder"})
      if (is_true(key))
        return make_error(ErrorCode::unsupported,
                          what + ": \"" + key + "\": true is not supported (headlab runs decoder-only GPT-2)");
    if (j.contains("pruned_heads") && !j["pruned_heads"].is_null() && !j["pruned_heads"].empty())
      return make_error(ErrorCode::unsupported,
                        what + ": \"pruned_heads\" is not supported (every layer must keep all n_head heads)");
    // Whole numbers only, and only ones an int holds: a float like 3e106 must not reach get<int>.
    std::string bad_key;
    auto get_int = [&](const char* key, int& field) {
      if (!j.contains(key) || j[key].is_null()) return;
      const auto& v = j[key];
      if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<std::uint64_t>() > 0x7fffffffu) ||
          (!v.is_number_unsigned() && (v.get<std::int64_t>() < -0x7fffffffLL || v.get<std::int64_t>() > 0x7fffffffLL))) {
        if (bad_key.empty()) bad_key = key;
        return;
      }
      field = static_cast<int>(v.get<std::int64_t>());
    };
    get_int("n_layer", c.n_layer);
    get_int("n_head", c.n_head);
    get_int("n_embd", c.n_embd);
    get_int("n_ctx", c.n_ctx);
    get_int("n_positions", c.n_ctx);  // HF's name wins when both are present
    // GPT2Config.attribute_map: the generic names Hugging Face also writes. Read as the
    // GPT-2 key they stand for; both present and different is a contradiction.
    struct Alias {
      const char* alias;
      const char* gpt2_key;
      int* field;
    };
    for (const Alias& a : {Alias{"hidden_size", "n_embd", &c.n_embd}, Alias{"num_attention_heads", "n_head", &c.n_head},
                           Alias{"num_hidden_layers", "n_layer", &c.n_layer},
                           Alias{"max_position_embeddings", "n_positions", &c.n_ctx}}) {
      if (!j.contains(a.alias) || j[a.alias].is_null()) continue;
      const int before = *a.field;
      get_int(a.alias, *a.field);
      if (!bad_key.empty()) break;
      if (j.contains(a.gpt2_key) && !j[a.gpt2_key].is_null() && *a.field != before)
        return make_error(ErrorCode::corrupt, what + ": \"" + a.alias + "\" (" + std::to_string(*a.field) +
                                                  ") and \"" + a.gpt2_key + "\" (" + std::to_string(before) +
                                                  ") name the same setting and disagree");
    }
    get_int("vocab_size", c.vocab_size);
    get_int("bos_token_id", c.bos_token_id);
    get_int("eos_token_id", c.eos_token_id);
    // In 64 bits: a hostile n_embd past INT_MAX / 4 must not overflow (config_validate refuses it below).
    const std::int64_t four_embd = 4 * std::int64_t(c.n_embd);
    int n_inner = four_embd > INT32_MAX || four_embd < INT32_MIN ? INT32_MAX : int(four_embd);
    get_int("n_inner", n_inner);
    if (!bad_key.empty())
      return make_error(ErrorCode::corrupt, what + ": \"" + bad_key + "\" must be a whole number that fits in 32 bits");
    if (j.contains("layer_norm_epsilon")) {
      const auto& v = j["layer_norm_epsilon"];
      if (!v.is_number() || !(v.get<double>() > 0.0) || !(v.get<double>() < 1.0))
        return make_error(ErrorCode::corrupt, what + ": \"layer_norm_epsilon\" must be a number between 0 and 1");
      c.layer_norm_eps = static_cast<float>(v.get<double>());
    }
    if (j.contains("tie_word_embeddings")) c.tied = j["tie_word_embeddings"].get<bool>();
    if (j.contains("headlab_mlp")) c.mlp = j["headlab_mlp"].get<bool>();
    if (j.contains("scale_attn_weights")) c.scale_attn_weights = j["scale_attn_weights"].get<bool>();
    if (j.contains("scale_attn_by_inverse_layer_idx"))
      c.scale_attn_by_inverse_layer_idx = j["scale_attn_by_inverse_layer_idx"].get<bool>();
    if (j.contains("reorder_and_upcast_attn")) c.reorder_and_upcast_attn = j["reorder_and_upcast_attn"].get<bool>();
    // headlab's trainer writes models without learned positions in this layout too
    // (docs/formats.md): "headlab_positions" rotary (with rope_theta and rotary_dim, NeoX
    // halves) or none. The rotary keys without rotary positions would be ignored: refused.
    if (j.contains("headlab_positions")) {
      const std::string pos = j["headlab_positions"].get<std::string>();
      if (pos == "learned") c.positions = ModelConfig::Positions::learned;
      else if (pos == "rotary") c.positions = ModelConfig::Positions::rotary;
      else if (pos == "none") c.positions = ModelConfig::Positions::none;
      else
        return make_error(ErrorCode::unsupported, what + ": \"headlab_positions\": \"" + pos +
                                                      "\" is not one of learned, rotary, none");
    }
    for (const char* key : {"rope_theta", "rotary_dim"})
      if (j.contains(key) && c.positions != ModelConfig::Positions::rotary)
        return make_error(ErrorCode::unsupported, what + ": \"" + key +
                                                      "\" is set but \"headlab_positions\" is not \"rotary\"");
    if (j.contains("rope_theta")) {
      const auto& v = j["rope_theta"];
      if (!v.is_number() || !(v.get<double>() > 1.0) || !(v.get<double>() < 1e12))
        return make_error(ErrorCode::corrupt, what + ": \"rope_theta\" must be a number above 1");
      c.rope_theta = static_cast<float>(v.get<double>());
    }
    get_int("rotary_dim", c.rotary_dim);
    if (!bad_key.empty())
      return make_error(ErrorCode::corrupt, what + ": \"" + bad_key + "\" must be a whole number that fits in 32 bits");
    if (four_embd > INT32_MAX)
      return make_error(ErrorCode::corrupt, what + ": \"n_embd\" is too large (4 * n_embd must fit in 32 bits)");
    if (n_inner != four_embd)
      return make_error(ErrorCode::unsupported, what + ": n_inner other than 4 * n_embd is not supported");
  } catch (const nlohmann::json::exception& e) {
    return make_error(ErrorCode::corrupt, what + ": a field has the wrong type: " + json_error_text(e.what()));
  }
  if (Status s = config_validate(c); !s)
    return make_error(ErrorCode::invalid_argument, what + ": " + s.error().message);
  return c;
}

Result<ModelConfig> config_load(const std::string& path) {
  Result<std::string> text = file_read(path, std::uint64_t(16) << 20);  // a real config.json is a few KB
  if (!text && text.error().code == ErrorCode::not_found)
    return make_error(ErrorCode::not_found, path + ": cannot open (missing config.json?)");
  if (!text) return tl::unexpected(text.error());
  return config_parse(*text, path);
}

std::string config_to_json(const ModelConfig& c) {
  nlohmann::ordered_json j;
  j["architectures"] = {"GPT2LMHeadModel"};
  j["model_type"] = "gpt2";
  j["activation_function"] = "gelu_new";
  j["n_layer"] = c.n_layer;
  j["n_head"] = c.n_head;
  j["n_embd"] = c.n_embd;
  j["n_positions"] = c.n_ctx;
  j["n_ctx"] = c.n_ctx;
  j["vocab_size"] = c.vocab_size;
  j["layer_norm_epsilon"] = c.layer_norm_eps;
  j["bos_token_id"] = c.bos_token_id;
  j["eos_token_id"] = c.eos_token_id;
  j["tie_word_embeddings"] = c.tied;
  j["scale_attn_weights"] = c.scale_attn_weights;
  j["scale_attn_by_inverse_layer_idx"] = c.scale_attn_by_inverse_layer_idx;
  j["reorder_and_upcast_attn"] = c.reorder_and_upcast_attn;
  j["n_inner"] = nullptr;
  j["resid_pdrop"] = 0.0;
  j["embd_pdrop"] = 0.0;
  j["attn_pdrop"] = 0.0;
  // Attention-only models are not a transformers architecture: other tools read them as
  // GPT-2 with the MLP weights they lack; headlab marks them with its own key.
  j["headlab_mlp"] = c.mlp;
  // Positions other than GPT-2's learned wpe (headlab's trainer): the keys config_parse reads
  // back. Written only then, so a GPT-2 config stays GPT-2's.
  if (c.positions == ModelConfig::Positions::rotary) {
    j["headlab_positions"] = "rotary";
    j["rope_theta"] = c.rope_theta;
    j["rotary_dim"] = c.rotary_size();
  } else if (c.positions == ModelConfig::Positions::none) {
    j["headlab_positions"] = "none";
  }
  return j.dump(2) + "\n";
}

Status config_save(const ModelConfig& config, const std::string& path) {
  return file_write(path, config_to_json(config));
}

}  // namespace headlab::model
