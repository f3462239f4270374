// server/store/target.cpp — see target.h.
#include "server/store/target.h"

#include <cctype>

namespace headlab::server::db {

std::string_view engine_name(Engine engine) { return engine == Engine::sqlite ? "SQLite" : "PostgreSQL"; }

bool is_postgresql_url(std::string_view text) {
  // Lower case only, as libpq reads them.
  return text.rfind("postgresql://", 0) == 0 || text.rfind("postgres://", 0) == 0;
}

bool looks_like_postgresql(std::string_view text) {
  std::string head;
  for (char c : text.substr(0, 16)) head += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return head.rfind("postgresql:", 0) == 0 || head.rfind("postgres:", 0) == 0;
}

std::string redact_url(std::string_view url) {
  std::string out(url);
  std::size_t scheme = out.find("://");
  if (scheme == std::string::npos) return out;
  std::size_t start = scheme + 3;
  std::size_t end = out.find_first_of("/?", start);
  if (end == std::string::npos) end = out.size();
  std::size_t at = out.rfind('@', end - 1);
  if (at != std::string::npos && at >= start) {
    std::size_t colon = out.find(':', start);
    if (colon != std::string::npos && colon < at) out.replace(colon + 1, at - colon - 1, "***");
  }
  // password=... among the query parameters
  for (std::size_t p = out.find("password=", start); p != std::string::npos; p = out.find("password=", p + 1)) {
    if (p == 0 || (out[p - 1] != '?' && out[p - 1] != '&')) continue;
    std::size_t v = p + 9;
    std::size_t e = out.find('&', v);
    out.replace(v, (e == std::string::npos ? out.size() : e) - v, "***");
  }
  return out;
}

Result<Target> parse_target(const std::string& text) {
  if (text.empty())
    return make_error(ErrorCode::invalid_argument,
                      "--db needs a file path (SQLite) or a postgresql://user@host:port/name URL.");
  Target t;
  t.location = text;
  if (is_postgresql_url(text)) {
    t.engine = Engine::postgresql;
    t.display = redact_url(text);
  } else if (looks_like_postgresql(text)) {
    // "postgresql:/host/db", "PostgreSQL://...": meant as a URL, not a file. Taken as a path,
    // SQLite would make a folder named "postgresql:" and a database in it.
    return make_error(ErrorCode::invalid_argument,
                      "--db " + redact_url(text) + " looks like a PostgreSQL URL but is not one headlab reads: "
                      "write postgresql://USER@HOST:PORT/NAME (lower case, two slashes).");
  } else if (text.find("://") != std::string::npos) {
    return make_error(ErrorCode::invalid_argument,
                      "--db " + redact_url(text) + ": the URLs headlab knows are postgresql:// and postgres://; "
                      "anything else is a path to an SQLite file.");
  } else {
    t.engine = Engine::sqlite;
    t.display = text;
  }
  return t;
}

}  // namespace headlab::server::db
