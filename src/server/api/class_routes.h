// server/api/class_routes.h — the HTTP side of the classes: the teacher's session cookie
// (HttpOnly; SameSite=Strict; Path=/; Secure behind a trusted TLS proxy; Max-Age of the
// session), the teacher's view as JSON with an ETag for short polling (If-None-Match:
// 304 when nothing changed), the CSV export, and the one error envelope for everything else.
//
//   ClassRoutesContext classes{store.get(), "", &create, &login_by_address, &join_by_class,
//                              &join_by_address, false};
//   for (Route& r : class_routes(classes)) routes.push_back(std::move(r));
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "server/store/class_store.h"
#include "server/http/http_types.h"
#include "server/http/rate_limiter.h"
#include "server/api/class_view_cache.h"
#include "server/api/learner_clients.h"
#include "server/api/login_backoff.h"

namespace headlab::server {

inline constexpr const char* kTeacherCookie = "headlab_teacher";

struct ClassRoutesContext {
  ClassStore* store = nullptr;  // null when the database could not be opened
  std::string store_error;      // then: why
  RateLimiter* create_limiter = nullptr;     // classes created per address
  // Logins are limited per address here and per (class, address) by login_backoff below,
  // never per class alone: ten wrong guesses from anyone locked the teacher out (issue 24).
  RateLimiter* login_by_address = nullptr;   // login tries per address
  RateLimiter* join_by_class = nullptr;      // join tries per class
  RateLimiter* join_by_address = nullptr;    // join tries per address
  // X-Forwarded-Proto: https from the proxy in front marks the cookie Secure. Only when
  // that proxy is trusted: a client could send the header itself.
  bool trust_forwarded_proto = false;
  // Per class and address, owned here: a growing wait after failed logins, and one
  // address's share (60 a minute, of the class's 90) of a class's joins: a class of 60
  // behind one school address joins at once, and no one address spends the whole minute.
  std::shared_ptr<LoginBackoff> login_backoff = std::make_shared<LoginBackoff>();
  std::shared_ptr<RateLimiter> join_by_class_and_address =
      std::make_shared<RateLimiter>(60, std::chrono::minutes(1));
  // The model's clients by learner (learner_clients.h): told when a membership changes (a
  // join, a leave, a removal, a deleted class) so a learner's key follows it at once. Null: none.
  LearnerClients* learner_clients = nullptr;
  // The teacher's view as last encoded, per class and version.
  std::shared_ptr<ClassViewCache> views = std::make_shared<ClassViewCache>();
};

std::vector<Route> class_routes(ClassRoutesContext& context);

// The value of cookie `name` in a Cookie header ("a=1; headlab_teacher=abc"), "" if none.
std::string cookie_value(const std::string& header, const std::string& name);

}  // namespace headlab::server
