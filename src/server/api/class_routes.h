// server/api/class_routes.h — the HTTP side of the classes: the teacher's session cookie
// (HttpOnly; SameSite=Strict; Path=/; Secure behind a trusted TLS proxy; Max-Age of the
// session), the teacher's view as JSON with an ETag for short polling (If-None-Match:
// 304 when nothing changed), the CSV export, and the one error envelope for everything else.
//
//   ClassRoutesContext classes{store.get(), "", &create, &login_by_class, &login_by_address,
//                              &join_by_class, &join_by_address, false};
//   for (Route& r : class_routes(classes)) routes.push_back(std::move(r));
#pragma once

#include <string>
#include <vector>

#include "server/store/class_store.h"
#include "server/http/http_types.h"
#include "server/http/rate_limiter.h"

namespace headlab::server {

inline constexpr const char* kTeacherCookie = "headlab_teacher";

struct ClassRoutesContext {
  ClassStore* store = nullptr;  // null when the database could not be opened
  std::string store_error;      // then: why
  RateLimiter* create_limiter = nullptr;     // classes created per address
  RateLimiter* login_by_class = nullptr;     // login tries per class
  RateLimiter* login_by_address = nullptr;   // login tries per address
  RateLimiter* join_by_class = nullptr;      // join tries per class
  RateLimiter* join_by_address = nullptr;    // join tries per address
  // X-Forwarded-Proto: https from the proxy in front marks the cookie Secure. Only when
  // that proxy is trusted: a client could send the header itself.
  bool trust_forwarded_proto = false;
};

std::vector<Route> class_routes(ClassRoutesContext& context);

// The value of cookie `name` in a Cookie header ("a=1; headlab_teacher=abc"), "" if none.
std::string cookie_value(const std::string& header, const std::string& name);

}  // namespace headlab::server
