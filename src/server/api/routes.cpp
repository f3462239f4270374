// server/api/routes.cpp — the API, top to bottom as in docs/api.md. Each route decodes a typed
// request, calls a handler, and encodes the Result (an Error becomes the JSON envelope).
#include "server/api/routes.h"

#include <chrono>
#include <functional>

#include "course/course.h"
#include "server/http/errors.h"
#include "server/http/http_gzip.h"
#include "server/api/class_codec.h"
#include "server/api/handlers/class_handlers.h"
#include "server/api/handlers/course_handlers.h"
#include "server/api/handlers/induction_handlers.h"
#include "server/api/handlers/lens_codec.h"
#include "server/api/handlers/path_patch_codec.h"
#include "server/api/handlers/lesson_handlers.h"
#include "server/api/handlers/positions_codec.h"
#include "server/api/handlers/positions_handlers.h"
#include "server/api/handlers/progress_handlers.h"
#include "server/api/json_codec.h"
#include "server/api/lesson_programs.h"
#include "server/api/model_codec.h"
#include "server/api/patch_codec.h"

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

// Writes per learner id, beside the server's per-address limit: one learner (or a script
// posing as one) cannot fill the store from an address a whole class shares.
Status learner_may_write(ServerContext& ctx, const std::string& learner) {
  if (!ctx.learner_writes) return {};
  const std::string key = "learner " + learner;
  if (ctx.learner_writes->allow(key)) return {};
  return rate_limited("Too many checks from this learner at once; wait a moment and try again.",
                      ctx.learner_writes->retry_after_s(key));
}

// A check a class member made is noted for the class's teacher (class_handlers.h).
ClassStore* class_store(ServerContext& ctx) { return ctx.classes ? ctx.classes->store : nullptr; }

// Model routes need a model; without one they say why, and "model_loaded": false tells a
// client that waiting will not help (the page retries other 503s by itself: docs/api.md).
Result<ModelService*> need_model(ServerContext& ctx) {
  if (!ctx.model)
    return tl::unexpected<Error>(Error{ErrorCode::unavailable,
                                       "No model is loaded: " + ctx.model_error +
                                           " Start the server with --model PATH (a Hugging Face folder of a supported family, or a .gguf file).",
                                       0, R"({"model_loaded": false})"});
  return ctx.model;
}

// Identical model requests are answered from the cache; errors are not cached. Identical
// requests arriving while the first is computed wait for its answer (ResponseCache::flight):
// computed once, encoded and compressed once, kept once.
template <class Decode, class Handle, class Encode>
HttpResponse cached_model_answer(ServerContext& ctx, const HttpRequest& r, Decode decode, Handle handle, Encode encode) {
  std::string key = r.path + '\n' + canonical_json(r.body);
  auto shared = [](const CachedAnswer& a) {
    HttpResponse out;
    out.shared_body = a.body;
    out.shared_gzip = a.gzip;
    return out;
  };
  if (auto hit = ctx.cache->get(key)) {
    HttpResponse out = shared(*hit);
    out.headers.push_back({"X-Headlab-Cache", "hit"});
    return out;
  }
  auto model = need_model(ctx);
  if (!model) return error_response(model.error());
  const std::string& request_id = InferencePool::current_request();
  ResponseCache::Flight flight = ctx.cache->flight(key, request_id);
  if (!flight.lead) {
    // as long as a run may wait in the queue: past it, this request computes its own (and
    // meets the queue's deadline there); meanwhile its place is the lead's
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds((*model)->options().pool.timeout_ms);
    (*model)->queue_follow(request_id, flight.in->lead_id);
    auto joined = flight.wait(deadline);
    (*model)->queue_unfollow(request_id);
    if (joined) {
      HttpResponse out = shared(*joined);
      out.headers.push_back({"X-Headlab-Cache", "joined"});
      return out;
    }
  }
  // The lead lands its flight whatever happens (its followers then compute their own).
  struct Landing {
    ResponseCache& cache;
    const std::string& key;
    const ResponseCache::Flight& flight;
    std::optional<CachedAnswer> answer;
    ~Landing() {
      if (flight.lead) cache.land(key, flight, std::move(answer));
    }
  } landing{*ctx.cache, key, flight, std::nullopt};
  HttpResponse out = answer(decode(r.body), [&](const auto& req) { return std::invoke(handle, *model, req); }, encode);
  if (out.status != 200) return out;
  // Kept once with its gzip made once: a hit costs neither a copy nor a compression.
  CachedAnswer a;
  a.body = std::make_shared<const std::string>(std::move(out.body));
  if (a.body->size() >= 1024)
    if (auto z = gzip_fast(*a.body)) a.gzip = std::make_shared<const std::string>(std::move(*z));
  if (flight.lead) landing.answer = a;
  else ctx.cache->put(key, a);
  HttpResponse sent = shared(a);
  sent.headers = std::move(out.headers);
  return sent;
}

// The word-order lesson's models; a context built without a shelf says so.
Result<course::LessonModelShelf*> need_shelf(ServerContext& ctx) {
  if (!ctx.lesson_models) return make_error(ErrorCode::unavailable, "This server keeps no lesson models.");
  return ctx.lesson_models;
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
       }, kReadsQuery},
      {"GET", "/api/progress",
       [&ctx](const HttpRequest& r) {
         return answer(decode_progress_query(r.query), with_store(ctx, handle_progress_get), encode_progress);
       }, kReadsQuery},
      {"POST", "/api/progress/check",
       [&ctx](const HttpRequest& r) {
         auto check = [&ctx](ProgressStore& store, const ProgressCheckRequest& q) -> Result<ProgressView> {
           if (auto s = learner_may_write(ctx, q.learner); !s) return tl::unexpected(s.error());
           auto v = handle_progress_check(store, q);
           if (v) {
             std::vector<std::string> evidence;  // what each met check computed, for the teacher
             for (const std::string& why : v->met_why) evidence.push_back(encode_detected_evidence(q, why));
             if (auto s = note_detected(class_store(ctx), q.learner, q.lesson, v->met, evidence); !s)
               return tl::unexpected(s.error());
           }
           return v;
         };
         return answer(decode_progress_check_request(r.body), with_store(ctx, check), encode_progress);
       }},
      {"POST", "/api/progress/reset",
       [&ctx](const HttpRequest& r) {
         return answer(decode_progress_reset_request(r.body), with_store(ctx, handle_progress_reset),
                       encode_progress);
       }},
      {"GET", "/api/lessons/causal-mask/programs",
       [](const HttpRequest&) { return ok_json(encode_programs(lesson_programs())); }},
      {"GET", "/api/lessons/word-order/programs",
       [](const HttpRequest&) { return ok_json(encode_programs(word_order_programs())); }},
      {"GET", "/api/lessons",
       [&ctx](const HttpRequest& r) {
         for (const auto& [k, v] : r.query)
           if (k != "learner")
             return error_response(Error{ErrorCode::invalid_argument, "Unknown parameter '" + k + "'. Allowed: learner."});
         auto it = r.query.find("learner");
         auto lessons = handle_lessons(ctx.store, it == r.query.end() ? std::string() : it->second);
         return lessons ? ok_json(encode_lessons(*lessons)) : error_response(lessons.error());
       }, kReadsQuery},
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
      // ?request_id=ID (optional): the id GET /api/model/queue finds the waiting run by
      {"POST", "/api/model/run",
       [&ctx](const HttpRequest& r) {
         std::string id;
         for (const auto& [k, v] : r.query) {
           if (k != "request_id")
             return error_response(Error{ErrorCode::invalid_argument, "Unknown parameter '" + k + "'. Allowed: request_id."});
           if (Status s = check_request_id(v); !s) return error_response(s.error());
           id = v;
         }
         InferencePool::RequestScope tagged(id);
         return cached_model_answer(ctx, r, decode_model_run_request, &ModelService::run, encode_model_run);
       }, kReadsQuery},
      // Where a waiting run is: the explorer polls it to show "3 ahead of you". Answered on the
      // event loop (a GET), never behind the runs it reports on.
      {"GET", "/api/model/queue",
       [&ctx](const HttpRequest& r) {
         auto it = r.query.find("request_id");
         for (const auto& [k, v] : r.query)
           if (k != "request_id")
             return error_response(Error{ErrorCode::invalid_argument, "Unknown parameter '" + k + "'. Allowed: request_id."});
         if (it == r.query.end())
           return error_response(Error{ErrorCode::invalid_argument, "Parameter 'request_id' is missing: send the id the run was posted with (POST /api/model/run?request_id=ID)."});
         if (Status s = check_request_id(it->second); !s) return error_response(s.error());
         auto m = need_model(ctx);
         if (!m) return error_response(m.error());
         HttpResponse out = ok_json(encode_queue_place((*m)->queue_place(it->second)));
         out.headers.push_back({"Cache-Control", "no-store"});
         return out;
       }, kReadsQuery},
      // the research toolbox: activation patching (docs/research.md)
      {"POST", "/api/model/patch",
       [&ctx](const HttpRequest& r) {
         return cached_model_answer(ctx, r, decode_model_patch_request, &ModelService::patch, encode_model_patch);
       }},
      // path patching: a sender head's effect by one path, into the logits or receiver heads
      {"POST", "/api/model/path-patch",
       [&ctx](const HttpRequest& r) {
         return cached_model_answer(
             ctx, r, decode_model_path_patch_request,
             [](ModelService* m, const ModelPathPatchRequest& q) { return handle_model_path_patch(*m, q); },
             encode_model_path_patch);
       }},
      {"POST", "/api/model/intervene",
       [&ctx](const HttpRequest& r) {
         return cached_model_answer(ctx, r, decode_model_intervene_request, &ModelService::intervene,
                                    encode_model_intervene);
       }},
      // the research toolbox: the activation cache (a safetensors file, not JSON)
      {"POST", "/api/model/cache",
       [&ctx](const HttpRequest& r) {
         auto m = need_model(ctx);
         if (!m) return error_response(m.error());
         auto req = decode_model_cache_request(r.body);
         if (!req) return error_response(req.error());
         auto bytes = (*m)->cache(*req);
         if (!bytes) return error_response(bytes.error());
         HttpResponse out;
         out.content_type = "application/octet-stream";
         out.body = std::move(*bytes);
         out.headers.push_back({"Content-Disposition", "attachment; filename=\"cache.safetensors\""});
         return out;
       }},
      {"POST", "/api/model/query-scores",
       [&ctx](const HttpRequest& r) {
         return cached_model_answer(ctx, r, decode_query_scores_request, &ModelService::query_scores,
                                    encode_query_scores);
       }},
      // ---- the research toolbox: logit lens, direct logit attribution, composition (docs/research.md) ----
      {"POST", "/api/model/lens",
       [&ctx](const HttpRequest& r) {
         return cached_model_answer(
             ctx, r, decode_lens_request,
             [](ModelService* m, const research::LensTextRequest& q) { return handle_model_lens(*m, q); },
             [&ctx](const research::LensTextAnswer& a) { return encode_lens(a, &ctx.model->tokenizer()); });
       }},
      {"POST", "/api/model/attribute",
       [&ctx](const HttpRequest& r) {
         return cached_model_answer(
             ctx, r, decode_attribute_request,
             [](ModelService* m, const AttributeRequest& q) { return handle_model_attribute(*m, q); },
             [&ctx](const AttributeAnswer& a) { return encode_attribute(a, &ctx.model->tokenizer()); });
       }},
      {"POST", "/api/model/compose",
       [&ctx](const HttpRequest& r) {
         return cached_model_answer(
             ctx, r, decode_compose_request,
             [](ModelService* m, const ComposeRequest& q) { return handle_model_compose(*m, q); },
             [&ctx](const ComposeAnswer& a) { return encode_compose(a, &ctx.model->tokenizer()); });
       }},
      {"GET", "/api/model/compose",
       [&ctx](const HttpRequest& r) {
         auto q = decode_compose_query(r.query);
         if (!q) return error_response(q.error());
         HttpRequest as_post = r;  // the same answer, and the same cache entry, as the POST
         as_post.body = encode_compose_request(*q);
         return cached_model_answer(
             ctx, as_post, decode_compose_request,
             [](ModelService* m, const ComposeRequest& c) { return handle_model_compose(*m, c); },
             [&ctx](const ComposeAnswer& a) { return encode_compose(a, &ctx.model->tokenizer()); });
       }, kReadsQuery},
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
      // ---- word order (lesson 3): the engine's rotary code, positions, the lesson models ----
      {"POST", "/api/rope",
       [](const HttpRequest& r) { return answer(decode_rope_request(r.body), handle_rope, encode_rope); }},
      {"GET", "/api/rope/wavelengths",
       [](const HttpRequest& r) {
         return answer(decode_wavelength_query(r.query), handle_rope_wavelengths, encode_wavelengths);
       }, kReadsQuery},
      {"GET", "/api/positions",
       [&ctx](const HttpRequest&) {
         auto a = handle_positions(ctx.model);
         return a ? ok_json(encode_positions(*a)) : error_response(a.error());
       }},
      {"POST", "/api/positions/content-only",
       [&ctx](const HttpRequest& r) {
         auto m = need_model(ctx);
         if (!m) return error_response(m.error());
         // The pattern is computed from the served model's weights: in the inference pool's turns.
         return answer(decode_content_only_request(r.body),
                       [&](const ContentOnlyRequest& q) {
                         // By value: a job that outlives a timed-out request must not read this frame.
                         return (*m)->in_turn<ContentOnlyAnswer>([svc = *m, q] { return handle_content_only(*svc, q); });
                       },
                       encode_content_only);
       }},
      {"GET", "/api/positions/models",
       [&ctx](const HttpRequest&) {
         auto shelf = need_shelf(ctx);
         if (!shelf) return error_response(shelf.error());
         auto a = handle_positions_models(**shelf);
         return a ? ok_json(encode_positions_models(*a)) : error_response(a.error());
       }},
      {"POST", "/api/positions/length",
       [&ctx](const HttpRequest& r) {
         auto shelf = need_shelf(ctx);
         if (!shelf) return error_response(shelf.error());
         return answer(decode_length_request(r.body),
                       [&](const LengthRequest& q) { return handle_positions_length(**shelf, q); }, encode_length);
       }},
      {"POST", "/api/positions/run",
       [&ctx](const HttpRequest& r) {
         auto shelf = need_shelf(ctx);
         if (!shelf) return error_response(shelf.error());
         return answer(decode_lesson_run_request(r.body),
                       [&](const LessonRunRequest& q) { return handle_positions_run(**shelf, q); },
                       encode_lesson_run);
       }},
  };
  // POST /api/lessons/<id>/check for every lesson whose challenges are answers
  // (course/lesson.h): a new lesson brings its route with it.
  for (const course::Lesson& l : course::course_lessons()) {
    if (!l.check_answer) continue;
    routes.push_back({"POST", "/api/lessons/" + l.id + "/check", [&ctx, id = l.id](const HttpRequest& r) {
                        return answer(decode_lesson_check(r.body),
                                      with_store(ctx, [&ctx, &id](ProgressStore& store, const LessonCheckRequest& q) {
                                        if (auto s = learner_may_write(ctx, q.learner); !s)
                                          return Result<CheckVerdict>(tl::unexpected(s.error()));
                                        auto v = handle_lesson_check(store, ctx.model, id, q);
                                        if (!v) return v;
                                        // as the server saw it: a look at the answer remembered from
                                        // before is a look again, not a wrong answer
                                        course::Answer noted = q.answer;
                                        noted.revealed = v->revealed;
                                        if (auto s = note_answer_check(class_store(ctx), q.learner, id, noted, v->correct,
                                                                        q.request_id,
                                                                        encode_check_evidence(noted, v->explanation));
                                            !s)
                                          return Result<CheckVerdict>(tl::unexpected(s.error()));
                                        return v;
                                      }),
                                      encode_check_verdict);
                      }});
  }
  if (ctx.classes)
    for (Route& r : class_routes(*ctx.classes)) routes.push_back(std::move(r));
  return routes;
}

}  // namespace headlab::server
