// server/api/json_codec.cpp — strict decoding and plain encoding with nlohmann::json.
#include "server/api/json_codec.h"

#include "server/api/json_fields.h"

#include <charconv>
#include <nlohmann/json.hpp>
#include <set>

#include "core/pattern_summary.h"
#include "core/sentence.h"
#include "course/causal_mask.h"

namespace headlab::server {
namespace {

using nlohmann::json;

constexpr std::string_view kExample = R"({"sentence": "the cat", ...})";  // the weights route's

Result<std::int64_t> parse_int_param(const std::map<std::string, std::string>& q, const char* name,
                                     std::int64_t fallback) {
  auto it = q.find(name);
  if (it == q.end()) return fallback;
  const std::string& s = it->second;
  std::int64_t v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec == std::errc::result_out_of_range && ptr == s.data() + s.size())
    return make_error(ErrorCode::invalid_argument, std::string(name) + " = " + s.substr(0, 40) +
                                                       " is far beyond any model's size (GPT-2 small: d_model 768, h 12).");
  if (s.empty() || ec != std::errc() || ptr != s.data() + s.size())
    return make_error(ErrorCode::invalid_argument,
                      std::string(name) + " must be a whole number; got '" + s.substr(0, 40) + "'.");
  return v;
}

json encode_citations(const std::vector<core::Citation>& cs) {
  json out = json::array();
  for (const auto& c : cs) out.push_back({{"authors_year", c.authors_year}, {"title", c.title}, {"url", c.url}});
  return out;
}

}  // namespace

Result<WeightsRequest> decode_weights_request(std::string_view body) {
  auto j = parse_json_object(body, kExample);
  if (!j) return tl::unexpected(j.error());
  WeightsRequest r;
  HEADLAB_TRY(only_fields(*j, {"sentence", "head", "mask"}));
  HEADLAB_TRY(read_field(*j, "sentence", r.sentence, true));
  HEADLAB_TRY(read_field(*j, "head", r.head, true));
  HEADLAB_TRY(read_field(*j, "mask", r.mask, false));
  return r;
}

Result<ProgressCheckRequest> decode_progress_check_request(std::string_view body) {
  auto j = parse_json_object(body, R"({"learner": "...", "lesson": "causal-mask", ...})");
  if (!j) return tl::unexpected(j.error());
  ProgressCheckRequest r;
  HEADLAB_TRY(only_fields(*j, {"learner", "lesson", "sentence", "head", "mask", "query"}));
  HEADLAB_TRY(read_field(*j, "learner", r.learner, true));
  HEADLAB_TRY(read_field(*j, "lesson", r.lesson, true));
  HEADLAB_TRY(read_field(*j, "sentence", r.sentence, true));
  HEADLAB_TRY(read_field(*j, "head", r.head, true));
  HEADLAB_TRY(read_field(*j, "mask", r.mask, false));
  HEADLAB_TRY(read_field(*j, "query", r.query, true));
  return r;
}

Result<ProgressQuery> decode_progress_reset_request(std::string_view body) {
  auto j = parse_json_object(body, R"({"learner": "...", "lesson": "causal-mask"})");
  if (!j) return tl::unexpected(j.error());
  ProgressQuery r;
  HEADLAB_TRY(only_fields(*j, {"learner", "lesson"}));
  HEADLAB_TRY(read_field(*j, "learner", r.learner, true));
  HEADLAB_TRY(read_field(*j, "lesson", r.lesson, true));
  return r;
}

Result<ProgressQuery> decode_progress_query(const std::map<std::string, std::string>& q) {
  for (const auto& [k, v] : q)
    if (k != "learner" && k != "lesson")
      return make_error(ErrorCode::invalid_argument, "Unknown parameter '" + k + "'. Allowed: learner, lesson.");
  auto learner = q.find("learner");
  if (learner == q.end())
    return make_error(ErrorCode::invalid_argument, "Missing parameter 'learner' (the browser's anonymous id).");
  auto lesson = q.find("lesson");
  return ProgressQuery{learner->second, lesson == q.end() ? std::string(course::kCausalMaskLesson) : lesson->second};
}

Result<HeadSplitRequest> decode_head_split_query(const std::map<std::string, std::string>& q) {
  for (const auto& [k, v] : q)
    if (k != "d_model" && k != "h")
      return make_error(ErrorCode::invalid_argument, "Unknown parameter '" + k + "'. Allowed: d_model, h.");
  const auto& first = core::head_split_presets().front();
  auto d_model = parse_int_param(q, "d_model", first.d_model);
  if (!d_model) return tl::unexpected(d_model.error());
  auto h = parse_int_param(q, "h", first.h);
  if (!h) return tl::unexpected(h.error());
  return HeadSplitRequest{*d_model, *h};
}

Result<LessonCheckRequest> decode_lesson_check(std::string_view body) {
  auto j = parse_json_object(body, R"({"learner": "...", "challenge": "pattern-quiz", "answer": {"choice": "uniform"}})");
  if (!j) return tl::unexpected(j.error());
  LessonCheckRequest req;
  course::Answer& r = req.answer;
  HEADLAB_TRY(only_fields(*j, {"learner", "challenge", "answer", "request_id"}));
  HEADLAB_TRY(read_field(*j, "learner", req.learner, true));
  HEADLAB_TRY(read_field(*j, "request_id", req.request_id, false));
  if (req.request_id.size() > 64)
    return make_error(ErrorCode::invalid_argument, "Field 'request_id' is at most 64 characters (a UUID fits).");
  HEADLAB_TRY(read_field(*j, "challenge", r.challenge, true));
  auto it = j->find("answer");
  if (it == j->end() || !it->is_object())
    return make_error(ErrorCode::invalid_argument, "Field 'answer' must be an object, like {\"choice\": \"uniform\"} or {\"layer\": 1, \"head\": 0}.");
  const json& a = *it;
  HEADLAB_TRY(only_fields(a, {"choice", "layer", "head", "text", "revealed", "positions", "order"}, " in 'answer'"));
  // Lesson 3's lists of positions: whole numbers, at most 256 of them.
  for (auto [name, out] : {std::pair{"positions", &r.positions}, std::pair{"order", &r.order}}) {
    auto f = a.find(name);
    if (f == a.end()) continue;
    if (!f->is_array() || f->size() > 256)
      return make_error(ErrorCode::invalid_argument, std::string("Answer field '") + name + "' must be a list of at most 256 whole numbers.");
    for (const json& v : *f) {
      // unsigned first: 2^64 - 1 read as long long is -1
      const bool in_range = v.is_number_unsigned() ? v.get<unsigned long long>() <= 100000
                                                   : v.is_number_integer() && v.get<long long>() >= 0 && v.get<long long>() <= 100000;
      if (!in_range)
        return make_error(ErrorCode::invalid_argument, std::string("Answer field '") + name + "' must hold whole numbers from 0 to 100000.");
      out->push_back(v.get<int>());
    }
  }
  HEADLAB_TRY(read_field(a, "revealed", r.revealed, false));
  HEADLAB_TRY(read_field(a, "choice", r.choice, false));
  HEADLAB_TRY(read_field(a, "text", r.text, false));
  for (auto [name, out] : {std::pair{"layer", &r.layer}, std::pair{"head", &r.head}}) {
    HEADLAB_TRY(read_field(a, name, *out, false));
    if (*out < -1 || *out > 100000)
      return make_error(ErrorCode::invalid_argument, std::string("Answer field '") + name + "' is out of range.");
  }
  return req;
}

Result<Feedback> decode_feedback(std::string_view body) {
  auto j = parse_json_object(body, R"({"lesson": "causal-mask", "message": "Row 6 looks odd"})");
  if (!j) return tl::unexpected(j.error());
  Feedback f;
  HEADLAB_TRY(only_fields(*j, {"lesson", "message", "contact"}));
  HEADLAB_TRY(read_field(*j, "lesson", f.lesson, true));
  HEADLAB_TRY(read_field(*j, "message", f.message, true));
  HEADLAB_TRY(read_field(*j, "contact", f.contact, false));
  return f;
}

std::string encode_lessons(const std::vector<LessonSummary>& lessons) {
  json out = json::array();
  for (const auto& l : lessons)
    out.push_back({{"id", l.id}, {"number", l.number}, {"title", l.title}, {"total", l.total},
                   {"completed_count", l.completed_count}, {"coming", l.coming}});
  return json{{"lessons", out}}.dump();
}

std::string encode_check_verdict(const CheckVerdict& v) {
  return json{{"correct", v.correct}, {"explanation", v.explanation}, {"progress", json::parse(encode_progress(v.progress))}}
      .dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string encode_feedback_id(std::int64_t id) { return json{{"id", id}}.dump(); }

std::string encode_health() { return json{{"ok", true}, {"version", "0.1.0"}}.dump(); }

std::string encode_heads() {
  json heads = json::array();
  for (const core::HeadInfo& h : core::constructed_heads())
    heads.push_back({{"name", h.name},
                     {"title", h.title},
                     {"rule", h.rule},
                     {"description", h.description},
                     {"citations", encode_citations(h.citations)}});
  return json{{"default_sentence", core::kLessonSentence}, {"max_tokens", core::kMaxSentenceTokens}, {"heads", heads}}
      .dump();
}

std::string encode_weights(const core::AttentionPattern& p) {
  json weights = json::array();
  json scores = json::array();   // (T, T) by rule, before the mask: the step-through's first step
  json clauses = json::array();  // (T, T) the clause of the rule that gave each score
  json summaries = json::array();
  for (int i = 0; i < p.size(); ++i) {
    json row = json::array(), score_row = json::array(), clause_row = json::array();
    for (int j = 0; j < p.size(); ++j) {
      row.push_back(p.is_masked(i, j) ? json(nullptr) : json(p.weights.at(i, j)));
      score_row.push_back(p.scores.at(i, j));
      clause_row.push_back(core::constructed_head_clause(p.head, p.tokens, i, j));
    }
    weights.push_back(std::move(row));
    scores.push_back(std::move(score_row));
    clauses.push_back(std::move(clause_row));
    core::LooksMostAt l = core::looks_most_at(p, i);
    summaries.push_back(
        {{"query", i}, {"keys", l.keys}, {"weight", l.weight}, {"text", core::describe_looks_most_at(l, p.tokens)}});
  }
  return json{{"tokens", p.tokens},
              {"head", core::head_info(p.head).name},
              {"mask", p.mask},
              {"weights", weights},
              {"scores", scores},
              {"clauses", clauses},
              {"summaries", summaries}}
      .dump();
}

std::string encode_head_split(const core::HeadSplit& s) {
  json presets = json::array();
  for (const auto& p : core::head_split_presets())
    presets.push_back({{"name", p.name}, {"d_model", p.d_model}, {"h", p.h}});
  return json{{"d_model", s.d_model},
              {"h", s.h},
              {"d_k", s.d_k},
              {"projection_weights", s.projection_weights},
              {"projection_weights_text", core::with_thousands_separators(s.projection_weights)},
              {"w_q_shape", {s.d_model, s.d_k}},
              {"w_k_shape", {s.d_model, s.d_k}},
              {"w_v_shape", {s.d_model, s.d_k}},
              {"w_o_shape", {s.d_model, s.d_model}},
              {"presets", presets}}
      .dump();
}

std::string encode_progress(const ProgressView& v) {
  json challenges = json::array();
  int done = 0;
  for (const auto& c : v.challenges) {
    challenges.push_back({{"id", c.id}, {"text", c.text}, {"done", c.done}});
    done += c.done;
  }
  json out = {{"lesson", v.lesson},
              {"learner", v.learner},
              {"total", v.challenges.size()},
              {"completed_count", done},
              {"challenges", challenges}};
  if (v.include_newly_completed) out["newly_completed"] = v.newly_completed;
  return out.dump();
}

std::string encode_programs(const std::vector<Program>& programs) {
  json out = json::array();
  for (const auto& p : programs)
    out.push_back({{"id", p.id}, {"language", p.language}, {"source", p.source}, {"output", p.output}});
  return json{{"programs", out}}.dump();
}

}  // namespace headlab::server
