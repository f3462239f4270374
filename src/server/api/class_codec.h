// server/api/class_codec.h — the classes' JSON bodies and the teacher's CSV export, in and out.
// Decoding is strict, as in json_codec: unknown, missing or mistyped fields are
// invalid_argument errors naming the field. The CLI prints the same JSON and CSV.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "course/evidence.h"
#include "server/api/api_types.h"
#include "server/api/handlers/class_handlers.h"
#include "util/result.h"

namespace headlab::server {

Result<ClassCreateRequest> decode_class_create(std::string_view body);  // {"name", "passphrase"?}
Result<ClassJoinRequest> decode_class_join(std::string_view body);      // {"code", "learner", "nickname"}
Result<std::string> decode_learner_only(std::string_view body);         // {"learner"}
Result<TeacherLoginRequest> decode_teacher_login(std::string_view body);  // {"code", "secret"}
Result<std::string> decode_class_code(std::string_view body);           // {"code"}
// {"code", "nickname"}: which learner the teacher removes (or lets back in)
Result<std::pair<std::string, std::string>> decode_remove_learner(std::string_view body);
// GET /api/class/evidence?code=K7QPM3&nickname=Ada&lesson=trained-heads&challenge=find-induction
Result<EvidenceRequest> decode_evidence_query(const std::map<std::string, std::string>& query);

// What a check saw, kept with it for the teacher (ClassStore::kMaxEvidenceBytes at most: the
// learner's text and the explanation are shortened until it fits):
//   an answer check:  {"text", "layer", "head", "choice", "positions", "why"} (those given)
//   lesson 1's:       {"text", "head", "mask", "query", "why"}
std::string encode_check_evidence(const course::Answer& answer, const std::string& why);
std::string encode_detected_evidence(const ProgressCheckRequest& request, const std::string& why);

// join_path: "/#/join/K7QPM3", the page a learner opens
std::string class_join_path(const std::string& code);
std::string encode_created_class(const CreatedClass& c);
std::string encode_class_info(const ClassInfo& c);
std::string encode_membership(const LearnerMembership& m);
std::string encode_class_view(const ClassView& v);
// The kept evidence is embedded as JSON (null when none was kept or it does not parse).
std::string encode_class_evidence(const ClassEvidence& e);

// A UTF-8 byte order mark, then one row per learner x challenge: nickname, lesson,
// challenge, title, done, done_at, tries, before_joining, answer_shown. The mark makes
// spreadsheets (Excel) read the nicknames as UTF-8. A field that a spreadsheet would run as
// a formula (= + - @ first) gets a leading '.
std::string encode_class_csv(const ClassView& v);

}  // namespace headlab::server
