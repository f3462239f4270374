// server/api/class_codec.cpp — nlohmann::json for the bodies; CSV by RFC 4180 (quotes doubled).
#include "server/api/class_codec.h"

#include <algorithm>
#include <map>

#include <nlohmann/json.hpp>

#include "server/api/json_fields.h"
#include "util/untrusted_text.h"

namespace headlab::server {
namespace {

using nlohmann::json;

constexpr std::string_view kExample = R"({"code": "K7QPM3", "nickname": "Ada", ...})";

std::string upper(std::string code) {
  for (char& c : code) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return code;
}

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

json info_json(const ClassInfo& c) {
  return {{"code", c.code}, {"name", c.name}, {"created_at", c.created_at}, {"version", c.version},
          {"join_path", class_join_path(c.code)}};
}

// A cell a spreadsheet would run as a formula: one that starts with = + - @ (or a tab or CR
// before one), or holds one right after a ; , tab or line break, which a spreadsheet that
// splits on that character starts a new cell at ("x;=cmd|' /C calc'!A0"). Such a cell is
// prefixed with ' (OWASP's CSV-injection advice); a cell holding ; or , is quoted as well.
bool csv_formula_risk(std::string_view s) {
  auto formula_at = [&](std::size_t i) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n')) i++;
    return i < s.size() && (s[i] == '=' || s[i] == '+' || s[i] == '-' || s[i] == '@');
  };
  if (formula_at(0)) return true;
  for (std::size_t i = 0; i < s.size(); i++)
    if ((s[i] == ';' || s[i] == ',' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') && formula_at(i + 1)) return true;
  return false;
}

std::string csv_field(std::string s) {
  // A learner's text cannot move a teacher's cursor or reorder what the spreadsheet shows
  // (util/untrusted_text.h); tab, CR and LF stay, quoted.
  s = escape_controls(s, "\t\r\n");
  if (csv_formula_risk(s)) s = "'" + s;
  if (s.find_first_of(",;\"\r\n\t") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

}  // namespace

Result<ClassCreateRequest> decode_class_create(std::string_view body) {
  auto j = parse_json_object(body, R"({"name": "Period 3"})");
  if (!j) return tl::unexpected(j.error());
  ClassCreateRequest r;
  HEADLAB_TRY(only_fields(*j, {"name", "passphrase"}));
  HEADLAB_TRY(read_field(*j, "name", r.name, true));
  HEADLAB_TRY(read_field(*j, "passphrase", r.passphrase, false));
  return r;
}

Result<ClassJoinRequest> decode_class_join(std::string_view body) {
  auto j = parse_json_object(body, kExample);
  if (!j) return tl::unexpected(j.error());
  ClassJoinRequest r;
  HEADLAB_TRY(only_fields(*j, {"code", "learner", "nickname"}));
  HEADLAB_TRY(read_field(*j, "code", r.code, true));
  HEADLAB_TRY(read_field(*j, "learner", r.learner, true));
  HEADLAB_TRY(read_field(*j, "nickname", r.nickname, true));
  if (r.code.find_first_not_of(" \t") == std::string::npos)  // no class has it: a form sent blank, not a wrong code
    return make_error(ErrorCode::invalid_argument, "Field 'code' is empty: send the class code your teacher gave you, like \"K7QPM3\".");
  r.code = upper(r.code);
  return r;
}

Result<std::string> decode_learner_only(std::string_view body) {
  auto j = parse_json_object(body, R"({"learner": "..."})");
  if (!j) return tl::unexpected(j.error());
  std::string learner;
  HEADLAB_TRY(only_fields(*j, {"learner"}));
  HEADLAB_TRY(read_field(*j, "learner", learner, true));
  return learner;
}

Result<TeacherLoginRequest> decode_teacher_login(std::string_view body) {
  auto j = parse_json_object(body, R"({"code": "K7QPM3", "secret": "..."})");
  if (!j) return tl::unexpected(j.error());
  TeacherLoginRequest r;
  HEADLAB_TRY(only_fields(*j, {"code", "secret"}));
  HEADLAB_TRY(read_field(*j, "code", r.code, true));
  HEADLAB_TRY(read_field(*j, "secret", r.secret, true));
  r.code = upper(r.code);
  return r;
}

Result<std::string> decode_class_code(std::string_view body) {
  auto j = parse_json_object(body, R"({"code": "K7QPM3"})");
  if (!j) return tl::unexpected(j.error());
  std::string code;
  HEADLAB_TRY(only_fields(*j, {"code"}));
  HEADLAB_TRY(read_field(*j, "code", code, true));
  return upper(code);
}

Result<std::pair<std::string, std::string>> decode_remove_learner(std::string_view body) {
  auto j = parse_json_object(body, R"({"code": "K7QPM3", "nickname": "Ada"})");
  if (!j) return tl::unexpected(j.error());
  std::pair<std::string, std::string> r;
  HEADLAB_TRY(only_fields(*j, {"code", "nickname"}));
  HEADLAB_TRY(read_field(*j, "code", r.first, true));
  HEADLAB_TRY(read_field(*j, "nickname", r.second, true));
  r.first = upper(r.first);
  return r;
}

std::string class_join_path(const std::string& code) { return "/#/join/" + code; }

std::string encode_created_class(const CreatedClass& c) {
  json out = {{"class", info_json(c.info)}, {"expires_at", c.session.expires_at}};
  if (!c.secret.empty()) out["secret"] = c.secret;
  return dump(out);
}

std::string encode_class_info(const ClassInfo& c) { return dump({{"class", info_json(c)}}); }

std::string encode_membership(const LearnerMembership& m) {
  if (!m.cls) return dump({{"class", nullptr}});
  json out = {{"class", {{"code", m.cls->code}, {"name", m.cls->name}}}, {"nickname", m.nickname}};
  if (m.carried_over > 0) out["carried_over"] = m.carried_over;
  return dump(out);
}

Result<EvidenceRequest> decode_evidence_query(const std::map<std::string, std::string>& query) {
  EvidenceRequest r;
  const std::pair<const char*, std::string*> fields[] = {
      {"code", &r.code}, {"nickname", &r.nickname}, {"lesson", &r.lesson}, {"challenge", &r.challenge}};
  for (const auto& [k, v] : query) {
    bool known = false;
    for (const auto& f : fields) known |= k == f.first;
    if (!known)
      return make_error(ErrorCode::invalid_argument,
                        "Unknown parameter '" + k.substr(0, 40) + "'. Allowed: code, nickname, lesson, challenge.");
  }
  for (const auto& [name, out] : fields) {
    auto it = query.find(name);
    if (it == query.end() || it->second.empty())
      return make_error(ErrorCode::invalid_argument, std::string("Missing parameter '") + name + "'.");
    *out = it->second.substr(0, 200);
  }
  r.code = upper(r.code);
  return r;
}

namespace {

// s cut to at most n bytes, not inside a UTF-8 character.
std::string utf8_prefix(const std::string& s, std::size_t n) {
  if (s.size() <= n) return s;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return s.substr(0, n) + "\u2026";
}

// fill(text_limit, why_limit) made smaller until its JSON fits the store's bound.
template <class Fill>
std::string bounded_evidence(Fill fill) {
  for (std::size_t text = 400, why = 1200; text > 8; text /= 2, why /= 2) {
    std::string out = dump(fill(text, why));
    if (out.size() <= ClassStore::kMaxEvidenceBytes) return out;
  }
  return "";
}

}  // namespace

std::string encode_check_evidence(const course::Answer& a, const std::string& why) {
  return bounded_evidence([&](std::size_t text_limit, std::size_t why_limit) {
    json j = json::object();
    if (!a.text.empty()) j["text"] = utf8_prefix(a.text, text_limit);
    if (a.layer >= 0) j["layer"] = a.layer;
    if (a.head >= 0) j["head"] = a.head;
    if (!a.choice.empty()) j["choice"] = a.choice.substr(0, 64);
    if (!a.positions.empty())
      j["positions"] = std::vector<int>(a.positions.begin(), a.positions.begin() + std::min<std::size_t>(a.positions.size(), 16));
    if (a.revealed) j["revealed"] = true;
    j["why"] = utf8_prefix(why, why_limit);
    return j;
  });
}

std::string encode_detected_evidence(const ProgressCheckRequest& q, const std::string& why) {
  return bounded_evidence([&](std::size_t text_limit, std::size_t why_limit) {
    return json{{"text", utf8_prefix(q.sentence, text_limit)}, {"head", q.head.substr(0, 64)}, {"mask", q.mask},
                {"query", q.query}, {"why", utf8_prefix(why, why_limit)}};
  });
}

std::string encode_class_evidence(const ClassEvidence& e) {
  json attempts = json::array();
  for (const EvidenceAttempt& a : e.attempts) {
    json evidence = a.evidence.empty() ? json(nullptr) : json::parse(a.evidence, nullptr, false);
    if (evidence.is_discarded()) evidence = nullptr;
    attempts.push_back({{"at", a.at}, {"passed", a.passed}, {"before_joining", a.before_joining},
                        {"answer", a.answer}, {"evidence", evidence}});
  }
  return dump({{"nickname", e.nickname}, {"lesson", e.lesson}, {"challenge", e.challenge}, {"title", e.title},
               {"text", e.text}, {"revealed_at", e.revealed_at.empty() ? json(nullptr) : json(e.revealed_at)},
               {"attempts", attempts}});
}

std::string encode_class_view(const ClassView& v) {
  json learners = json::array();
  for (const LearnerRow& r : v.learners) {
    json lessons = json::array();
    for (const LearnerLessonRow& l : r.lessons) {
      json cells = json::array();
      for (const ChallengeCell& c : l.challenges)
        cells.push_back({{"challenge", c.challenge}, {"done", c.done},
                         {"done_at", c.done ? json(c.done_at) : json(nullptr)}, {"tries", c.tries},
                         {"before_joining", c.before_joining},
                         {"revealed_at", c.revealed_at.empty() ? json(nullptr) : json(c.revealed_at)}});
      lessons.push_back({{"lesson", l.lesson}, {"challenges", cells}});
    }
    learners.push_back({{"nickname", r.nickname}, {"joined_at", r.joined_at}, {"total", r.total},
                        {"last_active", r.last_active}, {"lessons", lessons}});
  }
  json challenges = json::array();
  for (const ChallengeSummary& s : v.challenges) {
    json wrong = json::array();
    for (const WrongAnswer& w : s.wrong_answers) wrong.push_back({{"answer", w.answer}, {"count", w.count}});
    challenges.push_back({{"lesson", s.lesson}, {"lesson_title", s.lesson_title}, {"challenge", s.challenge},
                          {"title", s.title}, {"text", s.text}, {"done_count", s.done_count}, {"wrong_answers", wrong}});
  }
  json banned = json::array();
  for (const BannedLearner& b : v.banned) banned.push_back({{"nickname", b.nickname}, {"removed_at", b.banned_at}});
  return dump({{"class", info_json(v.info)}, {"learner_count", v.learner_count}, {"learners", learners},
               {"challenges", challenges}, {"removed", banned}});
}

std::string encode_class_csv(const ClassView& v) {
  std::map<std::pair<std::string, std::string>, std::string> titles;
  for (const ChallengeSummary& s : v.challenges) titles[{s.lesson, s.challenge}] = s.title;
  std::string out = "\xEF\xBB\xBFnickname,lesson,challenge,title,done,done_at,tries,before_joining,answer_shown\r\n";
  for (const LearnerRow& r : v.learners)
    for (const LearnerLessonRow& l : r.lessons)
      for (const ChallengeCell& c : l.challenges)
        out += csv_field(r.nickname) + "," + csv_field(l.lesson) + "," + csv_field(c.challenge) + "," +
               csv_field(titles[{l.lesson, c.challenge}]) + "," + (c.done ? "yes" : "no") + "," + csv_field(c.done_at) +
               "," + std::to_string(c.tries) + "," + (c.before_joining ? "yes" : "no") + "," +
               (c.revealed_at.empty() ? "no" : "yes") + "\r\n";
  return out;
}

}  // namespace headlab::server
