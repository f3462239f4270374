// server/api/patch_codec.cpp — activation patching's JSON both ways (see patch_codec.h).
#include "server/api/patch_codec.h"

#include <charconv>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "server/api/json_fields.h"
#include "server/api/model_codec.h"

namespace headlab::server {
namespace {

using nlohmann::json;

Error bad(const std::string& message) { return Error{ErrorCode::invalid_argument, message}; }

constexpr std::string_view kExample =
    R"({"clean": "When Mary and John went to the store, John gave a drink to", "corrupted": "When Mary and John went to the store, Mary gave a drink to", "answer": " Mary", "wrong": " John", "what": "resid_pre"})";

// A float32 as the shortest decimal that reads back to it (0.40830809, not 0.40830808877944946).
double shortest(float v) {
  if (!std::isfinite(v)) return v;
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf - 1, v);
  *end = '\0';
  return std::strtod(buf, nullptr);
}

// values (row-major over shape) as nested arrays from axis `d` on
nlohmann::ordered_json nest(const std::vector<float>& values, const std::vector<int>& shape, std::size_t d, std::size_t& at) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (int i = 0; i < shape[d]; i++) {
    if (d + 1 == shape.size()) out.push_back(shortest(values[at++]));
    else out.push_back(nest(values, shape, d + 1, at));
  }
  return out;
}

Status read_int_list(const json& j, const char* name, std::vector<int>& out) {
  auto it = j.find(name);
  if (it == j.end() || it->is_null()) return {};
  if (!it->is_array() || it->size() > 100000)
    return tl::unexpected(bad(std::string("Field '") + name + "' must be a list of whole numbers, like [3, 4, 5]."));
  for (const json& v : *it) {
    if (!v.is_number_integer() || v.get<long long>() < 0 || v.get<long long>() > kMaxRequestInteger)
      return tl::unexpected(bad(std::string("Field '") + name + "' must hold whole numbers from 0, like [3, 4, 5]."));
    out.push_back(static_cast<int>(v.get<long long>()));
  }
  return {};
}

// "loss_positions": {"from": 9, "to": 16} ("to" left out or null: to the end), only with "metric": "loss".
Status read_loss_positions(const json& j, research::PatchMetric metric, std::optional<research::LossPositions>& out) {
  auto it = j.find("loss_positions");
  if (it == j.end() || it->is_null()) return {};
  const std::string form = "Field 'loss_positions' must be {\"from\": 9, \"to\": 16}: the loss metric's positions "
                           "[from, to), position t's loss being token t+1's (\"to\" left out: to the end).";
  if (!it->is_object()) return tl::unexpected(bad(form));
  HEADLAB_TRY(only_fields(*it, {"from", "to"}, " in 'loss_positions'"));
  research::LossPositions lp;
  for (const char* name : {"from", "to"}) {
    auto v = it->find(name);
    if (v == it->end() || v->is_null()) continue;
    if (!v->is_number_integer() || v->get<long long>() < 0 || v->get<long long>() > kMaxRequestInteger)
      return tl::unexpected(bad(form));
    (std::string_view(name) == "from" ? lp.from : lp.to) = static_cast<int>(v->get<long long>());
  }
  if (metric != research::PatchMetric::loss)
    return tl::unexpected(bad("Field 'loss_positions' says which positions' losses the loss metric averages, and "
                              "'metric' is \"" + std::string(research::patch_metric_name(metric)) +
                              "\": send \"metric\": \"loss\", or leave 'loss_positions' out."));
  out = lp;
  return {};
}

Status read_pair(const json& j, research::PromptPair& p, const std::string& where) {
  HEADLAB_TRY(read_field(j, "clean", p.clean, true));
  HEADLAB_TRY(read_field(j, "corrupted", p.corrupted, true));
  HEADLAB_TRY(read_field(j, "answer", p.answer, false));
  HEADLAB_TRY(read_field(j, "wrong", p.wrong, false));
  if (p.clean.empty() || p.corrupted.empty())
    return tl::unexpected(bad("Fields 'clean' and 'corrupted'" + where + " must not be empty."));
  return {};
}

}  // namespace

Result<ModelPatchRequest> decode_model_patch_request(std::string_view body) {
  auto j = parse_json_object(body, kExample);
  if (!j) return tl::unexpected(j.error());
  HEADLAB_TRY(only_fields(*j, {"clean", "corrupted", "clean_ids", "corrupted_ids", "answer", "wrong", "prompts", "bos",
                               "what", "metric", "noising", "layers", "positions", "loss_positions", "steer", "method"}));
  ModelPatchRequest r;
  if (j->contains("clean_ids") || j->contains("corrupted_ids")) {
    for (const char* text : {"clean", "corrupted", "prompts"})
      if (j->contains(text))
        return tl::unexpected(bad(std::string("Send the pair as text ('clean', 'corrupted') or as ids ('clean_ids', "
                                              "'corrupted_ids'), not both: '") + text + "' is given beside the ids."));
    if (!j->contains("clean_ids") || !j->contains("corrupted_ids"))
      return tl::unexpected(bad("Send both 'clean_ids' and 'corrupted_ids' (lists of token ids of the same length)."));
    HEADLAB_TRY(read_int_list(*j, "clean_ids", r.clean_ids));
    HEADLAB_TRY(read_int_list(*j, "corrupted_ids", r.corrupted_ids));
    research::PromptPair pair;
    HEADLAB_TRY(read_field(*j, "answer", pair.answer, false));
    HEADLAB_TRY(read_field(*j, "wrong", pair.wrong, false));
    r.prompts.push_back(std::move(pair));
  } else if (auto it = j->find("prompts"); it != j->end()) {
    for (const char* one : {"clean", "corrupted", "answer", "wrong"})
      if (j->contains(one))
        return tl::unexpected(bad(std::string("Send either 'prompts' (a batch) or 'clean' and 'corrupted' (one pair), "
                                              "not both: '") + one + "' is given beside 'prompts'."));
    if (!it->is_array() || it->empty() || it->size() > 1000)
      return tl::unexpected(bad("Field 'prompts' must be a list of 1 to 1000 objects {\"clean\", \"corrupted\", "
                                "\"answer\", \"wrong\"}."));
    for (std::size_t i = 0; i < it->size(); i++) {
      const json& p = (*it)[i];
      const std::string where = " in 'prompts'[" + std::to_string(i) + "]";
      if (!p.is_object())
        return tl::unexpected(bad("Each entry of 'prompts' must be an object {\"clean\", \"corrupted\", \"answer\", "
                                  "\"wrong\"}; 'prompts'[" + std::to_string(i) + "] is not."));
      HEADLAB_TRY(only_fields(p, {"clean", "corrupted", "answer", "wrong"}, where));
      research::PromptPair pair;
      HEADLAB_TRY(read_pair(p, pair, where));
      r.prompts.push_back(std::move(pair));
    }
  } else {
    research::PromptPair pair;
    HEADLAB_TRY(read_pair(*j, pair, ""));
    r.prompts.push_back(std::move(pair));
  }
  if (j->contains("bos")) {
    bool b = true;
    HEADLAB_TRY(read_field(*j, "bos", b, true));
    r.bos = b;
  }
  std::string what = "resid_pre", metric = "logit_diff";
  HEADLAB_TRY(read_field(*j, "what", what, false));
  HEADLAB_TRY(read_field(*j, "metric", metric, false));
  auto w = research::parse_patch_what(what);
  if (!w) return tl::unexpected(bad("Unknown 'what' \"" + what.substr(0, 40) + "\". It is one of: " + research::patch_what_list() + "."));
  r.what = *w;
  auto m = research::parse_patch_metric(metric);
  if (!m)
    return tl::unexpected(bad("Unknown 'metric' \"" + metric.substr(0, 40) +
                              "\". It is one of: logit_diff, normalized, loss, logprob."));
  r.metric = *m;
  std::string method = "activation";
  HEADLAB_TRY(read_field(*j, "method", method, false));
  auto how = research::parse_patch_method(method);
  if (!how)
    return tl::unexpected(bad("Unknown 'method' \"" + method.substr(0, 40) +
                              "\". It is activation (one patched run per index, the default) or attribution (one "
                              "backward, a linear estimate)."));
  r.method = *how;
  HEADLAB_TRY(read_field(*j, "noising", r.noising, false));
  HEADLAB_TRY(read_int_list(*j, "layers", r.layers));
  HEADLAB_TRY(read_int_list(*j, "positions", r.positions));
  // An empty list names nothing; the sweep read it as "every one" (64 forwards for [] on the built-in model).
  for (auto [name, list] : {std::pair{"layers", &r.layers}, std::pair{"positions", &r.positions}})
    if (auto it = j->find(name); it != j->end() && it->is_array() && list->empty())
      return tl::unexpected(bad(std::string("Field '") + name + "' is an empty list, which names none. Leave it out for every one, "
                                                                "or list some, like [3, 4, 5]."));
  HEADLAB_TRY(read_loss_positions(*j, r.metric, r.loss_positions));
  HEADLAB_TRY(read_steer_list(*j, r.steer));
  return r;
}

nlohmann::ordered_json encode_patch_tokens(const std::vector<model::Token>& tokens) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& t : tokens) out.push_back({{"id", t.id}, {"text", t.text}});
  return out;
}

std::string encode_model_patch(const ModelPatchResult& m) {
  const research::PatchResult& r = m.result;
  std::size_t at = 0;
  nlohmann::ordered_json j = {{"what", std::string(research::patch_what_name(r.what))},
            {"metric", std::string(research::patch_metric_name(r.metric))},
            {"direction", r.noising ? "noising" : "denoising"},
            {"axes", r.axes},
            {"values", nest(r.values, r.shape, 0, at)},
            {"layers", r.layers},
            {"positions", r.positions},
            {"heads", r.heads},
            {"clean", shortest(r.clean)},
            {"corrupted", shortest(r.corrupted)},
            {"tokens", encode_patch_tokens(m.tokens)},
            {"corrupted_tokens", encode_patch_tokens(m.corrupted_tokens)},
            {"pairs", m.pairs},
            {"cost",
             {{"forwards", r.cost.forwards}, {"block_tokens", r.cost.block_tokens}, {"multiply_adds", r.cost.multiply_adds}}},
            {"skipped", r.skipped}};
  if (!r.patch_types.empty()) j["patch_types"] = r.patch_types;
  if (r.loss_positions) {  // the loss metric's positions [from, to), as asked (to null: to the end)
    nlohmann::ordered_json to = nullptr;
    if (r.loss_positions->to >= 0) to = r.loss_positions->to;
    j["loss_positions"] = {{"from", r.loss_positions->from}, {"to", to}};
  }
  // attribution patching's values are estimates (research/attribution_patching.h): said so
  if (m.method == research::PatchMethod::attribution) j["method"] = "attribution";
  if (!r.steering.empty()) {
    nlohmann::ordered_json steer = nlohmann::ordered_json::array();
    for (const auto& st : r.steering)
      steer.push_back({{"layer", st.layer}, {"coef", shortest(st.coef)}, {"from", st.from}, {"rows", st.rows}});
    j["steer"] = steer;  // every run of the sweep was steered so
  }
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace headlab::server
