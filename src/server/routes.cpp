// server/routes.cpp — the API, top to bottom as in docs/api.md. Each route decodes a typed
// request, calls a handler, and encodes the Result (an Error becomes the JSON envelope).
#include "server/routes.h"

#include "course/course.h"
#include "server/errors.h"
#include "server/handlers/course_handlers.h"
#include "server/handlers/induction_handlers.h"
#include "server/handlers/lesson_handlers.h"
#include "server/handlers/progress_handlers.h"
#include "server/json_codec.h"
#include "server/lesson_programs.h"
#include "server/model_codec.h"

namespace headlab::server {
namespace {

HttpResponse ok_json(std::string body) {
  HttpResponse r;
  r.body = std::move(body);
  return r;
}

// Decode, handle, encode: the shape of every route.
template <class Decoded, class Handle, class Encode>
HttpResponse answer(Decoded decoded, Handle handle, Encode encode) {
  if (!decoded) return error_response(decoded.error());
  auto result = handle(*decoded);
  if (!result) return error_response(result.error());
  return ok_json(encode(*result));
}

// Progress routes need the store; without one they say why, and the lessons go on.
template <class Handle>
auto with_store(ServerContext& ctx, Handle handle) {
  return [&ctx, handle](const auto& request) -> decltype(handle(*ctx.store, request)) {
    if (!ctx.store)
      return make_error(ErrorCode::unavailable,
                        "Progress cannot be saved right now: " + ctx.store_error +
                            " The lessons still work; ask whoever runs headlab to fix the database.");
    return handle(*ctx.store, request);
  };
}

// Model routes need a model; without one they say why.
Result<ModelService*> need_model(ServerContext& ctx) {
  if (!ctx.model)
    return make_error(ErrorCode::unavailable, "No model is loaded: " + ctx.model_error +
                                                  " Start the server with --model DIR (a Hugging Face GPT-2 folder).");
  return ctx.model;
}

// Identical model requests are answered from the cache; errors are not cached.
template <class Decode, class Handle, class Encode>
HttpResponse cached_model_answer(ServerContext& ctx, const HttpRequest& r, Decode decode, Handle handle, Encode encode) {
  std::string key = r.path + '\n' + canonical_json(r.body);
  if (auto hit = ctx.cache->get(key)) {
    HttpResponse out = ok_json(std::move(*hit));
    out.headers.push_back({"X-Headlab-Cache", "hit"});
    return out;
  }
  auto model = need_model(ctx);
  if (!model) return error_response(model.error());
  HttpResponse out = answer(decode(r.body), [&](const auto& req) { return ((*model)->*handle)(req); }, encode);
  if (out.status == 200) ctx.cache->put(key, out.body);
  return out;
}

}  // namespace

std::vector<Route> make_routes(ServerContext& ctx) {
  std::vector<Route> routes = {
      {"GET", "/api/health", [](const HttpRequest&) { return ok_json(encode_health()); }},
      {"GET", "/api/heads", [](const HttpRequest&) { return ok_json(encode_heads()); }},
      {"POST", "/api/weights",
       [](const HttpRequest& r) { return answer(decode_weights_request(r.body), handle_weights, encode_weights); }},
      {"GET", "/api/head-split",
       [](const HttpRequest& r) {
         return answer(decode_head_split_query(r.query), handle_head_split, encode_head_split);
       }},
      {"GET", "/api/progress",
       [&ctx](const HttpRequest& r) {
         return answer(decode_progress_query(r.query), with_store(ctx, handle_progress_get), encode_progress);
       }},
      {"POST", "/api/progress/check",
       [&ctx](const HttpRequest& r) {
         return answer(decode_progress_check_request(r.body), with_store(ctx, handle_progress_check),
                       encode_progress);
       }},
      {"POST", "/api/progress/reset",
       [&ctx](const HttpRequest& r) {
         return answer(decode_progress_reset_request(r.body), with_store(ctx, handle_progress_reset),
                       encode_progress);
       }},
      {"GET", "/api/lessons/causal-mask/programs",
       [](const HttpRequest&) { return ok_json(encode_programs(lesson_programs())); }},
      {"GET", "/api/lessons",
       [&ctx](const HttpRequest& r) {
         for (const auto& [k, v] : r.query)
           if (k != "learner")
             return error_response(Error{ErrorCode::invalid_argument, "Unknown parameter '" + k + "'. Allowed: learner."});
         auto it = r.query.find("learner");
         auto lessons = handle_lessons(ctx.store, it == r.query.end() ? std::string() : it->second);
         return lessons ? ok_json(encode_lessons(*lessons)) : error_response(lessons.error());
       }},
      {"POST", "/api/feedback",
       [&ctx](const HttpRequest& r) {
         HttpResponse out = answer(
             decode_feedback(r.body),
             [&](const Feedback& f) -> Result<std::int64_t> {
               if (!ctx.feedback)
                 return make_error(ErrorCode::unavailable, "Feedback cannot be saved right now: " + ctx.store_error);
               return handle_feedback(*ctx.feedback, *ctx.feedback_limiter, r.remote_addr, f);
             },
             encode_feedback_id);
         if (out.status == 200) out.status = 201;
         return out;
       }},
      {"GET", "/api/model",
       [&ctx](const HttpRequest&) {
         auto m = need_model(ctx);
         return m ? ok_json(encode_model_info((*m)->info())) : error_response(m.error());
       }},
      {"POST", "/api/model/run",
       [&ctx](const HttpRequest& r) {
         return cached_model_answer(ctx, r, decode_model_run_request, &ModelService::run, encode_model_run);
       }},
      {"POST", "/api/model/intervene",
       [&ctx](const HttpRequest& r) {
         return cached_model_answer(ctx, r, decode_model_intervene_request, &ModelService::intervene,
                                    encode_model_intervene);
       }},
      {"POST", "/api/model/query-scores",
       [&ctx](const HttpRequest& r) {
         return cached_model_answer(ctx, r, decode_query_scores_request, &ModelService::query_scores,
                                    encode_query_scores);
       }},
      {"GET", "/api/model/scan",
       [&ctx](const HttpRequest&) {
         auto m = need_model(ctx);
         if (!m) return error_response(m.error());
         auto report = (*m)->scan_report();
         return report ? ok_json(encode_scan_report(*report, (*m)->info().name)) : error_response(report.error());
       }},
      {"POST", "/api/lessons/causal-mask/induction",
       [&ctx](const HttpRequest& r) {
         auto m = need_model(ctx);
         if (!m) return error_response(m.error());
         return answer(
             decode_induction_comparison_request(r.body),
             [&](const InductionComparisonRequest& req) { return handle_induction_comparison(**m, req); },
             encode_induction_comparison);
       }},
      {"GET", "/api/model/training-log",
       [&ctx](const HttpRequest&) {
         auto m = need_model(ctx);
         if (!m) return error_response(m.error());
         auto log = (*m)->training_log();
         return log ? ok_json(encode_training_log(*log)) : error_response(log.error());
       }},
  };
  // POST /api/lessons/<id>/check for every lesson whose challenges are answers
  // (course/lesson.h): a new lesson brings its route with it.
  for (const course::Lesson& l : course::course_lessons()) {
    if (!l.check_answer) continue;
    routes.push_back({"POST", "/api/lessons/" + l.id + "/check", [&ctx, id = l.id](const HttpRequest& r) {
                        return answer(decode_lesson_check(r.body),
                                      with_store(ctx, [&ctx, &id](ProgressStore& store, const LessonCheckRequest& q) {
                                        return handle_lesson_check(store, ctx.model, id, q);
                                      }),
                                      encode_check_verdict);
                      }});
  }
  return routes;
}

}  // namespace headlab::server
