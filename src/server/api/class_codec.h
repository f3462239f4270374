// server/api/class_codec.h — the classes' JSON bodies and the teacher's CSV export, in and out.
// Decoding is strict, as in json_codec: unknown, missing or mistyped fields are
// invalid_argument errors naming the field. The CLI prints the same JSON and CSV.
#pragma once

#include <string>
#include <string_view>

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

// join_path: "/#/join/K7QPM3", the page a learner opens
std::string class_join_path(const std::string& code);
std::string encode_created_class(const CreatedClass& c);
std::string encode_class_info(const ClassInfo& c);
std::string encode_membership(const LearnerMembership& m);
std::string encode_class_view(const ClassView& v);

// One row per learner x challenge: nickname, lesson, challenge, done, done_at, tries.
// A field that a spreadsheet would run as a formula (= + - @ first) gets a leading '.
std::string encode_class_csv(const ClassView& v);

}  // namespace headlab::server
