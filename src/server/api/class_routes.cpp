// server/api/class_routes.cpp — decode, handle, encode for the class routes, plus the cookie
// and the ETag. docs/api.md shows one request and answer for each.
#include "server/api/class_routes.h"

#include "server/api/class_codec.h"
#include "server/http/errors.h"
#include "server/api/handlers/class_handlers.h"

namespace headlab::server {
namespace {

HttpResponse ok_json(std::string body, int status = 200) {
  HttpResponse r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

std::string header(const HttpRequest& r, const char* name) {
  auto it = r.headers.find(name);
  return it == r.headers.end() ? std::string() : it->second;
}

std::string teacher_token(const HttpRequest& r) { return cookie_value(header(r, "cookie"), kTeacherCookie); }

std::string query_code(const HttpRequest& r) {
  auto it = r.query.find("code");
  std::string code = it == r.query.end() ? std::string() : it->second;
  for (char& c : code) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return code;
}

Status only_params(const HttpRequest& r, const std::string& allowed) {
  for (const auto& [k, v] : r.query)
    if (k != allowed)
      return make_error(ErrorCode::invalid_argument, "Unknown parameter '" + k.substr(0, 40) + "'. Allowed: " + allowed + ".");
  if (!r.query.count(allowed))
    return make_error(ErrorCode::invalid_argument, "Missing parameter '" + allowed + "'.");
  return {};
}

// The cookie that carries a teacher session; an empty token and max_age 0 clear it.
std::string session_cookie(const ClassRoutesContext& ctx, const HttpRequest& r, const std::string& token,
                           std::int64_t max_age) {
  std::string c = std::string(kTeacherCookie) + "=" + token + "; HttpOnly; SameSite=Strict; Path=/; Max-Age=" +
                  std::to_string(std::max<std::int64_t>(0, max_age));
  if (ctx.trust_forwarded_proto && header(r, "x-forwarded-proto") == "https") c += "; Secure";
  return c;
}

HttpResponse with_cookie(HttpResponse out, std::string cookie) {
  out.headers.push_back({"Set-Cookie", std::move(cookie)});
  return out;
}

// Every class route needs the store; without one it says why.
template <class Handle>
RouteHandler needs_store(ClassRoutesContext& ctx, Handle handle) {
  return [&ctx, handle](const HttpRequest& r) -> HttpResponse {
    if (!ctx.store)
      return error_response(Error{ErrorCode::unavailable, "Classes are not available right now: " + ctx.store_error});
    return handle(*ctx.store, r);
  };
}

}  // namespace

std::string cookie_value(const std::string& header, const std::string& name) {
  std::size_t at = 0;
  while (at < header.size()) {
    std::size_t end = header.find(';', at);
    if (end == std::string::npos) end = header.size();
    std::string pair = header.substr(at, end - at);
    std::size_t a = pair.find_first_not_of(' ');
    if (a != std::string::npos) pair = pair.substr(a);
    if (pair.size() > name.size() && pair.compare(0, name.size(), name) == 0 && pair[name.size()] == '=')
      return pair.substr(name.size() + 1);
    at = end + 1;
  }
  return "";
}

std::vector<Route> class_routes(ClassRoutesContext& ctx) {
  return {
      {"POST", "/api/classes", needs_store(ctx, [&ctx](ClassStore& store, const HttpRequest& r) {
         auto req = decode_class_create(r.body);
         if (!req) return error_response(req.error());
         auto made = handle_class_create(store, *ctx.create_limiter, r.remote_addr, *req);
         if (!made) return error_response(made.error());
         return with_cookie(ok_json(encode_created_class(*made), 201),
                            session_cookie(ctx, r, made->session.token, made->session.expires_at - store.now_ms() / 1000));
       })},
      {"POST", "/api/class/join", needs_store(ctx, [&ctx](ClassStore& store, const HttpRequest& r) {
         auto req = decode_class_join(r.body);
         if (!req) return error_response(req.error());
         auto m = handle_class_join(store, {*ctx.join_by_address, *ctx.join_by_class_and_address, *ctx.join_by_class},
                                    r.remote_addr, *req);
         if (m && ctx.learner_clients) ctx.learner_clients->forget(req->learner);
         return m ? ok_json(encode_membership(*m)) : error_response(m.error());
       })},
      {"GET", "/api/class/membership", needs_store(ctx, [](ClassStore& store, const HttpRequest& r) {
         if (auto s = only_params(r, "learner"); !s) return error_response(s.error());
         auto m = handle_class_membership(store, r.query.at("learner"));
         return m ? ok_json(encode_membership(*m)) : error_response(m.error());
       }), kReadsQuery},
      {"POST", "/api/class/leave", needs_store(ctx, [&ctx](ClassStore& store, const HttpRequest& r) {
         auto learner = decode_learner_only(r.body);
         if (!learner) return error_response(learner.error());
         auto m = handle_class_leave(store, *learner);
         if (ctx.learner_clients) ctx.learner_clients->forget(*learner);
         return m ? ok_json(encode_membership(*m)) : error_response(m.error());
       })},
      {"POST", "/api/class/login", needs_store(ctx, [&ctx](ClassStore& store, const HttpRequest& r) {
         auto req = decode_teacher_login(r.body);
         if (!req) return error_response(req.error());
         auto login = handle_teacher_login(store, {*ctx.login_by_address, *ctx.login_backoff}, r.remote_addr, *req);
         if (!login) return error_response(login.error());
         return with_cookie(ok_json(encode_class_info(login->info)),
                            session_cookie(ctx, r, login->session.token, login->session.expires_at - store.now_ms() / 1000));
       })},
      {"POST", "/api/class/logout", needs_store(ctx, [&ctx](ClassStore& store, const HttpRequest& r) {
         if (auto s = handle_teacher_logout(store, teacher_token(r)); !s) return error_response(s.error());
         return with_cookie(ok_json(R"({"logged_out":true})"), session_cookie(ctx, r, "", 0));
       })},
      {"GET", "/api/class/view", needs_store(ctx, [&ctx](ClassStore& store, const HttpRequest& r) {
         if (auto s = only_params(r, "code"); !s) return error_response(s.error());
         const std::string code = query_code(r);
         // Authorize before anything, the ETag included: it would tell that the class changed.
         auto info = authorize_teacher(store, teacher_token(r), code);
         if (!info) return error_response(info.error());
         const std::string etag = "\"" + code + "-" + std::to_string(info->version) + "\"";
         // Kept by the teacher's browser and asked again every time (no-cache), so the browser
         // itself sends If-None-Match and turns a 304 into the view it kept. A 304 to a page's
         // own If-None-Match on a request the browser may not cache (no-store) is a cancelled
         // request in Chromium's log. private: no shared cache keeps a class.
         const char* cache = "private, no-cache";
         if (header(r, "if-none-match") == etag) {
           HttpResponse same;
           same.status = 304;
           same.headers.push_back({"ETag", etag});
           same.headers.push_back({"Cache-Control", cache});
           return same;
         }
         // Made once per version of the class: polls and other tabs share it.
         std::shared_ptr<const std::string> body = ctx.views->find(code, info->version);
         if (!body) {
           auto view = build_class_view(store, code);
           if (!view) return error_response(view.error());
           view->info.version = info->version;  // the version the ETag names, not a newer one
           body = std::make_shared<const std::string>(encode_class_view(*view));
           ctx.views->put(code, info->version, body);
         }
         HttpResponse out;
         out.shared_body = std::move(body);
         out.headers.push_back({"ETag", etag});
         out.headers.push_back({"Cache-Control", cache});
         return out;
       }), kReadsQuery},
      {"GET", "/api/class/export", needs_store(ctx, [](ClassStore& store, const HttpRequest& r) {
         if (auto s = only_params(r, "code"); !s) return error_response(s.error());
         const std::string code = query_code(r);
         auto view = handle_class_view(store, teacher_token(r), code);
         if (!view) return error_response(view.error());
         HttpResponse out;
         out.content_type = "text/csv; charset=utf-8";
         out.body = encode_class_csv(*view);
         out.headers.push_back({"Content-Disposition", "attachment; filename=\"headlab-class-" + code + ".csv\""});
         return out;
       }), kReadsQuery},
      {"GET", "/api/class/evidence", needs_store(ctx, [](ClassStore& store, const HttpRequest& r) {
         auto req = decode_evidence_query(r.query);
         if (!req) return error_response(req.error());
         auto e = handle_class_evidence(store, teacher_token(r), *req);
         return e ? ok_json(encode_class_evidence(*e)) : error_response(e.error());
       }), kReadsQuery},
      {"POST", "/api/class/remove-learner", needs_store(ctx, [&ctx](ClassStore& store, const HttpRequest& r) {
         auto req = decode_remove_learner(r.body);
         if (!req) return error_response(req.error());
         auto view = handle_remove_learner(store, teacher_token(r), req->first, req->second);
         // by nickname: the learner id is not known here, so every learner is asked again
         if (view && ctx.learner_clients) ctx.learner_clients->forget_all();
         return view ? ok_json(encode_class_view(*view)) : error_response(view.error());
       })},
      {"POST", "/api/class/unban", needs_store(ctx, [](ClassStore& store, const HttpRequest& r) {
         auto req = decode_remove_learner(r.body);
         if (!req) return error_response(req.error());
         auto view = handle_unban_learner(store, teacher_token(r), req->first, req->second);
         return view ? ok_json(encode_class_view(*view)) : error_response(view.error());
       })},
      {"POST", "/api/class/delete", needs_store(ctx, [&ctx](ClassStore& store, const HttpRequest& r) {
         auto code = decode_class_code(r.body);
         if (!code) return error_response(code.error());
         if (auto s = handle_class_delete(store, teacher_token(r), *code); !s) return error_response(s.error());
         if (ctx.learner_clients) ctx.learner_clients->forget_all();
         return with_cookie(ok_json(R"({"deleted":true})"), session_cookie(ctx, r, "", 0));
       })},
  };
}

}  // namespace headlab::server
