// server/api/handlers/lens_codec.cpp — nlohmann::json both ways for the lens, attribution and
// composition answers (see lens_codec.h).
#include "server/api/handlers/lens_codec.h"

#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>

#include "server/api/json_fields.h"

namespace headlab::server {
namespace {

using nlohmann::json;

Error bad(const std::string& message) { return Error{ErrorCode::invalid_argument, message}; }

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

json token(const model::BpeTokenizer* tok, int id) {
  return {{"id", id}, {"text", tok ? tok->token_bytes(id) : std::string()}};
}

json input_tokens(const analysis::RunInput& in) {
  json out = json::array();
  for (const model::Token& t : in.tokens) out.push_back({{"id", t.id}, {"text", t.text}});
  return out;
}

// The prompt's fields: "text" or "ids", "bos", "truncate".
Status read_prompt(const json& j, research::TextPrompt& p) {
  HEADLAB_TRY(read_field(j, "text", p.text, false));
  if (auto it = j.find("ids"); it != j.end()) {
    if (!it->is_array()) return tl::unexpected(bad("Field 'ids' must be a list of token ids."));
    for (const json& v : *it) {
      if (!v.is_number_integer() || v.get<long long>() < 0 || v.get<long long>() > kMaxRequestInteger)
        return tl::unexpected(bad("Each entry of 'ids' must be a token id (a whole number >= 0)."));
      p.ids.push_back(static_cast<int>(v.get<long long>()));
    }
  }
  const bool has_text = j.contains("text"), has_ids = j.contains("ids");
  if (has_text != has_ids && p.text.empty() && p.ids.empty())  // one sent, and empty: say which
    return tl::unexpected(bad(has_text ? "Field 'text' is empty: send the text to read, like \"the cat sat\"."
                                       : "Field 'ids' is an empty list: send at least one token id."));
  if (p.text.empty() == p.ids.empty())
    return tl::unexpected(bad("Send exactly one of 'text' (a string) and 'ids' (a list of token ids)."));
  if (auto it = j.find("bos"); it != j.end()) {
    if (!it->is_boolean()) return tl::unexpected(bad("Field 'bos' must be true or false."));
    p.bos = it->get<bool>();
  }
  HEADLAB_TRY(read_field(j, "truncate", p.input.truncate, false));
  return {};
}

json nullable(float v) { return std::isfinite(v) ? json(v) : json(nullptr); }

}  // namespace

std::optional<std::pair<int, int>> parse_head_name(std::string_view s) {
  const auto dot = s.find('.');
  if (dot == std::string_view::npos || dot == 0 || dot + 1 == s.size()) return std::nullopt;
  int l = -1, h = -1;
  auto [e1, c1] = std::from_chars(s.data(), s.data() + dot, l);
  auto [e2, c2] = std::from_chars(s.data() + dot + 1, s.data() + s.size(), h);
  if (c1 != std::errc() || c2 != std::errc() || e1 != s.data() + dot || e2 != s.data() + s.size() || l < 0 || h < 0)
    return std::nullopt;
  return std::make_pair(l, h);
}

Result<research::LensTextRequest> decode_lens_request(std::string_view body) {
  auto j = parse_json_object(body, R"({"text": "When Mary and John went to the store, John gave a drink to", "answers": [" Mary"]})");
  if (!j) return tl::unexpected(j.error());
  HEADLAB_TRY(only_fields(*j, {"text", "ids", "bos", "truncate", "answers", "top_k", "incl_mid"}));
  research::LensTextRequest r;
  HEADLAB_TRY(read_prompt(*j, r.prompt));
  if (auto it = j->find("answers"); it != j->end()) {
    if (!it->is_array() || it->size() > 16)
      return tl::unexpected(bad("Field 'answers' must be a list of at most 16 tokens, each a string like \" Mary\" or \"#1234\"."));
    for (const json& v : *it) {
      if (!v.is_string()) return tl::unexpected(bad("Each entry of 'answers' must be a string like \" Mary\" or \"#1234\"."));
      r.answers.push_back(v.get<std::string>());
    }
  }
  HEADLAB_TRY(read_field(*j, "top_k", r.top_k, false));
  HEADLAB_TRY(read_field(*j, "incl_mid", r.incl_mid, false));
  if (r.top_k < 0 || r.top_k > 100) return tl::unexpected(bad("Field 'top_k' must be in 0..100."));
  return r;
}

Result<AttributeRequest> decode_attribute_request(std::string_view body) {
  auto j = parse_json_object(body, R"({"text": "When Mary and John went to the store, John gave a drink to", "answer": " Mary", "wrong": " John"})");
  if (!j) return tl::unexpected(j.error());
  HEADLAB_TRY(only_fields(*j, {"text", "ids", "bos", "truncate", "answer", "wrong", "position", "prompts"}));
  AttributeRequest r;
  research::AttributionTextRequest& one = r.one;
  HEADLAB_TRY(read_field(*j, "answer", one.answer, false));
  HEADLAB_TRY(read_field(*j, "wrong", one.wrong, false));
  if (auto it = j->find("prompts"); it != j->end()) {
    if (j->contains("text") || j->contains("ids") || j->contains("position"))
      return tl::unexpected(bad("Send 'prompts' or a single 'text' / 'ids', not both ('position' is each prompt's last)."));
    if (!it->is_array() || it->empty() || it->size() > kMaxAttributePrompts)
      return tl::unexpected(bad("Field 'prompts' must be a list of 1 to " + std::to_string(kMaxAttributePrompts) +
                                " objects {\"text\", \"answer\", \"wrong\"}."));
    research::AttributionBatchRequest b;
    for (const json& p : *it) {
      if (!p.is_object()) return tl::unexpected(bad("Each entry of 'prompts' must be an object {\"text\", \"answer\", \"wrong\"}."));
      HEADLAB_TRY(only_fields(p, {"text", "answer", "wrong"}, " in 'prompts'"));
      research::PromptPair pair;
      HEADLAB_TRY(read_field(p, "text", pair.clean, true));
      HEADLAB_TRY(read_field(p, "answer", pair.answer, false));
      HEADLAB_TRY(read_field(p, "wrong", pair.wrong, false));
      b.prompts.push_back(std::move(pair));
    }
    b.answer = one.answer;
    b.wrong = one.wrong;
    if (auto bos = j->find("bos"); bos != j->end()) {
      if (!bos->is_boolean()) return tl::unexpected(bad("Field 'bos' must be true or false."));
      b.bos = bos->get<bool>();
    }
    HEADLAB_TRY(read_field(*j, "truncate", one.prompt.input.truncate, false));
    r.batch = std::move(b);
    return r;
  }
  HEADLAB_TRY(read_prompt(*j, one.prompt));
  if (one.answer.empty()) return tl::unexpected(bad("Missing field 'answer'."));
  HEADLAB_TRY(read_field(*j, "position", one.position, false));
  // a negative one counts from the end (-1: the last); research/attribution says when it is outside the text
  return r;
}

namespace {

Status check_compose(const ComposeRequest& r) {
  if (r.kind != "q" && r.kind != "k" && r.kind != "v" && r.kind != "all")
    return tl::unexpected(bad("Field 'kind' must be \"q\", \"k\", \"v\" or \"all\"."));
  if (r.top < 1 || r.top > 100) return tl::unexpected(bad("Field 'top' must be in 1..100."));
  if (r.baseline_samples < 1 || r.baseline_samples > 1000)
    return tl::unexpected(bad("Field 'baseline_samples' must be in 1..1000."));
  if (r.threshold && !(*r.threshold >= 0 && *r.threshold <= 1))
    return tl::unexpected(bad("Field 'threshold' must be a score in [0, 1]."));
  return {};
}

}  // namespace

Result<ComposeRequest> decode_compose_request(std::string_view body) {
  if (body.find_first_not_of(" \t\r\n") == std::string_view::npos) return ComposeRequest{};  // an empty POST: the defaults
  auto j = parse_json_object(body, R"({"kind": "k", "fold_ln": false, "threshold": 0.15, "circuit": "1.2", "top": 10})");
  if (!j) return tl::unexpected(j.error());
  HEADLAB_TRY(only_fields(*j, {"kind", "fold_ln", "threshold", "circuit", "top", "copying", "baseline_samples"}));
  ComposeRequest r;
  HEADLAB_TRY(read_field(*j, "kind", r.kind, false));
  HEADLAB_TRY(read_field(*j, "fold_ln", r.fold_ln, false));
  HEADLAB_TRY(read_field(*j, "copying", r.copying, false));
  HEADLAB_TRY(read_field(*j, "top", r.top, false));
  HEADLAB_TRY(read_field(*j, "baseline_samples", r.baseline_samples, false));
  if (auto it = j->find("threshold"); it != j->end() && !it->is_null()) {
    if (!it->is_number()) return tl::unexpected(bad("Field 'threshold' must be a number."));
    r.threshold = it->get<double>();
  }
  if (auto it = j->find("circuit"); it != j->end() && !it->is_null()) {
    auto head = it->is_string() ? parse_head_name(it->get<std::string>()) : std::nullopt;
    if (!head) return tl::unexpected(bad("Field 'circuit' must name a head as \"layer.head\", like \"1.2\"."));
    r.circuit = head;
  }
  HEADLAB_TRY(check_compose(r));
  return r;
}

Result<ComposeRequest> decode_compose_query(const std::map<std::string, std::string>& q) {
  ComposeRequest r;
  for (const auto& entry : q) {
    const std::string& key = entry.first;  // not a structured binding: clang 14 cannot capture one
    const std::string& value = entry.second;
    auto whole = [&](int& out) -> Status {
      int v = 0;
      auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
      if (ec != std::errc() || end != value.data() + value.size())
        return tl::unexpected(bad("Parameter '" + key + "' must be a whole number."));
      out = v;
      return {};
    };
    if (key == "kind") r.kind = value;
    else if (key == "fold_ln" || key == "copying") {
      if (value != "true" && value != "false") return tl::unexpected(bad("Parameter '" + key + "' must be true or false."));
      (key == "fold_ln" ? r.fold_ln : r.copying) = value == "true";
    } else if (key == "threshold") {
      char* end = nullptr;
      const double v = std::strtod(value.c_str(), &end);
      if (value.empty() || end != value.c_str() + value.size()) return tl::unexpected(bad("Parameter 'threshold' must be a number."));
      r.threshold = v;
    } else if (key == "circuit") {
      r.circuit = parse_head_name(value);
      if (!r.circuit) return tl::unexpected(bad("Parameter 'circuit' must name a head as \"layer.head\", like \"1.2\"."));
    } else if (key == "top") {
      HEADLAB_TRY(whole(r.top));
    } else if (key == "baseline_samples") {
      HEADLAB_TRY(whole(r.baseline_samples));
    } else {
      return tl::unexpected(bad("Unknown parameter '" + key + "'; known: kind, fold_ln, threshold, circuit, top, copying, baseline_samples."));
    }
  }
  HEADLAB_TRY(check_compose(r));
  return r;
}

std::string encode_compose_request(const ComposeRequest& r) {
  json j = {{"kind", r.kind}, {"fold_ln", r.fold_ln}, {"top", r.top}, {"copying", r.copying}, {"baseline_samples", r.baseline_samples}};
  if (r.threshold) j["threshold"] = *r.threshold;
  if (r.circuit) j["circuit"] = std::to_string(r.circuit->first) + "." + std::to_string(r.circuit->second);
  return dump(j);
}

std::string encode_lens(const research::LensTextAnswer& a, const model::BpeTokenizer* tok) {
  const research::LensResult& r = a.lens;
  json values = json::array();
  for (int e = 0; e < r.entries; e++) {
    json row = json::array();
    for (int t = 0; t < r.T; t++) {
      const research::LensCell& c = r.cell(e, t);
      json top = json::array();
      for (const research::LensToken& k : c.top) {
        json x = token(tok, k.id);
        x["logit"] = k.logit;
        x["prob"] = k.prob;
        top.push_back(std::move(x));
      }
      json answers = json::array();
      for (const research::LensAnswer& k : c.answers)
        answers.push_back(
            {{"id", k.id}, {"rank", k.rank}, {"logit", k.logit}, {"prob", k.prob}, {"logprob", nullable(k.logprob)}});
      row.push_back({{"top", std::move(top)}, {"entropy", c.entropy}, {"kl_final", c.kl_final}, {"answers", std::move(answers)}});
    }
    values.push_back(std::move(row));
  }
  json answers = json::array();
  for (int id : a.answers) answers.push_back(token(tok, id));
  json j = {{"what", "logit_lens"},
            {"axes", {"layer", "pos"}},
            {"layers", r.labels},
            {"tokens", input_tokens(a.input)},
            {"answers", std::move(answers)},
            {"truncated", a.input.truncated},
            {"values", std::move(values)}};
  return dump(j);
}

std::string encode_attribution(const research::AttributionTextAnswer& a, const model::BpeTokenizer* tok) {
  const research::Attribution& r = a.attribution;
  json components = json::array(), values = json::array();
  for (const research::AttributionPart& p : r.parts) {
    json c = {{"label", p.label}, {"kind", std::string(research::part_kind_name(p.kind))}};
    if (p.layer >= 0) c["layer"] = p.layer;
    if (p.head >= 0) c["head"] = p.head;
    components.push_back(std::move(c));
    values.push_back(p.value);
  }
  json j = {{"what", "direct_logit_attribution"},
            {"metric", r.wrong >= 0 ? "logit_diff" : "logit"},
            {"axes", {"component"}},
            {"components", std::move(components)},
            {"values", std::move(values)},
            {"answer", token(tok, r.answer)},
            {"wrong", r.wrong >= 0 ? token(tok, r.wrong) : json(nullptr)},
            {"position", r.position},
            {"tokens", input_tokens(a.input)},
            {"sum", r.sum},
            {"logit_diff", r.logit_diff},
            {"logit_diff_uncapped", r.logit_diff_uncapped},
            {"final_scale", r.final_scale}};
  return dump(j);
}

namespace {

json attribution_components(const research::Attribution& r) {
  json components = json::array();
  for (const research::AttributionPart& p : r.parts) {
    json c = {{"label", p.label}, {"kind", std::string(research::part_kind_name(p.kind))}};
    if (p.layer >= 0) c["layer"] = p.layer;
    if (p.head >= 0) c["head"] = p.head;
    components.push_back(std::move(c));
  }
  return components;
}

}  // namespace

std::string encode_attribution_batch(const research::AttributionBatchAnswer& b, const model::BpeTokenizer* tok) {
  json values = json::array(), prompts = json::array();
  for (const research::AttributionTextAnswer& a : b.each) {
    const research::Attribution& r = a.attribution;
    json row = json::array();
    for (const research::AttributionPart& p : r.parts) row.push_back(p.value);
    values.push_back(std::move(row));
    prompts.push_back({{"tokens", input_tokens(a.input)},
                       {"answer", token(tok, r.answer)},
                       {"wrong", r.wrong >= 0 ? token(tok, r.wrong) : json(nullptr)},
                       {"position", r.position},
                       {"sum", r.sum},
                       {"logit_diff", r.logit_diff},
                       {"logit_diff_uncapped", r.logit_diff_uncapped}});
  }
  json j = {{"what", "direct_logit_attribution"},
            {"metric", "logit_diff"},
            {"axes", {"prompt", "component"}},
            {"components", attribution_components(b.each.front().attribution)},
            {"values", std::move(values)},
            {"mean", b.mean},
            {"mean_logit_diff", b.mean_logit_diff},
            {"mean_logit_diff_uncapped", b.mean_logit_diff_uncapped},
            {"prompts", std::move(prompts)}};
  return dump(j);
}

std::string encode_attribute(const AttributeAnswer& a, const model::BpeTokenizer* tok) {
  return a.batch ? encode_attribution_batch(*a.batch, tok) : encode_attribution(*a.one, tok);
}

std::string encode_compose(const ComposeAnswer& a, const model::BpeTokenizer* tok) {
  const research::CompositionScores& s = a.scores;
  using research::CompositionKind;
  std::vector<CompositionKind> kinds;
  if (a.request.kind == "q" || a.request.kind == "all") kinds.push_back(CompositionKind::q);
  if (a.request.kind == "k" || a.request.kind == "all") kinds.push_back(CompositionKind::k);
  if (a.request.kind == "v" || a.request.kind == "all") kinds.push_back(CompositionKind::v);
  auto grid = [&](CompositionKind kind) {  // [sender layer][sender head][receiver layer][receiver head]
    json g = json::array();
    for (int l1 = 0; l1 < s.L; l1++) {
      json a1 = json::array();
      for (int h1 = 0; h1 < s.NH; h1++) {
        json a2 = json::array();
        for (int l2 = 0; l2 < s.L; l2++) {
          json a3 = json::array();
          for (int h2 = 0; h2 < s.NH; h2++) a3.push_back(s.at(kind, l1, h1, l2, h2));
          a2.push_back(std::move(a3));
        }
        a1.push_back(std::move(a2));
      }
      g.push_back(std::move(a1));
    }
    return g;
  };
  json j;
  json axes = {"sender_layer", "sender_head", "receiver_layer", "receiver_head"};
  if (kinds.size() == 1) {
    j["what"] = std::string(research::composition_kind_name(kinds[0])) + "_composition";
    j["axes"] = axes;
    j["values"] = grid(kinds[0]);
  } else {
    j["what"] = "composition";
    axes.insert(axes.begin(), "kind");
    j["axes"] = axes;
    j["kinds"] = {"q", "k", "v"};
    j["values"] = {grid(CompositionKind::q), grid(CompositionKind::k), grid(CompositionKind::v)};
  }
  j["weights"] = s.fold_ln ? "fold_ln" : "raw";
  j["baseline"] = {{"mean", s.baseline_mean},
                   {"std", s.baseline_std},
                   {"samples", s.baseline_samples},
                   {"how", "the same score for Gaussian W_V, W_O, W_Q, W_K of the heads' shapes, mean over samples"}};
  if (a.request.threshold) {
    json edges = json::array();
    for (CompositionKind kind : kinds)
      for (int l1 = 0; l1 < s.L; l1++)
        for (int h1 = 0; h1 < s.NH; h1++)
          for (int l2 = l1 + 1; l2 < s.L; l2++)
            for (int h2 = 0; h2 < s.NH; h2++)
              if (const float v = s.at(kind, l1, h1, l2, h2); v >= *a.request.threshold)
                edges.push_back({{"kind", std::string(research::composition_kind_name(kind))},
                                 {"sender", {l1, h1}},
                                 {"receiver", {l2, h2}},
                                 {"score", v}});
    j["threshold"] = *a.request.threshold;
    j["edges"] = std::move(edges);
  }
  if (a.request.copying) {  // [layer][head]
    json rows = json::array();
    for (int l = 0; l < s.L; l++) {
      json row = json::array();
      for (int h = 0; h < s.NH; h++) row.push_back(a.copying[std::size_t(l) * s.NH + h]);
      rows.push_back(std::move(row));
    }
    j["copying"] = std::move(rows);
  }
  if (a.circuits) {
    const research::HeadCircuits& c = *a.circuits;
    json ov = json::array(), qk = json::array(), eig = json::array();
    for (const research::TokenPair& p : c.ov_top)
      ov.push_back({{"source", token(tok, p.row)}, {"output", token(tok, p.col)}, {"value", p.value}});
    for (const research::TokenPair& p : c.qk_top)
      qk.push_back({{"query", token(tok, p.row)}, {"key", token(tok, p.col)}, {"value", p.value}});
    for (const auto& l : c.ov_eigenvalues) eig.push_back({l.real(), l.imag()});
    j["circuit"] = {{"head", {c.layer, c.head}},
                    {"ov_top", std::move(ov)},
                    {"qk_top", std::move(qk)},
                    {"copying_score", c.copying_score},
                    {"ov_self_top1", c.ov_self_top1},
                    {"ov_eigenvalues", std::move(eig)}};
  }
  return dump(j);
}

}  // namespace headlab::server
