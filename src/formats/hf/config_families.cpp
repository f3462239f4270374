// formats/hf/config_families.cpp — config.json of the families other than GPT-2, read into the
// one configured block (ModelConfig). Each family maps its keys onto the block's settings;
// a key whose maths headlab does not implement is refused by name, never ignored.
//   gpt_neox (Pythia): LayerNorm, partial NeoX rotary (rotary_pct, rotary_emb_base),
//                      fused query_key_value, GELU (erf), parallel residual, untied
//   llama, mistral:    RMSNorm, NeoX-halves rotary (rope_theta, rope_scaling linear or
//                      llama3), GQA, SwiGLU, no biases; Mistral's sliding window
//   qwen2, qwen3:      llama's block with q/k/v biases (Qwen 2) or q/k norm (Qwen 3), and
//                      use_sliding_window with max_window_layers
//   gemma2, gemma3:    RMSNorm with (1 + w) before and after attention and MLP, GeGLU,
//                      embedding * sqrt(C), query_pre_attn_scalar, soft-capping (Gemma 2),
//                      q/k norm and local rotary base (Gemma 3), sliding/global layers, tied
// Configs of every vintage: the rotary keys as transformers wrote them before v5 (rope_theta,
// rope_scaling, rope_local_base_freq at the top) and as it writes them now (rope_parameters,
// flat or by layer type) give the same block.
#include <cmath>

#include <nlohmann/json.hpp>

#include "formats/hf/config_json.h"
#include "util/json_depth.h"
#include "util/json_error.h"

namespace headlab::model {

namespace {

using json = nlohmann::json;

bool has(const json& j, const char* key) { return j.contains(key) && !j[key].is_null(); }

// The rotary keys inside one rope_parameters object (rope_theta, rope_type and the scaling's
// own numbers), written into `j` as the earlier keys: rope_theta at the top, the scaling as
// rope_scaling (read below, where each rope_type is honoured or refused by name). `theta_key`
// is where the base goes: rope_theta, or rope_local_base_freq for Gemma 3's sliding layers.
// A key given both ways must agree. Returns an error message, or "" when done.
std::string rope_parameters_flatten(json& j, const json& rp, const std::string& where, const char* theta_key,
                                    bool scaling_allowed) {
  if (!rp.is_object()) return "\"" + where + "\" must be an object";
  json scaling = json::object();
  for (auto it = rp.begin(); it != rp.end(); ++it) {
    const std::string& k = it.key();
    if (k == "rope_theta") {
      if (!it.value().is_number()) return "\"" + where + ".rope_theta\" must be a number";
      if (has(j, theta_key) && (!j[theta_key].is_number() || j[theta_key].get<double>() != it.value().get<double>()))
        return "\"" + std::string(theta_key) + "\" is " + j[theta_key].dump() + " but \"" + where + ".rope_theta\" is " +
               it.value().dump() + "; give one of them";
      j[theta_key] = it.value();
    } else if (k == "partial_rotary_factor") {
      if (has(j, "partial_rotary_factor") && j["partial_rotary_factor"] != it.value())
        return "\"partial_rotary_factor\" and \"" + where + ".partial_rotary_factor\" disagree";
      j["partial_rotary_factor"] = it.value();
    } else {
      scaling[k] = it.value();  // rope_type (or type), factor, low_freq_factor, ...
    }
  }
  const json* type = scaling.contains("rope_type") ? &scaling["rope_type"] : (scaling.contains("type") ? &scaling["type"] : nullptr);
  const bool plain = !type || (type->is_string() && type->get<std::string>() == "default");
  if (plain) {
    for (auto it = scaling.begin(); it != scaling.end(); ++it)
      if (it.key() != "rope_type" && it.key() != "type")
        return "\"" + where + "." + it.key() + "\" is not read with rope_type \"default\"; remove it or give the rope_type it belongs to";
    return "";
  }
  if (!scaling_allowed)
    return "\"" + where + "\" of rope_type " + type->dump() + ": headlab's sliding layers rotate without scaling";
  if (has(j, "rope_scaling") && j["rope_scaling"] != scaling)
    return "\"rope_scaling\" and \"" + where + "\" both give a scaling, and they differ; give one of them";
  j["rope_scaling"] = scaling;
  return "";
}

// transformers v5's rope_parameters, in `j` (a config, or Gemma 3's text_config), turned into
// the earlier keys. By layer type ({"full_attention": {...}, "sliding_attention": {...}}):
// Gemma 3's full layers give rope_theta and the scaling, its sliding layers
// rope_local_base_freq; another family's two must be the same.
std::string rope_parameters_read(json& j, bool gemma3) {
  if (!j.contains("rope_parameters")) return "";
  const json rp = j["rope_parameters"];
  j.erase("rope_parameters");
  if (rp.is_null()) return "";
  if (!rp.is_object()) return "\"rope_parameters\" must be an object";
  const bool by_layer_type = rp.contains("full_attention") || rp.contains("sliding_attention");
  if (!by_layer_type) return rope_parameters_flatten(j, rp, "rope_parameters", "rope_theta", true);
  for (auto it = rp.begin(); it != rp.end(); ++it)
    if (it.key() != "full_attention" && it.key() != "sliding_attention")
      return "\"rope_parameters\" by layer type holds \"" + it.key() +
             "\"; headlab knows full_attention and sliding_attention only";
  if (gemma3) {
    if (rp.contains("full_attention"))
      if (auto e = rope_parameters_flatten(j, rp["full_attention"], "rope_parameters.full_attention", "rope_theta", true);
          !e.empty())
        return e;
    if (rp.contains("sliding_attention"))
      return rope_parameters_flatten(j, rp["sliding_attention"], "rope_parameters.sliding_attention",
                                     "rope_local_base_freq", false);
    return "";
  }
  if (rp.contains("full_attention") && rp.contains("sliding_attention") && rp["full_attention"] != rp["sliding_attention"])
    return "\"rope_parameters\" gives the full and the sliding layers different rotations, which this family's "
           "block does not have";
  const char* which = rp.contains("full_attention") ? "full_attention" : "sliding_attention";
  return rope_parameters_flatten(j, rp[which], std::string("rope_parameters.") + which, "rope_theta", true);
}

}  // namespace

Result<ModelConfig> config_parse_family(const std::string& json_text, const std::string& what) {
  if (auto s = json_depth_check(json_text, what); !s) return tl::unexpected(s.error());
  json top;
  try {
    top = json::parse(json_text);
  } catch (const json::exception& e) {
    return make_error(ErrorCode::corrupt, what + ": not valid JSON: " + json_error_text(e.what()));
  }
  if (!top.is_object()) return make_error(ErrorCode::corrupt, what + ": expected a JSON object");
  auto unsupported = [&](const std::string& m) { return make_error(ErrorCode::unsupported, what + ": " + m); };
  auto corrupt = [&](const std::string& m) { return make_error(ErrorCode::corrupt, what + ": " + m); };
  ModelConfig c;
  try {
    std::string type = has(top, "model_type") ? top["model_type"].get<std::string>() : "";
    // Gemma 3's multimodal config: the text model is its text_config; the vision tower
    // (vision_config, the vision_tower and multi_modal_projector tensors) is not read.
    json j = top;
    if (type == "gemma3") {
      if (!has(top, "text_config") || !top["text_config"].is_object())
        return unsupported("model_type \"gemma3\" without a \"text_config\": headlab reads Gemma 3's text model only");
      j = top["text_config"];
      c.multimodal_text = true;
    }
    const bool neox = type == "gpt_neox";
    const bool qwen = type == "qwen2" || type == "qwen3";
    const bool llama_like = type == "llama" || type == "mistral" || qwen;
    const bool gemma = type == "gemma2" || type == "gemma3_text" || type == "gemma3";
    const bool gemma3 = type == "gemma3_text" || type == "gemma3";
    if (!neox && !llama_like && !gemma)
      return unsupported("model_type \"" + type +
                         "\" is not supported (gpt2, gpt_neox, llama, mistral, qwen2, qwen3, gemma2, gemma3_text, gemma3)");
    c.family = type == "gemma3_text" ? "gemma3" : type;
    if (auto e = rope_parameters_read(j, gemma3); !e.empty()) return corrupt(e);

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
    if (c.multimodal_text) {  // the token ids may sit at the top level of a multimodal config
      if (!has(j, "bos_token_id") && has(top, "bos_token_id")) c.bos_token_id = top["bos_token_id"].get<int>();
      if (!has(j, "eos_token_id") && has(top, "eos_token_id"))
        c.eos_token_id = top["eos_token_id"].is_array() ? top["eos_token_id"][0].get<int>() : top["eos_token_id"].get<int>();
    }
    c.positions = ModelConfig::Positions::rotary;
    c.rotary_interleaved = false;  // Hugging Face's rotate_half for every family here

    // Keys whose maths headlab does not implement (other families' switches that a
    // converted config may carry): refused by name. Gemma reads the first three itself.
    for (const char* key : {"attn_logit_softcapping", "final_logit_softcapping", "query_pre_attn_scalar",
                            "qk_layernorm", "use_qk_norm", "rotary_emb_interleaved", "use_bidirectional_attention",
                            "rope_local_base_freq"}) {
      const std::string k = key;
      if (gemma && (k == "attn_logit_softcapping" || k == "final_logit_softcapping" || k == "query_pre_attn_scalar"))
        continue;
      if (gemma3 && k == "rope_local_base_freq") continue;
      if (has(j, key) && !(j[key].is_boolean() && !j[key].get<bool>()))
        return unsupported("\"" + k + "\" is not supported" + (gemma ? "" : " for " + type));
    }
    if (has(j, "rope_scaling")) {
      const json& rs = j["rope_scaling"];
      if (!rs.is_object()) return corrupt("\"rope_scaling\" must be an object or null");
      std::string kind = rs.contains("rope_type") ? rs["rope_type"].get<std::string>()
                                                  : rs.contains("type") ? rs["type"].get<std::string>() : "";
      auto number = [&](const char* key, double lo, double& out) {
        if (!rs.contains(key) || !rs[key].is_number() || !(rs[key].get<double>() >= lo)) return false;
        out = rs[key].get<double>();
        return true;
      };
      double factor = 0, low = 0, high = 0, orig = 0;
      if (kind == "linear") {
        if (!number("factor", 1.0, factor))
          return unsupported("\"rope_scaling\" of type \"linear\" needs a \"factor\" >= 1");
        c.rope_linear_factor = static_cast<float>(factor);
      } else if (kind == "llama3") {
        if (!number("factor", 1.0, factor) || !number("low_freq_factor", 0.0, low) ||
            !number("high_freq_factor", 0.0, high) || !number("original_max_position_embeddings", 1.0, orig))
          return corrupt("\"rope_scaling\" of type \"llama3\" needs \"factor\" >= 1, \"low_freq_factor\", "
                         "\"high_freq_factor\" and \"original_max_position_embeddings\"");
        if (!(high > low) || orig > 1 << 24)
          return corrupt("\"rope_scaling\" of type \"llama3\": \"high_freq_factor\" must be above \"low_freq_factor\"");
        c.rope_llama3_factor = static_cast<float>(factor);
        c.rope_llama3_low_freq_factor = static_cast<float>(low);
        c.rope_llama3_high_freq_factor = static_cast<float>(high);
        c.rope_llama3_original_max_positions = static_cast<int>(orig);
      } else if (kind != "default") {
        return unsupported("\"rope_scaling\" of type \"" + kind +
                           "\" is not supported (\"linear\", \"llama3\", or none)");
      }
    }

    // Which layers slide: layer_types when the config lists them (newer transformers).
    auto read_layer_types = [&]() -> Status {
      if (!has(j, "layer_types")) return {};
      const json& lt = j["layer_types"];
      if (!lt.is_array()) return corrupt("\"layer_types\" must be a list");
      c.sliding_layers.clear();
      for (const json& t : lt) {
        const std::string s = t.is_string() ? t.get<std::string>() : "";
        if (s == "sliding_attention") c.sliding_layers.push_back(1);
        else if (s == "full_attention") c.sliding_layers.push_back(0);
        else return unsupported("\"layer_types\" entry \"" + s + "\" is not supported (sliding_attention, full_attention)");
      }
      return {};
    };

    if (neox) {
      c.norm = ModelConfig::Norm::layernorm;
      c.tied = false;
      c.parallel_residual = true;
      float pct = 0.25f;
      if (!get_float("rotary_pct", pct, 0.0, 1.0)) return corrupt("\"rotary_pct\" must be in (0, 1]");
      // transformers v5 names it partial_rotary_factor (in rope_parameters)
      if (has(j, "partial_rotary_factor") && has(j, "rotary_pct") && j["partial_rotary_factor"] != j["rotary_pct"])
        return corrupt("\"rotary_pct\" and \"partial_rotary_factor\" disagree; give one of them");
      if (!get_float("partial_rotary_factor", pct, 0.0, 1.0)) return corrupt("\"partial_rotary_factor\" must be in (0, 1]");
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
    } else if (llama_like) {
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
      } else {
        bool bias = false;
        get_bool("attention_bias", bias);
        c.qkv_bias = c.attn_out_bias = bias;
        c.mlp_bias = false;
        if (type != "qwen3") get_bool("mlp_bias", c.mlp_bias);
      }
      if (type == "qwen3") c.qk_norm = true;
      if (type == "mistral") get_int("sliding_window", c.sliding_window);
      if (qwen) {
        // Qwen: sliding_window counts only with use_sliding_window; then the layers from
        // max_window_layers on slide and the ones before attend to every key.
        bool sliding = false;
        get_bool("use_sliding_window", sliding);
        if (sliding) {
          get_int("sliding_window", c.sliding_window);
          if (c.sliding_window <= 0) return corrupt("\"use_sliding_window\" is true but \"sliding_window\" is not a positive number");
          int full_layers = 28;  // Qwen2Config's default
          get_int("max_window_layers", full_layers);
          c.sliding_layers.assign(std::size_t(std::max(c.n_layer, 0)), 0);
          for (int l = std::max(full_layers, 0); l < c.n_layer; l++) c.sliding_layers[l] = 1;
          if (Status s = read_layer_types(); !s) return tl::unexpected(s.error());
        }
      }
      float partial = 1.0f;
      if (!get_float("partial_rotary_factor", partial, 0.0, 1.0))
        return corrupt("\"partial_rotary_factor\" must be in (0, 1]");
      const int hs = c.head_dim > 0 ? c.head_dim : (c.n_head > 0 ? c.n_embd / c.n_head : 0);
      c.rotary_dim = static_cast<int>(hs * partial);
      if (c.rotary_dim % 2) return unsupported("partial_rotary_factor gives an odd number of rotary channels");
    } else {
      // Gemma 2 and 3. A key the config leaves out takes Gemma2Config's / Gemma3TextConfig's default.
      c.norm = ModelConfig::Norm::rmsnorm;
      c.norm_plus_one = true;
      c.sandwich_norm = true;
      c.embed_scale = true;
      c.mlp_kind = ModelConfig::Mlp::geglu;
      c.tied = true;
      c.qkv_bias = c.attn_out_bias = c.mlp_bias = false;
      c.layer_norm_eps = 1e-6f;
      c.rope_theta = gemma3 ? 1000000.0f : 10000.0f;
      c.query_pre_attn_scalar = 256.0f;
      c.attn_softcap = gemma3 ? 0.0f : 50.0f;
      c.final_softcap = gemma3 ? 0.0f : 30.0f;
      c.sliding_window = 4096;
      if (!get_float("rms_norm_eps", c.layer_norm_eps, 0.0, 1.0)) return corrupt("\"rms_norm_eps\" must be in (0, 1)");
      if (!get_float("rope_theta", c.rope_theta, 1.0, 1e12)) return corrupt("\"rope_theta\" must be above 1");
      get_int("num_key_value_heads", c.n_kv_head);
      bool bias = false;
      get_bool("attention_bias", bias);
      c.qkv_bias = c.attn_out_bias = bias;
      // hidden_activation is the key Gemma's MLP reads (hidden_act, kept for Gemma 1, it does not)
      const char* act_key = "hidden_activation";
      const std::string act = has(j, act_key) ? j[act_key].get<std::string>() : "gelu_pytorch_tanh";
      if (act != "gelu_pytorch_tanh" && act != "gelu_new" && act != "gelu_fast")
        return unsupported(std::string(act_key) + " \"" + act + "\" is not supported for " + type +
                           " (only the tanh GELU: gelu_pytorch_tanh)");
      // null switches soft-capping off; a number must be positive
      for (auto [key, field] : {std::pair<const char*, float*>{"attn_logit_softcapping", &c.attn_softcap},
                                {"final_logit_softcapping", &c.final_softcap},
                                {"query_pre_attn_scalar", &c.query_pre_attn_scalar}}) {
        if (!j.contains(key)) continue;
        if (j[key].is_null() && std::string(key) != "query_pre_attn_scalar") *field = 0.0f;
        else if (!get_float(key, *field, 0.0, 1e9)) return corrupt("\"" + std::string(key) + "\" must be a positive number");
      }
      if (j.contains("sliding_window") && j["sliding_window"].is_null()) c.sliding_window = 0;
      get_int("sliding_window", c.sliding_window);
      const int L = std::max(c.n_layer, 0);
      c.sliding_layers.assign(std::size_t(L), 0);
      if (gemma3) {
        c.qk_norm = true;
        c.rope_local_theta = 10000.0f;
        if (!get_float("rope_local_base_freq", c.rope_local_theta, 1.0, 1e12))
          return corrupt("\"rope_local_base_freq\" must be above 1");
        int pattern = 6;  // every 6th layer global: (l + 1) % pattern == 0
        get_int("sliding_window_pattern", pattern);
        if (pattern <= 0) return corrupt("\"sliding_window_pattern\" must be positive");
        for (int l = 0; l < L; l++) c.sliding_layers[l] = (l + 1) % pattern != 0;
      } else {
        for (int l = 0; l < L; l++) c.sliding_layers[l] = l % 2 == 0;  // Gemma 2: even layers slide
      }
      if (Status s = read_layer_types(); !s) return tl::unexpected(s.error());
      if (c.sliding_window == 0) c.sliding_layers.clear();
      c.rotary_dim = 0;  // the whole head rotates
    }
    get_bool("tie_word_embeddings", c.tied);
    if (c.multimodal_text && !has(j, "tie_word_embeddings") && has(top, "tie_word_embeddings"))
      c.tied = top["tie_word_embeddings"].get<bool>();
    if (!bad_key.empty()) return corrupt("\"" + bad_key + "\" must be a whole number that fits in 32 bits");
    if (c.d_mlp <= 0) return corrupt("\"intermediate_size\" must be a positive whole number");
  } catch (const json::exception& e) {
    return corrupt(std::string("a field has the wrong type: ") + json_error_text(e.what()));
  }
  if (Status s = config_validate(c); !s) return make_error(ErrorCode::invalid_argument, what + ": " + s.error().message);
  return c;
}

}  // namespace headlab::model
