// server/store/postgres_engine.cpp — see postgres_engine.h. Parameters and results travel as
// text (libpq's simplest format); integer and floating columns are parsed by their type OID.
#include "server/store/postgres_engine.h"

#include <libpq-fe.h>

#include <charconv>
#include <cstdlib>

#include "server/store/target.h"

namespace headlab::server::db {
namespace {

// Type OIDs from PostgreSQL's pg_type.dat; stable across versions.
constexpr Oid kBool = 16, kInt8 = 20, kInt2 = 21, kInt4 = 23, kFloat4 = 700, kFloat8 = 701;

std::string first_line(std::string text) {
  std::size_t nl = text.find('\n');
  if (nl != std::string::npos) text.resize(nl);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\r' || text.back() == '.')) text.pop_back();
  return text;
}

// Where the URL points, for messages (libpq's defaults when the URL leaves a part out).
struct Place {
  std::string host = "localhost", port = "5432", dbname, user;
};

Result<Place> place_of(const std::string& url) {
  char* err = nullptr;
  PQconninfoOption* opts = PQconninfoParse(url.c_str(), &err);
  if (!opts) {
    std::string why = err ? first_line(err) : "out of memory";
    PQfreemem(err);
    return make_error(ErrorCode::invalid_argument,
                      "--db " + redact_url(url) + " is not a PostgreSQL URL libpq can read: " + why +
                          ". Write it as postgresql://USER@HOST:PORT/NAME.");
  }
  Place p;
  for (PQconninfoOption* o = opts; o->keyword; ++o) {
    if (!o->val || !*o->val) continue;
    std::string k = o->keyword;
    if (k == "host") p.host = o->val;
    else if (k == "hostaddr" && p.host == "localhost") p.host = o->val;
    else if (k == "port") p.port = o->val;
    else if (k == "dbname") p.dbname = o->val;
    else if (k == "user") p.user = o->val;
  }
  PQconninfoFree(opts);
  if (p.dbname.empty()) p.dbname = p.user;
  return p;
}

// One line: what failed, where, and what to do about it.
Error connect_error(const Place& p, const std::string& libpq_message) {
  std::string why = first_line(libpq_message);
  std::string where = "PostgreSQL at " + p.host + " port " + p.port;
  std::string fix;
  if (why.find("invalid") != std::string::npos)
    return Error{ErrorCode::invalid_argument, "--db names PostgreSQL at " + p.host + " port " + p.port + ": " + why +
                                                  ". Write it as postgresql://USER@HOST:PORT/NAME."};
  if (why.find("password") != std::string::npos || why.find("authentication") != std::string::npos ||
      why.find("no pg_hba.conf entry") != std::string::npos)
    fix = "Check the user and password in --db postgresql://USER:PASSWORD@" + p.host + ":" + p.port + "/" + p.dbname +
          " and that pg_hba.conf lets this machine in.";
  else if (why.find("does not exist") != std::string::npos && why.find("database") != std::string::npos)
    fix = "Create it (createdb -h " + p.host + " -p " + p.port + " " + p.dbname + ") or name another in --db.";
  else if (why.find("does not exist") != std::string::npos && why.find("role") != std::string::npos)
    fix = "Create that user (createuser -h " + p.host + " -p " + p.port + " " + p.user + ") or name another in --db.";
  else
    fix = "Is PostgreSQL running and listening there? Start it, or fix the host and port in --db.";
  return Error{ErrorCode::unavailable,
               "Cannot connect to " + where + " (database " + p.dbname + "): " + why + ". " + fix};
}

class PostgresConnection final : public Connection {
 public:
  PostgresConnection(PGconn* conn, Place place) : conn_(conn), place_(std::move(place)) {}
  ~PostgresConnection() override { PQfinish(conn_); }

  Result<QueryResult> run(std::string_view sql_view, const Params& params) override {
    std::string sql(sql_view);
    PGresult* res;
    if (params.empty()) {
      res = PQexec(conn_, sql.c_str());  // may hold several statements
    } else {
      std::vector<std::string> text(params.size());
      std::vector<const char*> values(params.size());
      std::vector<int> lengths(params.size()), formats(params.size(), 0);
      for (std::size_t i = 0; i < params.size(); ++i) {
        const Value& v = params[i];
        if (const auto* s = std::get_if<std::string>(&v)) {
          values[i] = s->data();
          lengths[i] = static_cast<int>(s->size());
          continue;
        }
        if (const auto* n = std::get_if<std::int64_t>(&v)) text[i] = std::to_string(*n);
        else if (const auto* d = std::get_if<double>(&v)) {
          char buf[32];
          auto r = std::to_chars(buf, buf + sizeof buf, *d);
          text[i].assign(buf, r.ptr);
        } else {
          values[i] = nullptr;  // NULL
          continue;
        }
        values[i] = text[i].c_str();
        lengths[i] = static_cast<int>(text[i].size());
      }
      res = PQexecParams(conn_, sql.c_str(), static_cast<int>(params.size()), nullptr, values.data(), lengths.data(),
                         formats.data(), 0);
    }
    ExecStatusType status = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
      Error e = error_of(res);
      PQclear(res);
      return tl::unexpected(e);
    }
    QueryResult out;
    int rows = PQntuples(res), cols = PQnfields(res);
    out.rows.reserve(rows);
    for (int r = 0; r < rows; ++r) {
      Row row;
      row.cells.reserve(cols);
      for (int c = 0; c < cols; ++c) {
        if (PQgetisnull(res, r, c)) {
          row.cells.emplace_back(std::monostate{});
          continue;
        }
        const char* v = PQgetvalue(res, r, c);
        Oid type = PQftype(res, c);
        if (type == kInt8 || type == kInt4 || type == kInt2) row.cells.emplace_back(std::int64_t{std::strtoll(v, nullptr, 10)});
        else if (type == kFloat4 || type == kFloat8) row.cells.emplace_back(std::strtod(v, nullptr));
        else if (type == kBool) row.cells.emplace_back(std::int64_t{v[0] == 't'});
        else row.cells.emplace_back(std::string(v, PQgetlength(res, r, c)));
      }
      out.rows.push_back(std::move(row));
    }
    const char* changed = PQcmdTuples(res);
    out.changes = changed && *changed ? std::strtoll(changed, nullptr, 10) : 0;
    PQclear(res);
    return out;
  }

  bool broken() const override { return lost_ || PQstatus(conn_) != CONNECTION_OK; }

  Status reconnect() override {
    lost_ = false;
    PQreset(conn_);
    if (PQstatus(conn_) != CONNECTION_OK) return tl::unexpected(connect_error(place_, PQerrorMessage(conn_)));
    return {};
  }

 private:
  Error error_of(const PGresult* res) {
    if (PQstatus(conn_) != CONNECTION_OK)
      return Error{ErrorCode::unavailable, "the connection to PostgreSQL at " + place_.host + " port " + place_.port +
                                               " dropped (" + first_line(PQerrorMessage(conn_)) + ")"};
    const char* state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : nullptr;
    const char* primary = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : nullptr;
    std::string message = primary ? primary : first_line(PQerrorMessage(conn_));
    std::string code = state ? state : "";
    // SQLSTATE class 53: insufficient resources (53100 disk_full, 53200 out_of_memory, ...);
    // 08: connection exceptions; 57P0x: the server is shutting down or restarting.
    if (code == "53100") return Error{ErrorCode::storage_full, message};
    // The backend ended (an administrator, a restart): libpq may not have seen the socket
    // close yet, but this connection is done for.
    if (code.rfind("08", 0) == 0 || code.rfind("57P0", 0) == 0) lost_ = true;
    if (code.rfind("08", 0) == 0 || code.rfind("57P0", 0) == 0 || code.rfind("53", 0) == 0)
      return Error{ErrorCode::unavailable, message};
    return Error{ErrorCode::io_error, message};
  }

  PGconn* conn_;
  Place place_;
  bool lost_ = false;  // the server said this session is over
};

}  // namespace

Result<std::unique_ptr<Connection>> postgres_connect(const std::string& url, const DatabaseOptions& options) {
  auto place = place_of(url);
  if (!place) return tl::unexpected(place.error());
  // Our defaults first: the URL's own connect_timeout or application_name win (expand_dbname).
  const char* keys[] = {"connect_timeout", "application_name", "dbname", nullptr};
  const char* values[] = {"5", "headlab", url.c_str(), nullptr};
  PGconn* conn = PQconnectdbParams(keys, values, /*expand_dbname=*/1);
  if (!conn) return make_error(ErrorCode::unavailable, "Cannot connect to PostgreSQL: out of memory.");
  if (PQstatus(conn) != CONNECTION_OK) {
    Error e = connect_error(*place, PQerrorMessage(conn));
    PQfinish(conn);
    return tl::unexpected(e);
  }
  // CREATE TABLE IF NOT EXISTS and friends send NOTICEs; libpq would print them on stderr.
  PQsetNoticeProcessor(conn, [](void*, const char*) {}, nullptr);
  if (options.relaxed_commit) {
    PGresult* r = PQexec(conn, "SET synchronous_commit = off");
    const bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    PQclear(r);
    if (!ok) {
      Error e = connect_error(*place, PQerrorMessage(conn));
      PQfinish(conn);
      return tl::unexpected(e);
    }
  }
  return std::unique_ptr<Connection>(std::make_unique<PostgresConnection>(conn, std::move(*place)));
}

}  // namespace headlab::server::db
