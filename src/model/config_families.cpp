// model/config_families.cpp — config.json of the families other than GPT-2, read into the
// one configured block (ModelConfig). Each family maps its keys onto the block's settings;
// a key whose maths headlab does not implement is refused by name, never ignored.
//   gpt_neox (Pythia): LayerNorm, partial NeoX rotary (rotary_pct, rotary_emb_base),
//                      fused query_key_value, GELU (erf), parallel residual, untied
//   llama, mistral:    RMSNorm, NeoX-halves rotary (rope_theta), GQA, SwiGLU, no biases
//   qwen2:             llama's block with q/k/v biases
#include <cmath>

#include <nlohmann/json.hpp>

#include "model/config.h"

namespace headlab::model {

namespace {

using json = nlohmann::json;

bool has(const json& j, const char* key) { return j.contains(key) && !j[key].is_null(); }

}  // namespace

Result<ModelConfig> config_parse_family(const std::string& json_text, const std::string& what) {
  json j;
  try {
    j = json::parse(json_text);
  } catch (const json::exception& e) {
    return make_error(ErrorCode::corrupt, what + ": not valid JSON: " + e.what());
  }
  if (!j.is_object()) return make_error(ErrorCode::corrupt, what + ": expected a JSON object");
  auto unsupported = [&](const std::string& m) { return make_error(ErrorCode::unsupported, what + ": " + m); };
  auto corrupt = [&](const std::string& m) { return make_error(ErrorCode::corrupt, what + ": " + m); };
  ModelConfig c;
  try {
    const std::string type = has(j, "model_type") ? j["model_type"].get<std::string>() : "";
    const bool neox = type == "gpt_neox";
    const bool llama_like = type == "llama" || type == "mistral" || type == "qwen2";
    if (!neox && !llama_like)
      return unsupported("model_type \"" + type + "\" is not supported (gpt2, gpt_neox, llama, mistral, qwen2)");
    c.family = type;

    // Whole numbers that fit an int; a float like 3e106 must not reach get<int>.
    std::string bad_key;
    auto get_int = [&](const char* key, int& field) {
      if (!has(j, key)) return;
      const json& v = j[key];
      if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<std::uint64_t>() > 0x7fffffffu) ||
          (!v.is_number_unsigned() && (v.get<std::int64_t>() < -0x7fffffffLL || v.get<std::int64_t>() > 0x7fffffffLL))) {
        if (bad_key.empty()) bad_key = key;
        return;
      }
      field = static_cast<int>(v.get<std::int64_t>());
    };
    // Llama 3 lists several EOS ids: the first is the one headlab stops at.
    auto get_token = [&](const char* key, int& field) {
      if (has(j, key) && j[key].is_array() && !j[key].empty()) {
        if (!j[key][0].is_number_integer()) bad_key = key;
        else field = static_cast<int>(j[key][0].get<std::int64_t>());
      } else {
        get_int(key, field);
      }
    };
    auto get_float = [&](const char* key, float& field, double lo, double hi) -> bool {
      if (!has(j, key)) return true;
      if (!j[key].is_number() || !(j[key].get<double>() > lo) || !(j[key].get<double>() <= hi)) return false;
      field = static_cast<float>(j[key].get<double>());
      return true;
    };
    auto get_bool = [&](const char* key, bool& field) {
      if (has(j, key)) field = j[key].get<bool>();
    };

    c.n_layer = 0, c.n_head = 0, c.n_embd = 0, c.n_ctx = 2048, c.vocab_size = 0;
    c.bos_token_id = 0, c.eos_token_id = 0;
    get_int("num_hidden_layers", c.n_layer);
    get_int("num_attention_heads", c.n_head);
    get_int("hidden_size", c.n_embd);
    get_int("max_position_embeddings", c.n_ctx);
    get_int("vocab_size", c.vocab_size);
    get_int("intermediate_size", c.d_mlp);
    get_int("head_dim", c.head_dim);
    get_token("bos_token_id", c.bos_token_id);
    get_token("eos_token_id", c.eos_token_id);
    c.positions = ModelConfig::Positions::rotary;
    c.rotary_interleaved = false;  // Hugging Face's rotate_half for every family here

    // Keys whose maths headlab does not implement (other families' switches that a
    // converted config may carry): refused by name.
    for (const char* key : {"attn_logit_softcapping", "final_logit_softcapping", "query_pre_attn_scalar",
                            "qk_layernorm", "use_qk_norm", "rotary_emb_interleaved"})
      if (has(j, key) && !(j[key].is_boolean() && !j[key].get<bool>()))
        return unsupported("\"" + std::string(key) + "\" is not supported");
    if (has(j, "rope_scaling")) {
      const json& rs = j["rope_scaling"];
      std::string kind = rs.contains("rope_type") ? rs["rope_type"].get<std::string>()
                                                  : rs.contains("type") ? rs["type"].get<std::string>() : "";
      if (kind == "linear" && rs.contains("factor") && rs["factor"].is_number() && rs["factor"].get<double>() >= 1.0) {
        c.rope_linear_factor = static_cast<float>(rs["factor"].get<double>());
      } else if (kind != "default") {
        return unsupported("\"rope_scaling\" of type \"" + kind +
                           "\" is not supported (only \"linear\" with a factor >= 1, or none)");
      }
    }

    if (neox) {
      c.norm = ModelConfig::Norm::layernorm;
      c.tied = false;
      c.parallel_residual = true;
      float pct = 0.25f;
      if (!get_float("rotary_pct", pct, 0.0, 1.0)) return corrupt("\"rotary_pct\" must be in (0, 1]");
      float base = 10000.0f;
      if (!get_float("rotary_emb_base", base, 1.0, 1e12)) return corrupt("\"rotary_emb_base\" must be above 1");
      if (!get_float("rope_theta", base, 1.0, 1e12)) return corrupt("\"rope_theta\" must be above 1");
      c.rope_theta = base;
      if (!get_float("layer_norm_eps", c.layer_norm_eps, 0.0, 1.0)) return corrupt("\"layer_norm_eps\" must be in (0, 1)");
      get_bool("use_parallel_residual", c.parallel_residual);
      get_bool("attention_bias", c.qkv_bias);
      c.attn_out_bias = c.qkv_bias;
      const std::string act = has(j, "hidden_act") ? j["hidden_act"].get<std::string>() : "gelu";
      if (act == "gelu") c.mlp_kind = ModelConfig::Mlp::gelu_erf;
      else if (act == "gelu_new" || act == "gelu_fast" || act == "gelu_pytorch_tanh") c.mlp_kind = ModelConfig::Mlp::gelu_tanh;
      else return unsupported("hidden_act \"" + act + "\" is not supported for gpt_neox (gelu, gelu_new)");
      if (c.n_head > 0 && c.n_embd % c.n_head == 0) {
        const int hs = c.n_embd / c.n_head;
        c.rotary_dim = static_cast<int>(hs * pct);  // as GPTNeoXRotaryEmbedding: int(HS * rotary_pct)
        if (c.rotary_dim % 2) return unsupported("rotary_pct gives an odd number of rotary channels");
      }
    } else {
      c.norm = ModelConfig::Norm::rmsnorm;
      c.mlp_kind = ModelConfig::Mlp::swiglu;
      c.tied = false;
      c.layer_norm_eps = 1e-6f;
      if (!get_float("rms_norm_eps", c.layer_norm_eps, 0.0, 1.0)) return corrupt("\"rms_norm_eps\" must be in (0, 1)");
      if (!get_float("rope_theta", c.rope_theta, 1.0, 1e12)) return corrupt("\"rope_theta\" must be above 1");
      get_int("num_key_value_heads", c.n_kv_head);
      const std::string act = has(j, "hidden_act") ? j["hidden_act"].get<std::string>() : "silu";
      if (act != "silu") return unsupported("hidden_act \"" + act + "\" is not supported for " + type + " (only silu)");
      if (type == "qwen2") {
        c.qkv_bias = true, c.attn_out_bias = false, c.mlp_bias = false;
        bool sliding = false;
        get_bool("use_sliding_window", sliding);
        if (sliding) return unsupported("\"use_sliding_window\": true is not supported");
      } else {
        bool bias = false;
        get_bool("attention_bias", bias);
        c.qkv_bias = c.attn_out_bias = bias;
        c.mlp_bias = false;
        get_bool("mlp_bias", c.mlp_bias);
      }
      if (type == "mistral") get_int("sliding_window", c.sliding_window);
      float partial = 1.0f;
      if (!get_float("partial_rotary_factor", partial, 0.0, 1.0))
        return corrupt("\"partial_rotary_factor\" must be in (0, 1]");
      const int hs = c.head_dim > 0 ? c.head_dim : (c.n_head > 0 ? c.n_embd / c.n_head : 0);
      c.rotary_dim = static_cast<int>(hs * partial);
      if (c.rotary_dim % 2) return unsupported("partial_rotary_factor gives an odd number of rotary channels");
    }
    get_bool("tie_word_embeddings", c.tied);
    if (!bad_key.empty()) return corrupt("\"" + bad_key + "\" must be a whole number that fits in 32 bits");
    if (c.d_mlp <= 0) return corrupt("\"intermediate_size\" must be a positive whole number");
  } catch (const json::exception& e) {
    return corrupt(std::string("a field has the wrong type: ") + e.what());
  }
  if (Status s = config_validate(c); !s) return make_error(ErrorCode::invalid_argument, what + ": " + s.error().message);
  return c;
}

}  // namespace headlab::model
