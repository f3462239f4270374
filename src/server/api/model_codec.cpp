// server/api/model_codec.cpp — nlohmann::json both ways; floats rounded to 5 decimals on the
// wire (patterns are drawn, not summed), token texts with invalid UTF-8 replaced.
#include "server/api/model_codec.h"

#include <algorithm>

#include "server/api/json_fields.h"
#include "server/model_service/model_views.h"
#include "util/json_depth.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>

namespace headlab::server {
namespace {

using nlohmann::json;

Error bad(const std::string& message) { return Error{ErrorCode::invalid_argument, message}; }

constexpr std::string_view kExample = R"({"text": "..."})";

Status read_head_list(const json& j, ModelRunRequest& r) {
  auto it = j.find("heads");
  if (it == j.end() || it->is_null()) return {};
  if (!it->is_array()) return tl::unexpected(bad("Field 'heads' must be a list of [layer, head] pairs."));
  r.all_heads = false;
  for (const json& pair : *it) {
    auto small_int = [](const json& v) {
      return v.is_number_integer() && v.get<long long>() >= -1'000'000 && v.get<long long>() <= 1'000'000;
    };
    if (!pair.is_array() || pair.size() != 2 || !small_int(pair[0]) || !small_int(pair[1]))
      return tl::unexpected(bad("Each entry of 'heads' must be a [layer, head] pair of whole numbers."));
    r.heads.push_back({static_cast<int>(pair[0].get<long long>()), static_cast<int>(pair[1].get<long long>())});
  }
  return {};
}

// One of the window's ranges: two whole numbers [begin, end] with 0 <= begin <= end. The
// end is checked against the text's length once it is tokenised (model_service.cpp).
Status read_token_range(const json& window, const char* name, TokenRange& out) {
  const std::string field = std::string("window.") + name;
  auto it = window.find(name);
  if (it == window.end())
    return tl::unexpected(bad("Missing field '" + field + "'. A window is {\"queries\": [begin, end], \"keys\": " +
                              "[begin, end]}, two half-open ranges of token positions (the start token is 0)."));
  auto whole = [](const json& v) {
    if (v.is_number_unsigned()) return v.get<std::uint64_t>() <= std::uint64_t(kMaxRequestInteger);
    return v.is_number_integer() && v.get<std::int64_t>() >= -kMaxRequestInteger && v.get<std::int64_t>() <= kMaxRequestInteger;
  };
  if (!it->is_array() || it->size() != 2 || !whole((*it)[0]) || !whole((*it)[1]))
    return tl::unexpected(bad("Field '" + field + "' must be two whole numbers [begin, end]: a half-open range of " +
                              "token positions, like [0, 48] for the first 48 tokens."));
  const auto begin = (*it)[0].get<std::int64_t>(), end = (*it)[1].get<std::int64_t>();
  if (begin < 0 || end < begin)
    return tl::unexpected(bad("Field '" + field + "' is [" + std::to_string(begin) + ", " + std::to_string(end) +
                              "]; a range needs 0 <= begin <= end. Send the first position and one past the last, " +
                              "like [0, 48]."));
  out = {static_cast<int>(begin), static_cast<int>(end)};
  return {};
}

Status read_window(const json& j, ModelRunRequest& r) {
  auto it = j.find("window");
  if (it == j.end() || it->is_null()) return {};
  if (!it->is_object())
    return tl::unexpected(bad("Field 'window' must be an object {\"queries\": [begin, end], \"keys\": [begin, end]}."));
  HEADLAB_TRY(only_fields(*it, {"queries", "keys"}, " in 'window'"));
  TokenWindow w;
  HEADLAB_TRY(read_token_range(*it, "queries", w.queries));
  HEADLAB_TRY(read_token_range(*it, "keys", w.keys));
  r.window = w;
  return {};
}

json rounded(const std::vector<float>& packed_or_flat) {
  json out = json::array();
  for (float v : packed_or_flat) out.push_back(std::round(double(v) * 1e5) / 1e5);
  return out;
}

// A window's cells -> one row per query, each holding its keys in the window; for the
// whole window these are the ragged causal rows [[k0], [k0, k1], ...].
json window_rows(const std::vector<float>& cells, const TokenWindow& w) {
  json rows = json::array();
  std::size_t at = 0;
  for (int q = w.queries.begin; q < w.queries.end; ++q) {
    json row = json::array();
    for (int i = 0, n = window_row_size(w, q); i < n; ++i) row.push_back(std::round(double(cells[at++]) * 1e5) / 1e5);
    rows.push_back(std::move(row));
  }
  return rows;
}

// The compact views ("encoding": "base64"): the window's cells row after row (the rows'
// lengths follow from the window, as in window_rows), each probability p as the uint16
// round(p * 65535) (within 1/131070 of p), each score as its float32, little-endian, base64.
std::string base64(const std::string& bytes) {
  static const char* abc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const unsigned v = (unsigned char)bytes[i] << 16 | (unsigned char)bytes[i + 1] << 8 | (unsigned char)bytes[i + 2];
    for (int s = 18; s >= 0; s -= 6) out.push_back(abc[(v >> s) & 63]);
  }
  if (i < bytes.size()) {
    const bool two = i + 1 < bytes.size();
    const unsigned v = (unsigned char)bytes[i] << 16 | (two ? (unsigned char)bytes[i + 1] << 8 : 0);
    out.push_back(abc[(v >> 18) & 63]);
    out.push_back(abc[(v >> 12) & 63]);
    out.push_back(two ? abc[(v >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}
json compact_probabilities(const std::vector<float>& cells) {
  std::string bytes;
  bytes.reserve(cells.size() * 2);
  for (float p : cells) {
    const auto u = static_cast<unsigned>(std::lround(std::clamp(double(p), 0.0, 1.0) * 65535.0));
    bytes.push_back(static_cast<char>(u & 0xff));
    bytes.push_back(static_cast<char>(u >> 8));
  }
  return base64(bytes);
}
json compact_floats(const std::vector<float>& cells) {
  std::string bytes;
  bytes.reserve(cells.size() * 4);
  for (float f : cells) {
    std::uint32_t u;
    std::memcpy(&u, &f, 4);
    for (int b = 0; b < 4; b++) bytes.push_back(static_cast<char>((u >> (8 * b)) & 0xff));
  }
  return base64(bytes);
}

json encode_tokens(const std::vector<model::Token>& tokens) {
  json out = json::array();
  for (const auto& t : tokens) out.push_back({{"id", t.id}, {"text", t.text}, {"begin", t.begin}, {"end", t.end}});
  return out;
}

json encode_outcome(const Outcome& o) {
  json top = json::array();
  for (const auto& preds : o.top_next) {
    json row = json::array();
    for (const auto& p : preds)
      row.push_back({{"id", p.id},
                     {"text", p.text},
                     {"prob", std::round(double(p.prob) * 1e5) / 1e5},
                     {"logit", std::round(double(p.logit) * 1e5) / 1e5}});
    top.push_back(std::move(row));
  }
  json losses = rounded(o.token_loss);
  losses.push_back(nullptr);  // no next token after the last position
  return {{"loss", std::round(double(o.loss) * 1e5) / 1e5}, {"token_loss", losses}, {"top_next", top}};
}

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

}  // namespace

// "bos" when sent; omitted, the family's rule applies (model_types.h).
static Status read_optional_bos(const json& j, std::optional<bool>& bos) {
  if (!j.contains("bos")) return {};
  bool b = true;
  HEADLAB_TRY(read_field(j, "bos", b, true));
  bos = b;
  return {};
}

// "steer": [{"layer", "coef", "vector": [C numbers], "from"}, {"layer", "coef", "plus", "minus", "from"}]
Status read_steer_list(const nlohmann::json& j, std::vector<SteerSpec>& out) {
  auto it = j.find("steer");
  if (it == j.end()) return {};
  if (!it->is_array() || it->size() > 16)
    return tl::unexpected(bad("Field 'steer' must be a list of at most 16 objects {layer, coef, vector} or "
                              "{layer, coef, plus, minus}."));
  for (const json& s : *it) {
    if (!s.is_object()) return tl::unexpected(bad("Each 'steer' entry must be an object {layer, coef, vector}."));
    HEADLAB_TRY(only_fields(s, {"layer", "coef", "vector", "plus", "minus", "from"}, " in 'steer'"));
    SteerSpec x;
    HEADLAB_TRY(read_field(s, "layer", x.layer, true));
    HEADLAB_TRY(read_field(s, "from", x.from, false));
    auto coef = s.find("coef");
    if (coef == s.end() || !coef->is_number())
      return tl::unexpected(bad("Each 'steer' entry needs 'coef', a number: how many times the vector is added."));
    x.coef = static_cast<float>(coef->get<double>());
    const bool vector = s.contains("vector"), texts = s.contains("plus") || s.contains("minus");
    if (vector == texts)
      return tl::unexpected(bad("A 'steer' entry has either 'vector' (a list of n_embd numbers) or 'plus' and 'minus' "
                                "(two texts: ActAdd)."));
    if (vector) {
      const json& v = s["vector"];
      if (!v.is_array() || v.size() > 65536)
        return tl::unexpected(bad("Field 'vector' in 'steer' must be a list of n_embd numbers."));
      for (const json& x_i : v) {
        if (!x_i.is_number()) return tl::unexpected(bad("Field 'vector' in 'steer' holds something that is not a number."));
        const double d = x_i.get<double>();
        x.vector.push_back(std::fabs(d) > 3.4e38 ? (d > 0 ? INFINITY : -INFINITY) : static_cast<float>(d));
      }
    } else {
      HEADLAB_TRY(read_field(s, "plus", x.plus, true));
      HEADLAB_TRY(read_field(s, "minus", x.minus, true));
    }
    out.push_back(std::move(x));
  }
  return {};
}

Result<ModelRunRequest> decode_model_run_request(std::string_view body) {
  auto j = parse_json_object(body, kExample);
  if (!j) return tl::unexpected(j.error());
  HEADLAB_TRY(only_fields(*j, {"text", "bos", "truncate", "heads", "views", "rollout", "window", "top_k", "predictions", "encoding"}));
  ModelRunRequest r;
  HEADLAB_TRY(read_field(*j, "predictions", r.predictions, false));
  std::string encoding = "json";
  HEADLAB_TRY(read_field(*j, "encoding", encoding, false));
  if (encoding != "json" && encoding != "base64")
    return tl::unexpected(bad("Field 'encoding' must be \"json\" (rows of numbers, the default) or \"base64\" (each view one "
                              "string: probabilities as uint16 round(p * 65535), scores as float32, little-endian)."));
  r.compact = encoding == "base64";
  HEADLAB_TRY(read_field(*j, "text", r.text, true));
  HEADLAB_TRY(read_optional_bos(*j, r.bos));
  HEADLAB_TRY(read_field(*j, "truncate", r.truncate, false));
  HEADLAB_TRY(read_field(*j, "rollout", r.rollout, false));
  HEADLAB_TRY(read_field(*j, "top_k", r.top_k, false));
  HEADLAB_TRY(read_head_list(*j, r));
  HEADLAB_TRY(read_window(*j, r));
  if (auto it = j->find("views"); it != j->end()) {
    if (!it->is_array()) return tl::unexpected(bad("Field 'views' must be a list: \"pattern\", \"value_weighted\", \"scores\"."));
    r.want_pattern = false;
    for (const json& v : *it) {
      std::string name = v.is_string() ? v.get<std::string>() : "";
      if (name == "pattern") r.want_pattern = true;
      else if (name == "value_weighted") r.want_value_weighted = true;
      else if (name == "scores") r.want_scores = true;
      else return tl::unexpected(bad("Unknown view " + v.dump(-1, ' ', false, json::error_handler_t::replace).substr(0, 40) +
                                     ". Views: \"pattern\", \"value_weighted\", \"scores\"."));
    }
  }
  return r;
}

Result<ModelInterveneRequest> decode_model_intervene_request(std::string_view body) {
  auto j = parse_json_object(body, kExample);
  if (!j) return tl::unexpected(j.error());
  HEADLAB_TRY(only_fields(*j, {"text", "bos", "truncate", "ablate", "block", "replace", "steer", "top_k"}));
  ModelInterveneRequest r;
  HEADLAB_TRY(read_field(*j, "text", r.text, true));
  HEADLAB_TRY(read_optional_bos(*j, r.bos));
  HEADLAB_TRY(read_field(*j, "truncate", r.truncate, false));
  HEADLAB_TRY(read_field(*j, "top_k", r.top_k, false));
  auto list = [&](const char* name) -> Result<json> {
    auto it = j->find(name);
    if (it == j->end()) return json::array();
    if (!it->is_array() || it->size() > 256)
      return tl::unexpected(bad(std::string("Field '") + name + "' must be a list of at most 256 objects."));
    return *it;
  };
  auto ablate = list("ablate");
  if (!ablate) return tl::unexpected(ablate.error());
  for (const json& a : *ablate) {
    if (!a.is_object()) return tl::unexpected(bad("Each 'ablate' entry must be an object {layer, head, kind}."));
    HEADLAB_TRY(only_fields(a, {"layer", "head", "kind"}, " in 'ablate'"));
    InterventionSpec::Ablate x{0, 0, false};
    std::string kind = "zero";
    HEADLAB_TRY(read_field(a, "layer", x.layer, true));
    HEADLAB_TRY(read_field(a, "head", x.head, true));
    HEADLAB_TRY(read_field(a, "kind", kind, false));
    if (kind != "zero" && kind != "mean") return tl::unexpected(bad("An ablation's kind is \"zero\" or \"mean\"."));
    x.mean = kind == "mean";
    r.interventions.ablate.push_back(x);
  }
  auto block = list("block");
  if (!block) return tl::unexpected(block.error());
  for (const json& b : *block) {
    if (!b.is_object()) return tl::unexpected(bad("Each 'block' entry must be an object {layer, head, key}."));
    HEADLAB_TRY(only_fields(b, {"layer", "head", "key"}, " in 'block'"));
    InterventionSpec::Block x{0, -1, 0};
    HEADLAB_TRY(read_field(b, "layer", x.layer, true));
    HEADLAB_TRY(read_field(b, "head", x.head, false));
    HEADLAB_TRY(read_field(b, "key", x.key, true));
    r.interventions.block.push_back(x);
  }
  auto replace = list("replace");
  if (!replace) return tl::unexpected(replace.error());
  for (const json& p : *replace) {
    if (!p.is_object()) return tl::unexpected(bad("Each 'replace' entry must be an object {layer, head, kind}."));
    HEADLAB_TRY(only_fields(p, {"layer", "head", "kind"}, " in 'replace'"));
    InterventionSpec::Replace x{0, 0};
    std::string kind = "uniform";
    HEADLAB_TRY(read_field(p, "layer", x.layer, true));
    HEADLAB_TRY(read_field(p, "head", x.head, true));
    HEADLAB_TRY(read_field(p, "kind", kind, false));
    if (kind != "uniform") return tl::unexpected(bad("A pattern replacement's kind is \"uniform\"."));
    r.interventions.replace.push_back(x);
  }
  HEADLAB_TRY(read_steer_list(*j, r.steer));
  return r;
}

Result<ModelCacheRequest> decode_model_cache_request(std::string_view body) {
  auto j = parse_json_object(body, R"({"text": "...", "hooks": "blocks.*.attn.hook_pattern"})");
  if (!j) return tl::unexpected(j.error());
  HEADLAB_TRY(only_fields(*j, {"text", "ids", "prompts", "bos", "hooks"}));
  ModelCacheRequest r;
  HEADLAB_TRY(read_field(*j, "hooks", r.hooks, true));
  HEADLAB_TRY(read_optional_bos(*j, r.bos));
  const int given = int(j->contains("text")) + int(j->contains("ids")) + int(j->contains("prompts"));
  if (given != 1)
    return tl::unexpected(bad("Send exactly one of 'text' (a string), 'ids' (a list of token ids) and 'prompts' (a list "
                              "of strings, a batch padded to the longest)."));
  if (j->contains("text")) {
    std::string text;
    HEADLAB_TRY(read_field(*j, "text", text, true));
    r.texts.push_back(std::move(text));
  } else if (auto it = j->find("prompts"); it != j->end()) {
    if (!it->is_array() || it->empty() || it->size() > 64)
      return tl::unexpected(bad("Field 'prompts' must be a list of 1 to 64 strings."));
    for (const json& p : *it) {
      if (!p.is_string()) return tl::unexpected(bad("Each entry of 'prompts' must be a string."));
      r.texts.push_back(p.get<std::string>());
    }
  } else {
    const json& ids = (*j)["ids"];
    if (!ids.is_array() || ids.empty() || ids.size() > 100000)
      return tl::unexpected(bad("Field 'ids' must be a non-empty list of token ids."));
    for (const json& id : ids) {
      if (!id.is_number_integer() || id.get<std::int64_t>() < 0 || id.get<std::int64_t>() > kMaxRequestInteger)
        return tl::unexpected(bad("Each entry of 'ids' must be a token id (a whole number of 0 or more)."));
      r.ids.push_back(static_cast<int>(id.get<std::int64_t>()));
    }
  }
  return r;
}

std::string canonical_json(std::string_view body) {
  if (json_too_deep_at(body) != std::string_view::npos) return std::string(body);  // refused later, unparsed
  json j = json::parse(body, nullptr, false);
  return j.is_discarded() ? std::string(body) : dump(j);  // nlohmann objects keep keys sorted
}

namespace {

// The configured block's settings (model/config.h), for the explorer to show which family
// runs and how its heads are wired: "window" is each layer's sliding window (0 = every key).
json encode_block(const model::ModelConfig& c) {
  using M = model::ModelConfig;
  json window = json::array();
  for (int l = 0; l < c.n_layer; l++) window.push_back(c.window_of(l));
  const char* positions = c.positions == M::Positions::learned ? "learned" : c.positions == M::Positions::rotary ? "rotary" : "none";
  const char* mlp = c.mlp_kind == M::Mlp::gelu_tanh ? "gelu_tanh"
                    : c.mlp_kind == M::Mlp::gelu_erf ? "gelu_erf"
                    : c.mlp_kind == M::Mlp::swiglu   ? "swiglu"
                                                     : "geglu";
  // the global layers' rope scaling: none, linear (positions / factor), llama3, or GGUF's
  // per-frequency divisors (rope_freqs.weight)
  std::string rope_scaling = "none";
  if (c.rope_llama3_factor > 0) rope_scaling = "llama3";
  else if (!c.rope_freq_factors.empty()) rope_scaling = "per-frequency";
  if (c.rope_linear_factor != 1.0f) rope_scaling = rope_scaling == "none" ? "linear" : rope_scaling + "+linear";
  // Gemma 3's sliding layers rotate with their own base, unscaled (0: no layer does)
  float local_theta = 0.0f;
  for (int l = 0; l < c.n_layer; l++)
    if (c.rope_local_theta > 0.0f && c.window_of(l) > 0) local_theta = c.rope_local_theta;
  return {{"positions", positions},
          {"rotary_dim", c.rotary_size()},
          {"rotary_pairing", c.rotary_interleaved ? "interleaved" : "halves"},
          {"rope_theta", c.rope_theta},
          {"rope_scaling", rope_scaling},
          {"rope_scaling_factor", c.rope_llama3_factor > 0 ? c.rope_llama3_factor : c.rope_linear_factor},
          {"rope_local_theta", local_theta},
          {"norm", c.norm == M::Norm::layernorm ? "layernorm" : c.norm_plus_one ? "rmsnorm_plus_one" : "rmsnorm"},
          {"mlp_kind", mlp},
          {"n_kv_head", c.kv_heads()},
          {"head_size", c.head_size()},
          {"d_mlp", c.mlp_width()},
          {"qkv_bias", c.qkv_bias},
          {"qk_norm", c.qk_norm},
          {"parallel_residual", c.parallel_residual},
          {"sandwich_norm", c.sandwich_norm},
          {"attention_scale", c.attention_scale(0)},
          {"attn_softcap", c.attn_softcap},
          {"final_softcap", c.final_softcap},
          {"window", window}};
}

}  // namespace

std::string encode_model_info(const ModelInfo& i) {
  const auto& c = i.config;
  return dump({{"name", i.name},
               {"config",
                {{"n_layer", c.n_layer}, {"n_head", c.n_head}, {"n_embd", c.n_embd}, {"n_ctx", c.n_ctx},
                 {"vocab_size", c.vocab_size}, {"mlp", c.mlp}, {"tied", c.tied}, {"family", c.family},
                 {"block", encode_block(c)}}},
               {"bos_token", {{"id", i.bos_id}, {"text", i.bos_text}}},
               {"max_tokens", i.max_tokens},
               {"has_training_log", i.has_training_log}});
}

std::string encode_queue_place(const QueuePlace& p) {
  const char* state = p.state == QueuePlace::State::waiting   ? "waiting"
                      : p.state == QueuePlace::State::running ? "running"
                                                              : "unknown";
  return dump({{"state", state}, {"ahead", p.ahead}, {"waiting", p.waiting}});
}

Status check_request_id(const std::string& id) {
  const bool ok = !id.empty() && id.size() <= 64 && std::all_of(id.begin(), id.end(), [](char ch) {
    return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '-' || ch == '_';
  });
  if (ok) return {};
  return make_error(ErrorCode::invalid_argument,
                    "Parameter 'request_id' must be 1 to 64 letters, digits, '-' or '_' (the page makes one per run).");
}

std::string encode_model_run(const ModelRunResult& r) {
  const int T = static_cast<int>(r.tokens.size());
  const TokenWindow w = r.window.value_or(TokenWindow{{0, T}, {0, T}});
  json heads = json::array();
  for (const HeadView& h : r.heads) {
    json v = {{"layer", h.layer}, {"head", h.head}};
    if (r.compact) {
      if (r.sends.pattern) v["pattern"] = compact_probabilities(h.pattern);
      if (r.sends.value_weighted) v["value_weighted"] = compact_probabilities(h.value_weighted);
      if (r.sends.scores) v["scores"] = compact_floats(h.scores);
    } else {
      if (r.sends.pattern) v["pattern"] = window_rows(h.pattern, w);
      if (r.sends.value_weighted) v["value_weighted"] = window_rows(h.value_weighted, w);
      if (r.sends.scores) v["scores"] = window_rows(h.scores, w);
    }
    heads.push_back(std::move(v));
  }
  json out = {{"tokens", encode_tokens(r.tokens)}, {"n_layer", r.n_layer}, {"n_head", r.n_head}, {"heads", heads},
              {"truncated", r.truncated}};
  if (r.predictions) {
    json o = encode_outcome(r.outcome);
    out["top_next"] = o["top_next"];
    out["token_loss"] = o["token_loss"];
    out["loss"] = o["loss"];
  }
  if (r.sends.rollout) out["rollout"] = r.compact ? compact_probabilities(r.rollout) : window_rows(r.rollout, w);
  if (r.compact) out["encoding"] = "base64";
  if (r.window)
    out["window"] = {{"queries", {w.queries.begin, w.queries.end}}, {"keys", {w.keys.begin, w.keys.end}}};
  if (!r.logits.empty()) {
    // (T, V), unrounded: a reader may recompute the probabilities from them
    json logits = json::array();
    for (int t = 0; t < T; ++t)
      logits.push_back(std::vector<float>(r.logits.begin() + std::size_t(t) * r.V, r.logits.begin() + std::size_t(t + 1) * r.V));
    out["logits"] = std::move(logits);
  }
  return dump(out);
}

std::string encode_model_intervene(const ModelInterveneResult& r) {
  return dump({{"tokens", encode_tokens(r.tokens)},
               {"baseline", encode_outcome(r.baseline)},
               {"intervened", encode_outcome(r.intervened)},
               {"loss_change", std::round(double(r.intervened.loss - r.baseline.loss) * 1e5) / 1e5}});
}

std::string encode_training_log(const TrainingLog& log) {
  json rows = json::array();
  for (const auto& row : log.rows) {
    json r = json::array();
    for (double v : row) r.push_back(std::isnan(v) ? json(nullptr) : json(v));
    rows.push_back(std::move(r));
  }
  return dump({{"columns", log.columns}, {"rows", rows}});
}

// Keys in the order docs/api.md shows them (ordered_json); each score beside its chance in
// two maps; a score a constructed head does not have (no weights) is null in both.
std::string encode_scan_report(const analysis::ScanReport& r, const std::string& model_name) {
  using ordered = nlohmann::ordered_json;
  ordered j;
  j["model"] = model_name;
  j["probes"] = {{"natural_tokens", r.natural_tokens}, {"repeat_length", r.repeat_length}};
  if (r.has_icl)
    j["in_context_learning"] = {{"loss_first_copy", r.icl.loss_first_copy},
                                {"loss_second_copy", r.icl.loss_second_copy},
                                {"ratio", r.icl.ratio()}};
  ordered heads = ordered::array();
  for (const analysis::HeadReport& h : r.heads) {
    ordered hj;
    hj["layer"] = h.layer;
    hj["head"] = h.head;
    hj["name"] = h.name;
    ordered scores = ordered::object(), chance = ordered::object();
    for (const analysis::ScoreField& f : analysis::score_fields()) {
      if (f.needs_weights && !h.scores.has_weights) {
        scores[f.name] = nullptr;
        chance[f.name] = nullptr;
        continue;
      }
      scores[f.name] = (h.scores.*f.member).score;
      chance[f.name] = (h.scores.*f.member).chance;
    }
    hj["scores"] = std::move(scores);
    hj["chance"] = std::move(chance);
    ordered labels = ordered::array();
    for (const analysis::Label& l : h.labels)
      labels.push_back({{"label", l.name}, {"score", l.score}, {"threshold", l.threshold}, {"margin", l.margin()}});
    hj["labels"] = std::move(labels);
    heads.push_back(std::move(hj));
  }
  j["heads"] = std::move(heads);
  return j.dump(2, ' ', false, ordered::error_handler_t::replace) + "\n";
}

Result<QueryScoresRequest> decode_query_scores_request(std::string_view body) {
  auto j = parse_json_object(body, R"({"text": "the cat sat on the mat", "layer": 0, "head": 3, "query": 4})");
  if (!j) return tl::unexpected(j.error());
  HEADLAB_TRY(only_fields(*j, {"text", "bos", "layer", "head", "query"}));
  QueryScoresRequest r;
  HEADLAB_TRY(read_field(*j, "text", r.text, true));
  HEADLAB_TRY(read_optional_bos(*j, r.bos));
  HEADLAB_TRY(read_field(*j, "layer", r.layer, true));
  HEADLAB_TRY(read_field(*j, "head", r.head, true));
  HEADLAB_TRY(read_field(*j, "query", r.query, true));
  return r;
}

std::string encode_query_scores(const QueryScoresResult& r) {
  return dump({{"tokens", encode_tokens(r.tokens)},
               {"layer", r.layer},
               {"head", r.head},
               {"query", r.query},
               {"scores", rounded(r.scores)}});
}

Result<InductionComparisonRequest> decode_induction_comparison_request(std::string_view body) {
  auto j = parse_json_object(body, R"({"sentence": "the cat sat . the cat sat ."})");
  if (!j) return tl::unexpected(j.error());
  HEADLAB_TRY(only_fields(*j, {"sentence"}));
  InductionComparisonRequest r;
  HEADLAB_TRY(read_field(*j, "sentence", r.sentence, true));
  return r;
}

std::string encode_induction_comparison(const InductionComparison& c) {
  auto head = [](const InductionHeadOnText& h) {
    json rows = json::array();
    for (const auto& row : h.pattern) rows.push_back(rounded(row));
    json out = {{"name", h.name},
                {"pattern", rows},
                {"score", std::round(h.score.score * 1e4) / 1e4},
                {"chance", std::round(h.score.chance * 1e4) / 1e4}};
    if (h.layer >= 0) {
      out["layer"] = h.layer;
      out["head"] = h.head;
    }
    return out;
  };
  return dump({{"tokens", encode_tokens(c.tokens)},
               {"measure", "prefix_matching"},
               {"queries_scored", c.queries_scored},
               {"model_head_labelled", c.model_head_labelled},
               {"rule_built", head(c.rule_built)},
               {"model_head", head(c.model_head)}});
}

}  // namespace headlab::server
