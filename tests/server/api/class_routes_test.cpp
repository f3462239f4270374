// The class routes as the server calls them (HttpRequest in, HttpResponse out): every
// teacher route refuses no credential, a wrong one, a learner's id, an expired one and
// another class's, on SQLite and on PostgreSQL;
// the cookie's attributes; login limits; short polling; the CSV export.
#include "server/api/class_routes.h"

#include <gtest/gtest.h>

#include <atomic>
#include <nlohmann/json.hpp>

#include "server/store/store_testing.h"
#include "testing/test_server.h"

using namespace headlab;
using namespace headlab::server;
using headlab::testing::StoreDatabase;
using headlab::testing::temp_path;
using nlohmann::json;

namespace {

// A class store with a clock the test moves, and the class routes on it.
struct Routes {
  std::shared_ptr<std::atomic<std::int64_t>> now = std::make_shared<std::atomic<std::int64_t>>(1'800'000'000'000);
  std::unique_ptr<ClassStore> store;
  RateLimiter create{20, std::chrono::hours(1)};
  RateLimiter by_address{30, std::chrono::minutes(10)};
  RateLimiter join_by_class{60, std::chrono::minutes(1)};
  RateLimiter join_by_address{120, std::chrono::minutes(1)};
  ClassRoutesContext ctx;
  std::vector<Route> routes;

  // `target`: an SQLite file (a fresh one by default) or a PostgreSQL URL.
  explicit Routes(const std::string& target = temp_path("routes.db"), bool trust_proxy = false) {
    ClassStoreOptions o;
    o.fast_hash_for_tests = true;
    o.session_seconds = 600;
    o.clock = [now = now] { return now->load(); };
    auto opened = ClassStore::open(target, o);
    if (!opened) throw std::runtime_error(opened.error().message);
    store = std::move(*opened);
    ctx = {store.get(), "", &create, &by_address, &join_by_class, &join_by_address, trust_proxy};
    routes = class_routes(ctx);
  }

  HttpResponse call(const std::string& method, std::string path, const std::string& body = "",
                    const std::string& cookie = "", std::map<std::string, std::string> headers = {},
                    const std::string& address = "10.0.0.1") {
    HttpRequest r;
    r.method = method;
    r.remote_addr = address;
    r.body = body;
    r.content_type = "application/json";
    if (auto q = path.find('?'); q != std::string::npos) {
      std::string query = path.substr(q + 1);
      path = path.substr(0, q);
      auto eq = query.find('=');
      r.query[query.substr(0, eq)] = query.substr(eq + 1);
    }
    r.path = path;
    r.headers = std::move(headers);
    if (!cookie.empty()) r.headers["cookie"] = cookie;
    for (const Route& route : routes)
      if (route.method == method && route.path == path) {
        HttpResponse out = route.handler(r);
        if (out.shared_body) out.body = *out.shared_body;  // what the HTTP layer would send
        return out;
      }
    ADD_FAILURE() << "no route " << method << " " << path;
    return {};
  }

  struct Teacher {
    std::string code, secret, cookie;  // cookie: "headlab_teacher=<token>"
  };
  Teacher create_class(const std::string& name) {
    HttpResponse r = call("POST", "/api/classes", json{{"name", name}}.dump());
    EXPECT_EQ(r.status, 201) << r.body;
    json j = json::parse(r.body);
    Teacher t{j["class"]["code"], j["secret"], ""};
    for (const auto& [k, v] : r.headers)
      if (k == "Set-Cookie") t.cookie = v.substr(0, v.find(';'));
    return t;
  }
};

std::string error_code(const HttpResponse& r) { return json::parse(r.body)["error"]["code"]; }

// One teacher route, and a request to it on class `code`.
struct TeacherRoute {
  const char* name;
  std::function<HttpResponse(Routes&, const std::string& code, const std::string& cookie)> call;
};

const std::vector<TeacherRoute>& teacher_routes() {
  static const std::vector<TeacherRoute> all = {
      {"GET /api/class/view",
       [](Routes& r, const std::string& code, const std::string& cookie) {
         return r.call("GET", "/api/class/view?code=" + code, "", cookie);
       }},
      {"GET /api/class/export",
       [](Routes& r, const std::string& code, const std::string& cookie) {
         return r.call("GET", "/api/class/export?code=" + code, "", cookie);
       }},
      {"POST /api/class/remove-learner",
       [](Routes& r, const std::string& code, const std::string& cookie) {
         return r.call("POST", "/api/class/remove-learner", json{{"code", code}, {"nickname", "Ada"}}.dump(), cookie);
       }},
      {"POST /api/class/delete",
       [](Routes& r, const std::string& code, const std::string& cookie) {
         return r.call("POST", "/api/class/delete", json{{"code", code}}.dump(), cookie);
       }},
  };
  return all;
}

class ClassRoutesOn : public ::testing::TestWithParam<db::Engine> {};

std::string engine_label(const ::testing::TestParamInfo<db::Engine>& info) {
  return info.param == db::Engine::sqlite ? "SQLite" : "PostgreSQL";
}

// Checks each refusal, then that the right credential works (so the refusals were real), on
// a fresh database of `engine`.
void expect_guarded(const TeacherRoute& route, db::Engine engine) {
  SCOPED_TRACE(route.name);
  StoreDatabase fresh(engine);
  HEADLAB_REQUIRE_DATABASE(fresh);
  Routes r(fresh.target());
  Routes::Teacher mine = r.create_class("Period 3"), theirs = r.create_class("Period 4");
  ASSERT_EQ(r.call("POST", "/api/class/join", json{{"code", mine.code}, {"learner", "learner-0001"}, {"nickname", "Ada"}}.dump()).status, 200);

  HttpResponse none = route.call(r, mine.code, "");
  EXPECT_EQ(none.status, 401) << none.body;
  EXPECT_EQ(error_code(none), "unauthorized");

  HttpResponse wrong = route.call(r, mine.code, "headlab_teacher=" + std::string(64, 'a'));
  EXPECT_EQ(wrong.status, 401) << wrong.body;

  HttpResponse learner_id = route.call(r, mine.code, "headlab_teacher=learner-0001");
  EXPECT_EQ(learner_id.status, 401) << learner_id.body;

  HttpResponse other = route.call(r, mine.code, theirs.cookie);
  EXPECT_EQ(other.status, 403) << other.body;
  EXPECT_EQ(error_code(other), "forbidden");

  // expired: the same cookie that works, ten minutes later
  Routes::Teacher later = r.create_class("Period 5");
  *r.now += 600 * 1000;
  HttpResponse expired = route.call(r, later.code, later.cookie);
  EXPECT_EQ(expired.status, 401) << expired.body;

  HttpResponse fresh_login = r.call("POST", "/api/class/login", json{{"code", mine.code}, {"secret", mine.secret}}.dump());
  ASSERT_EQ(fresh_login.status, 200) << fresh_login.body;
  std::string cookie;
  for (const auto& [k, v] : fresh_login.headers)
    if (k == "Set-Cookie") cookie = v.substr(0, v.find(';'));
  HttpResponse ok = route.call(r, mine.code, cookie);
  EXPECT_EQ(ok.status, 200) << ok.body;
}

std::string set_cookie(const HttpResponse& r) {
  for (const auto& [k, v] : r.headers)
    if (k == "Set-Cookie") return v;
  return "";
}

}  // namespace

TEST_P(ClassRoutesOn, TheViewRefusesNoWrongExpiredAndAnotherClassesCredential) {
  expect_guarded(teacher_routes()[0], GetParam());
}
TEST_P(ClassRoutesOn, TheExportRefusesNoWrongExpiredAndAnotherClassesCredential) {
  expect_guarded(teacher_routes()[1], GetParam());
}
TEST_P(ClassRoutesOn, RemovingALearnerRefusesNoWrongExpiredAndAnotherClassesCredential) {
  expect_guarded(teacher_routes()[2], GetParam());
}
TEST_P(ClassRoutesOn, DeletingAClassRefusesNoWrongExpiredAndAnotherClassesCredential) {
  expect_guarded(teacher_routes()[3], GetParam());
}

TEST_P(ClassRoutesOn, ALoggedOutSessionNoLongerOpensAnyTeacherRoute) {
  StoreDatabase fresh(GetParam());
  HEADLAB_REQUIRE_DATABASE(fresh);
  Routes r(fresh.target());
  Routes::Teacher t = r.create_class("Period 3");
  ASSERT_EQ(r.call("POST", "/api/class/logout", "{}", t.cookie).status, 200);
  for (const TeacherRoute& route : teacher_routes()) EXPECT_EQ(route.call(r, t.code, t.cookie).status, 401) << route.name;
}

TEST(ClassRoutes, LogoutWithoutACredentialEndsNoOtherSession) {
  Routes r;
  Routes::Teacher t = r.create_class("Period 3");
  HttpResponse out = r.call("POST", "/api/class/logout", "{}");
  EXPECT_EQ(out.status, 200);
  EXPECT_NE(set_cookie(out).find("Max-Age=0"), std::string::npos);
  EXPECT_EQ(r.call("GET", "/api/class/view?code=" + t.code, "", t.cookie).status, 200);
}

TEST(ClassRoutes, TheSessionCookieIsHttpOnlyStrictAndExpiring) {
  Routes r;
  HttpResponse made = r.call("POST", "/api/classes", json{{"name", "Period 3"}}.dump());
  std::string c = set_cookie(made);
  EXPECT_EQ(c.rfind("headlab_teacher=", 0), 0u) << c;
  EXPECT_NE(c.find("; HttpOnly"), std::string::npos) << c;
  EXPECT_NE(c.find("; SameSite=Strict"), std::string::npos) << c;
  EXPECT_NE(c.find("; Path=/"), std::string::npos) << c;
  EXPECT_NE(c.find("; Max-Age=600"), std::string::npos) << c;
  EXPECT_EQ(c.find("Secure"), std::string::npos) << c;  // plain HTTP: a Secure cookie would never come back
}

TEST(ClassRoutes, TheCookieIsSecureBehindATrustedTlsProxyOnly) {
  Routes untrusted(temp_path("routes.db"), false), trusted(temp_path("routes.db"), true);
  const std::map<std::string, std::string> https = {{"x-forwarded-proto", "https"}};
  std::string body = json{{"name", "Period 3"}}.dump();
  EXPECT_EQ(set_cookie(untrusted.call("POST", "/api/classes", body, "", https)).find("Secure"), std::string::npos);
  EXPECT_NE(set_cookie(trusted.call("POST", "/api/classes", body, "", https)).find("; Secure"), std::string::npos);
  EXPECT_EQ(set_cookie(trusted.call("POST", "/api/classes", body)).find("Secure"), std::string::npos);
}

TEST(ClassRoutes, TheSecretIsShownOnlyWhenTheClassIsCreated) {
  Routes r;
  Routes::Teacher t = r.create_class("Period 3");
  EXPECT_EQ(t.secret.size(), 23u);
  HttpResponse view = r.call("GET", "/api/class/view?code=" + t.code, "", t.cookie);
  EXPECT_EQ(view.body.find(t.secret), std::string::npos);
  HttpResponse login = r.call("POST", "/api/class/login", json{{"code", t.code}, {"secret", t.secret}}.dump());
  EXPECT_EQ(login.body.find(t.secret), std::string::npos);
  HttpResponse with_pass =
      r.call("POST", "/api/classes", json{{"name", "Period 4"}, {"passphrase", "correct horse battery"}}.dump());
  EXPECT_FALSE(json::parse(with_pass.body).contains("secret"));
}

namespace {

HttpResponse login(Routes& r, const std::string& code, const std::string& secret, const std::string& address) {
  return r.call("POST", "/api/class/login", json{{"code", code}, {"secret", secret}}.dump(), "", {}, address);
}

}  // namespace

TEST(ClassRoutes, WrongLoginsFromOtherAddressesNeverLockTheTeacherOut) {
  Routes r;
  Routes::Teacher t = r.create_class("Period 3");
  // learners who know the code guess: ten addresses, then one address over and over
  for (int i = 0; i < 10; ++i) ASSERT_EQ(login(r, t.code, "guess", "10.0.0." + std::to_string(i + 2)).status, 401);
  for (int i = 0; i < 20; ++i) login(r, t.code, "guess", "10.0.0.50");
  HttpResponse teacher = login(r, t.code, t.secret, "10.0.1.1");
  EXPECT_EQ(teacher.status, 200) << teacher.body;
}

TEST(ClassRoutes, WrongLoginsFromOneAddressMakeThatAddressWaitLongerEachTime) {
  Routes r;
  Routes::Teacher t = r.create_class("Period 3");
  for (int i = 0; i < 5; ++i) ASSERT_EQ(login(r, t.code, "guess", "10.0.0.9").status, 401);
  HttpResponse waits = login(r, t.code, t.secret, "10.0.0.9");  // even the right secret waits there
  EXPECT_EQ(waits.status, 429) << waits.body;
  EXPECT_EQ(error_code(waits), "rate_limited");
  EXPECT_NE(waits.body.find("from this address"), std::string::npos) << waits.body;
  EXPECT_EQ(login(r, t.code, t.secret, "10.0.0.10").status, 200);
  // another class is not held up for that address
  Routes::Teacher other = r.create_class("Period 4");
  EXPECT_EQ(login(r, other.code, other.secret, "10.0.0.9").status, 200);
}

TEST(ClassRoutes, LoginWaitsCountAnIpv6Slash64AsOneAddress) {
  Routes r;
  Routes::Teacher t = r.create_class("Period 3");
  for (int i = 0; i < 5; ++i) ASSERT_EQ(login(r, t.code, "guess", "2001:db8:0:1::" + std::to_string(i + 1)).status, 401);
  EXPECT_EQ(login(r, t.code, "guess", "2001:db8:0:1:abcd::1").status, 429);
  EXPECT_EQ(login(r, t.code, t.secret, "2001:db8:0:2::1").status, 200);
}

TEST(ClassRoutes, ARemovedLearnerStaysOutUntilTheTeacherLetsThemBackIn) {
  Routes r;
  Routes::Teacher t = r.create_class("Period 3");
  auto join = [&](const std::string& learner, const std::string& nickname) {
    return r.call("POST", "/api/class/join", json{{"code", t.code}, {"learner", learner}, {"nickname", nickname}}.dump());
  };
  ASSERT_EQ(join("learner-0001", "Ada").status, 200);
  HttpResponse removed = r.call("POST", "/api/class/remove-learner", json{{"code", t.code}, {"nickname", "Ada"}}.dump(), t.cookie);
  ASSERT_EQ(removed.status, 200) << removed.body;
  EXPECT_EQ(json::parse(removed.body)["removed"][0]["nickname"], "Ada");
  HttpResponse again = join("learner-0001", "Ada");
  EXPECT_EQ(again.status, 403) << again.body;
  EXPECT_EQ(error_code(again), "forbidden");
  EXPECT_EQ(join("learner-0001", "Ada2").status, 403) << "a new nickname does not get the same browser back in";
  EXPECT_EQ(join("learner-0009", "ADA").status, 403) << "nor does a new browser id with the same nickname";

  EXPECT_EQ(r.call("POST", "/api/class/unban", json{{"code", t.code}, {"nickname", "Ada"}}.dump()).status, 401);
  HttpResponse unbanned = r.call("POST", "/api/class/unban", json{{"code", t.code}, {"nickname", "ada"}}.dump(), t.cookie);
  ASSERT_EQ(unbanned.status, 200) << unbanned.body;
  EXPECT_TRUE(json::parse(unbanned.body)["removed"].empty());
  EXPECT_EQ(join("learner-0001", "Ada").status, 200);
  EXPECT_EQ(r.call("POST", "/api/class/unban", json{{"code", t.code}, {"nickname", "Ada"}}.dump(), t.cookie).status, 404);
}

TEST(ClassRoutes, LoginsAreLimitedPerAddressAcrossClasses) {
  Routes r;
  std::vector<Routes::Teacher> classes;
  // eight classes, at most four wrong tries each: under the per-class wait, over the address's 30
  for (int i = 0; i < 8; ++i) classes.push_back(r.create_class("Class " + std::to_string(i)));
  int refused = 0;
  for (int i = 0; i < 31; ++i) {
    HttpResponse bad = r.call("POST", "/api/class/login", json{{"code", classes[i % 8].code}, {"secret", "guess"}}.dump(),
                              "", {}, "10.9.9.9");
    refused += bad.status == 429;
  }
  EXPECT_EQ(refused, 1);
}

TEST(ClassRoutes, ALearnerIdIsNeverATeacherCredential) {
  Routes r;
  Routes::Teacher t = r.create_class("Period 3");
  r.call("POST", "/api/class/join", json{{"code", t.code}, {"learner", "learner-0001"}, {"nickname", "Ada"}}.dump());
  HttpResponse as_secret =
      r.call("POST", "/api/class/login", json{{"code", t.code}, {"secret", "learner-0001"}}.dump());
  EXPECT_EQ(as_secret.status, 401);
  HttpResponse with_param = r.call("GET", "/api/class/view?learner=learner-0001", "", "headlab_teacher=learner-0001");
  EXPECT_EQ(with_param.status, 400);  // not a parameter of the view at all
}

TEST(ClassRoutes, TheViewAnswers304UntilTheClassChanges) {
  Routes r;
  Routes::Teacher t = r.create_class("Period 3");
  HttpResponse first = r.call("GET", "/api/class/view?code=" + t.code, "", t.cookie);
  ASSERT_EQ(first.status, 200);
  std::string etag;
  for (const auto& [k, v] : first.headers)
    if (k == "ETag") etag = v;
  ASSERT_FALSE(etag.empty());
  HttpResponse same = r.call("GET", "/api/class/view?code=" + t.code, "", t.cookie, {{"if-none-match", etag}});
  EXPECT_EQ(same.status, 304);
  EXPECT_TRUE(same.body.empty());
  r.call("POST", "/api/class/join", json{{"code", t.code}, {"learner", "learner-0001"}, {"nickname", "Ada"}}.dump());
  HttpResponse changed = r.call("GET", "/api/class/view?code=" + t.code, "", t.cookie, {{"if-none-match", etag}});
  EXPECT_EQ(changed.status, 200);
  EXPECT_EQ(json::parse(changed.body)["learners"][0]["nickname"], "Ada");
  // without the session, no 304 either: the ETag would tell that the class changed
  EXPECT_EQ(r.call("GET", "/api/class/view?code=" + t.code, "", "", {{"if-none-match", etag}}).status, 401);
}

TEST(ClassRoutes, TheExportIsCsvWithFormulasDefused) {
  Routes r;
  Routes::Teacher t = r.create_class("Period 3");
  r.call("POST", "/api/class/join", json{{"code", t.code}, {"learner", "learner-0001"}, {"nickname", "=HYPERLINK(1)"}}.dump());
  r.call("POST", "/api/class/join", json{{"code", t.code}, {"learner", "learner-0002"}, {"nickname", "Bo, \"the\" 2nd"}}.dump());
  // issue 24: a formula after a semicolon (a semicolon spreadsheet starts a cell there), and
  // a terminal's CSI (U+009B) with a right-to-left override (U+202E)
  r.call("POST", "/api/class/join", json{{"code", t.code}, {"learner", "learner-0003"}, {"nickname", "x;=cmd|' /C calc'!A0"}}.dump());
  r.call("POST", "/api/class/join", json{{"code", t.code}, {"learner", "learner-0004"}, {"nickname", "Ca\u009b2J\u202eol"}}.dump());
  r.store->record_attempt("learner-0002", "trained-heads", "pattern-quiz", true, "below-diagonal");
  HttpResponse csv = r.call("GET", "/api/class/export?code=" + t.code, "", t.cookie);
  EXPECT_NE(csv.body.find("\r\n\"'x;=cmd|' /C calc'!A0\",causal-mask,"), std::string::npos) << csv.body;
  EXPECT_EQ(csv.body.find("\u009b"), std::string::npos) << csv.body;
  EXPECT_EQ(csv.body.find("\u202e"), std::string::npos) << csv.body;
  ASSERT_EQ(csv.status, 200) << csv.body;
  EXPECT_EQ(csv.content_type, "text/csv; charset=utf-8");
  // a UTF-8 byte order mark first, so a spreadsheet reads the nicknames as UTF-8
  EXPECT_EQ(csv.body.rfind("\xEF\xBB\xBFnickname,lesson,challenge,title,done,done_at,tries,before_joining,answer_shown\r\n", 0), 0u);
  EXPECT_NE(csv.body.find("\r\n'=HYPERLINK(1),causal-mask,"), std::string::npos) << csv.body;
  EXPECT_NE(csv.body.find("\r\n\"Bo, \"\"the\"\" 2nd\",trained-heads,pattern-quiz,The previous-token pattern,yes,2027-01-15T08:00:00.000Z,1,no,no\r\n"),
            std::string::npos)
      << csv.body;
}

TEST(ClassRoutes, JoiningLeavingAndMembershipSpeakJson) {
  Routes r;
  Routes::Teacher t = r.create_class("Period 3");
  std::string lower_code = t.code;
  for (char& c : lower_code) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  HttpResponse joined =
      r.call("POST", "/api/class/join", json{{"code", lower_code}, {"learner", "learner-0001"}, {"nickname", "Ada"}}.dump());
  ASSERT_EQ(joined.status, 200) << joined.body;
  EXPECT_EQ(json::parse(joined.body)["class"]["name"], "Period 3");
  HttpResponse m = r.call("GET", "/api/class/membership?learner=learner-0001");
  EXPECT_EQ(json::parse(m.body)["nickname"], "Ada");
  EXPECT_EQ(r.call("GET", "/api/class/membership?learner=bad").status, 400);
  EXPECT_EQ(r.call("POST", "/api/class/join", json{{"code", "NOSUCH"}, {"learner", "learner-0002"}, {"nickname", "Bo"}}.dump()).status, 404);
  EXPECT_EQ(r.call("POST", "/api/class/join", json{{"code", t.code}, {"learner", "learner-0002"}}.dump()).status, 400);
  HttpResponse left = r.call("POST", "/api/class/leave", json{{"learner", "learner-0001"}}.dump());
  EXPECT_EQ(left.status, 200);
  EXPECT_TRUE(json::parse(left.body)["class"].is_null());
  EXPECT_EQ(r.call("POST", "/api/class/leave", json{{"learner", "learner-0001"}}.dump()).status, 404);
}

TEST(ClassRoutes, DeletingAClassEndsItsSessionAndClearsTheCookie) {
  Routes r;
  Routes::Teacher t = r.create_class("Period 3");
  HttpResponse deleted = r.call("POST", "/api/class/delete", json{{"code", t.code}}.dump(), t.cookie);
  ASSERT_EQ(deleted.status, 200) << deleted.body;
  EXPECT_NE(set_cookie(deleted).find("Max-Age=0"), std::string::npos);
  EXPECT_EQ(r.call("GET", "/api/class/view?code=" + t.code, "", t.cookie).status, 401);
}

TEST(ClassRoutes, WithoutAStoreEveryRouteSaysWhy) {
  ClassRoutesContext none;
  none.store_error = "the disk is gone.";
  for (const Route& route : class_routes(none)) {
    HttpRequest req;
    req.method = route.method;
    req.path = route.path;
    HttpResponse out = route.handler(req);
    EXPECT_EQ(out.status, 503) << route.path;
    EXPECT_NE(out.body.find("the disk is gone."), std::string::npos) << route.path;
  }
}

INSTANTIATE_TEST_SUITE_P(BothEngines, ClassRoutesOn, ::testing::Values(db::Engine::sqlite, db::Engine::postgresql),
                         engine_label);

TEST(CookieValue, FindsTheNamedCookieAmongOthers) {
  EXPECT_EQ(cookie_value("a=1; headlab_teacher=abc; b=2", "headlab_teacher"), "abc");
  EXPECT_EQ(cookie_value("headlab_teacher=abc", "headlab_teacher"), "abc");
  EXPECT_EQ(cookie_value("xheadlab_teacher=abc", "headlab_teacher"), "");
  EXPECT_EQ(cookie_value("", "headlab_teacher"), "");
}

// Issue 24: eight views of a flooded class made /api/health slow; the view is made once per
// version of the class and shared by every poll and tab until the class changes.
TEST(ClassRoutes, TheViewIsMadeOncePerVersionOfTheClass) {
  Routes r;
  Routes::Teacher t = r.create_class("Period 3");
  r.call("POST", "/api/class/join", json{{"code", t.code}, {"learner", "learner-0001"}, {"nickname", "Ada"}}.dump());
  auto view = [&] {
    for (const Route& route : r.routes)
      if (route.path == "/api/class/view") {
        HttpRequest req;
        req.method = "GET";
        req.path = route.path;
        req.query["code"] = t.code;
        req.headers["cookie"] = t.cookie;
        return route.handler(req);
      }
    return HttpResponse{};
  };
  HttpResponse a = view(), b = view();
  ASSERT_EQ(a.status, 200);
  ASSERT_TRUE(a.shared_body && b.shared_body);
  EXPECT_EQ(a.shared_body.get(), b.shared_body.get()) << "the second poll shares the first one's answer";
  r.call("POST", "/api/class/join", json{{"code", t.code}, {"learner", "learner-0002"}, {"nickname", "Bo"}}.dump());
  HttpResponse c = view();
  ASSERT_TRUE(c.shared_body);
  EXPECT_NE(c.shared_body.get(), a.shared_body.get()) << "a change makes a new one";
  EXPECT_NE(c.shared_body->find("\"Bo\""), std::string::npos);
}
