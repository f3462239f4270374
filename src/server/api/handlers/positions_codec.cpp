// server/api/handlers/positions_codec.cpp — the word-order routes' JSON (see positions_codec.h).
#include "server/api/handlers/positions_codec.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "server/api/json_fields.h"

namespace headlab::server {
using json = nlohmann::json;

namespace {

double r5(double v) { return std::round(v * 1e5) / 1e5; }

json numbers(const std::vector<float>& v) {
  json out = json::array();
  for (float x : v) out.push_back(r5(x));
  return out;
}

// (N, N) row-major as N rows.
json square(const std::vector<float>& m, int N) {
  json rows = json::array();
  for (int i = 0; i < N; ++i) {
    json row = json::array();
    for (int j = 0; j < N; ++j) row.push_back(r5(m[std::size_t(i) * N + j]));
    rows.push_back(std::move(row));
  }
  return rows;
}

json tokens_json(const std::vector<model::Token>& tokens) {
  json out = json::array();
  for (const auto& t : tokens) out.push_back({{"id", t.id}, {"text", t.text}, {"begin", t.begin}, {"end", t.end}});
  return out;
}

json share_json(const course::PreviousTokenShare& s) {
  return {{"from", s.from}, {"to", s.to}, {"queries", s.queries}, {"share", r5(s.share)}, {"chance", r5(s.chance)}};
}

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

Status read_floats(const json& j, const char* name, std::vector<float>& out) {
  auto it = j.find(name);
  if (it == j.end()) return {};
  if (!it->is_array() || it->size() > 512)
    return make_error(ErrorCode::invalid_argument, std::string("Field '") + name + "' must be a list of at most 512 numbers.");
  if (it->empty())  // it was read as "the lesson's own vector", as the field left out is
    return make_error(ErrorCode::invalid_argument, std::string("Field '") + name +
                                                       "' is an empty list. Leave it out for the lesson's vector, or send its numbers.");
  for (const json& v : *it) {
    if (!v.is_number() || !std::isfinite(v.get<double>()) || std::fabs(v.get<double>()) > 1e6)
      return make_error(ErrorCode::invalid_argument, std::string("Field '") + name + "' must hold numbers between -1e6 and 1e6.");
    out.push_back(v.get<float>());
  }
  return {};
}

Status read_ints(const json& j, const char* name, std::vector<int>& out, std::size_t most) {
  auto it = j.find(name);
  if (it == j.end()) return {};
  if (!it->is_array() || it->size() > most)
    return make_error(ErrorCode::invalid_argument,
                      std::string("Field '") + name + "' must be a list of at most " + std::to_string(most) + " whole numbers.");
  if (it->empty())  // "order": [] was read as the text's own order, as the field left out is
    return make_error(ErrorCode::invalid_argument, std::string("Field '") + name +
                                                       "' is an empty list. Leave it out for the text as typed, or list every token once.");
  for (const json& v : *it) {
    if (!v.is_number_integer() || v.get<long long>() < 0 || v.get<long long>() > 100000)
      return make_error(ErrorCode::invalid_argument, std::string("Field '") + name + "' must hold whole numbers from 0 to 100000.");
    out.push_back(v.get<int>());
  }
  return {};
}

}  // namespace

Result<RopeRequest> decode_rope_request(std::string_view body) {
  auto j = parse_json_object(body, R"({"pairs": [[5, 2], [9, 6]], "theta": 10000})");
  if (!j) return tl::unexpected(j.error());
  RopeRequest r;
  HEADLAB_TRY(only_fields(*j, {"q", "k", "theta", "pairs"}));
  HEADLAB_TRY(read_floats(*j, "q", r.q));
  HEADLAB_TRY(read_floats(*j, "k", r.k));
  if (auto t = j->find("theta"); t != j->end()) {
    if (!t->is_number()) return make_error(ErrorCode::invalid_argument, "Field 'theta' must be a number, like 10000.");
    // clamped before the cast (a double past float's range is undefined as a float); rope_dots refuses it
    r.theta = static_cast<float>(std::clamp(t->get<double>(), -1e30, 1e30));
  }
  auto p = j->find("pairs");
  if (p == j->end() || !p->is_array())
    return make_error(ErrorCode::invalid_argument, "Field 'pairs' must be a list of [m, n] positions, like [[5, 2], [9, 6]].");
  for (const json& pair : *p) {
    if (!pair.is_array() || pair.size() != 2 || !pair[0].is_number_integer() || !pair[1].is_number_integer())
      return make_error(ErrorCode::invalid_argument, "Each of 'pairs' is [m, n], two whole numbers.");
    const long long m = pair[0].get<long long>(), n = pair[1].get<long long>();
    if (m < 0 || n < 0 || m > 100000 || n > 100000)
      return make_error(ErrorCode::invalid_argument, "Positions in 'pairs' lie in 0 to " + std::to_string(analysis::kMaxRopePosition) + ".");
    r.pairs.push_back({int(m), int(n)});
  }
  return r;
}

Result<WavelengthQuery> decode_wavelength_query(const std::map<std::string, std::string>& query) {
  WavelengthQuery q;
  for (const auto& [k, v] : query) {
    if (k == "theta") q.theta = v;
    else if (k == "head_size") q.head_size = v;
    else return make_error(ErrorCode::invalid_argument, "Unknown parameter '" + k.substr(0, 32) + "'. Allowed: theta, head_size.");
  }
  return q;
}

Result<ContentOnlyRequest> decode_content_only_request(std::string_view body) {
  auto j = parse_json_object(body, R"({"text": "the cat sat on the mat", "head": 0, "order": [5, 4, 3, 2, 1, 0]})");
  if (!j) return tl::unexpected(j.error());
  ContentOnlyRequest r;
  HEADLAB_TRY(only_fields(*j, {"text", "head", "order"}));
  HEADLAB_TRY(read_field(*j, "text", r.text, true));
  HEADLAB_TRY(read_field(*j, "head", r.head, false));
  HEADLAB_TRY(read_ints(*j, "order", r.order, 256));
  return r;
}

Result<LengthRequest> decode_length_request(std::string_view body) {
  auto j = parse_json_object(body, R"({"model": "headlab-rope"})");
  if (!j) return tl::unexpected(j.error());
  LengthRequest r;
  HEADLAB_TRY(only_fields(*j, {"model", "text"}));
  HEADLAB_TRY(read_field(*j, "model", r.model, true));
  HEADLAB_TRY(read_field(*j, "text", r.text, false));
  if (j->contains("text") && r.text.find_first_not_of(" \t\r\n") == std::string::npos)  // was read as "the held-out text"
    return make_error(ErrorCode::invalid_argument, "Field 'text' is empty. Leave it out for the model's held-out text, or send one.");
  return r;
}

Result<LessonRunRequest> decode_lesson_run_request(std::string_view body) {
  auto j = parse_json_object(body, R"({"model": "headlab-nopos", "text": "the cat sat", "layer": 0, "head": 1})");
  if (!j) return tl::unexpected(j.error());
  LessonRunRequest r;
  HEADLAB_TRY(only_fields(*j, {"model", "text", "layer", "head"}));
  HEADLAB_TRY(read_field(*j, "model", r.model, true));
  HEADLAB_TRY(read_field(*j, "text", r.text, true));
  HEADLAB_TRY(read_field(*j, "layer", r.layer, true));
  HEADLAB_TRY(read_field(*j, "head", r.head, true));
  return r;
}

std::string encode_rope(const RopeAnswer& a) {
  json pairs = json::array();
  for (const auto& d : a.dots)
    pairs.push_back({{"m", d.m}, {"n", d.n}, {"offset", d.m - d.n}, {"q", numbers(d.q)}, {"k", numbers(d.k)}, {"dot", r5(d.dot)}});
  return dump({{"theta", a.theta}, {"head_size", a.head_size}, {"pairs", pairs}});
}

std::string encode_wavelengths(const WavelengthAnswer& a) {
  json pairs = json::array();
  for (const auto& p : a.pairs) pairs.push_back({{"i", p.i}, {"frequency", p.frequency}, {"wavelength", p.wavelength}});
  json presets = json::array();
  for (const auto& p : a.presets)
    presets.push_back({{"name", p.name}, {"theta", p.theta}, {"head_size", p.head_size}, {"context", p.context}});
  return dump({{"theta", a.theta}, {"head_size", a.head_size}, {"pairs", pairs}, {"presets", presets}});
}

std::string encode_positions(const PositionsAnswer& a) {
  const int N = static_cast<int>(a.positions.size());
  json learned = a.learned.empty() ? json(nullptr) : square(a.learned, N);
  return dump({{"model", a.model.empty() ? json(nullptr) : json(a.model)},
               {"n_ctx", a.n_ctx},
               {"n_embd", a.n_embd},
               {"positions", a.positions},
               {"learned", learned},
               {"learned_note", a.learned_note},
               {"sinusoidal", square(a.sinusoidal, N)}});
}

std::string encode_content_only(const ContentOnlyAnswer& a) {
  return dump({{"tokens", tokens_json(a.tokens)},
               {"order", a.order},
               {"head", a.head},
               {"n_head", a.n_head},
               {"pattern", square(a.pattern, static_cast<int>(a.tokens.size()))}});
}

std::string encode_positions_models(const std::vector<LessonModelSummary>& models) {
  json out = json::array();
  auto best = [](const analysis::BestHead& b, double chance) {
    return json{{"layer", b.layer}, {"head", b.head}, {"score", r5(b.score)}, {"chance", r5(chance)}};
  };
  for (const auto& s : models) {
    json m = {{"positions", s.positions}, {"name", s.name}, {"title", s.title}, {"available", s.available}};
    if (!s.available) {
      m["error"] = s.error;
    } else {
      m["config_positions"] = s.config_positions;
      m["n_layer"] = s.n_layer;
      m["n_head"] = s.n_head;
      m["n_ctx"] = s.n_ctx;
      m["trained_context"] = s.trained_context;
      m["run_limit"] = s.run_limit;
      m["previous_token"] = best(s.previous_token, s.previous_token_chance);
      m["induction"] = best(s.induction, s.induction_chance);
      json bands = json::array();
      for (const auto& b : s.previous_by_position) bands.push_back(share_json(b));
      m["previous_by_position"] = std::move(bands);
      json sinks = json::array();
      for (const auto& k : s.sinks)
        sinks.push_back({{"layer", k.layer}, {"head", k.head}, {"first_token", r5(k.first_token)},
                         {"value_weighted", r5(k.value_weighted)}});
      m["sinks"] = std::move(sinks);
    }
    out.push_back(std::move(m));
  }
  return dump({{"models", out}});
}

std::string encode_length(const LengthAnswer& a) {
  return dump({{"model", a.model},
               {"positions", a.positions},
               {"trained_context", a.trained_context},
               {"run_limit", a.run_limit},
               {"T", a.T},
               {"token_loss", numbers(a.token_loss)},
               {"inside", r5(a.inside)},
               {"beyond", std::isnan(a.beyond) ? json(nullptr) : json(r5(a.beyond))},
               {"beyond_count", a.beyond_count}});
}

std::string encode_lesson_run(const LessonRunAnswer& a) {
  return dump({{"model", a.model},
               {"positions", a.positions},
               {"tokens", tokens_json(a.tokens)},
               {"pattern", square(a.pattern, static_cast<int>(a.tokens.size()))},
               {"previous_token", share_json(a.previous_token)},
               {"value_weighted", square(a.value_weighted, static_cast<int>(a.tokens.size()))},
               {"first_token", {{"rows", a.first_token.rows},
                                {"attention", r5(a.first_token.attention)},
                                {"value_weighted", r5(a.first_token.value_weighted)},
                                {"parks", a.first_token.rows > 0 && a.first_token.parks()}}}});
}

}  // namespace headlab::server
