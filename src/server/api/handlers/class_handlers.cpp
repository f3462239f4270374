// server/api/handlers/class_handlers.cpp — the teacher's view is computed from the class's
// attempts: a challenge is done at its first passing check; its tries are the checks up to
// that one; its wrong answers are the failing checks' answers, counted across the class.
#include "server/api/handlers/class_handlers.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "course/causal_mask.h"
#include "course/course.h"
#include "server/http/http_rules.h"
#include "server/api/handlers/progress_handlers.h"

namespace headlab::server {
namespace {

Status validate_learner(const std::string& learner) {
  return validate_progress_query(ProgressQuery{learner, course::kCausalMaskLesson});
}

LearnerMembership membership_of(const ClassInfo& info, const ClassMember& m) { return {info, m.nickname}; }

}  // namespace

std::string describe_answer(const course::Answer& a) {
  if (a.revealed) return "(revealed)";
  if (!a.choice.empty()) return a.choice;
  if (a.layer >= 0 && a.head >= 0) return "L" + std::to_string(a.layer) + " H" + std::to_string(a.head);
  return "";
}

Status note_answer_check(ClassStore* store, const std::string& learner, const std::string& lesson,
                         const course::Answer& answer, bool correct, const std::string& request_id) {
  if (!store) return {};
  return store->record_attempt(learner, lesson, answer.challenge, correct, describe_answer(answer), request_id);
}

Status note_detected(ClassStore* store, const std::string& learner, const std::string& lesson,
                     const std::vector<std::string>& met) {
  if (!store || met.empty()) return {};
  return store->record_passes(learner, lesson, met);
}

Result<CreatedClass> handle_class_create(ClassStore& store, RateLimiter& limiter, const std::string& client,
                                         const ClassCreateRequest& request) {
  if (!limiter.allow(client))
    return rate_limited("Many classes were created from this address in the last hour; try later.",
                        limiter.retry_after_s(client));
  auto made = store.create_class(request.name, request.passphrase);
  if (!made) return tl::unexpected(made.error());
  auto session = store.open_session(made->info.code);
  if (!session) return tl::unexpected(session.error());
  return CreatedClass{made->info, made->secret, *session};
}

Result<LearnerMembership> handle_class_join(ClassStore& store, const JoinLimits& limits, const std::string& client,
                                            const ClassJoinRequest& request) {
  if (auto s = validate_learner(request.learner); !s) return tl::unexpected(s.error());
  // The address first: one machine trying many codes is stopped before it touches a class;
  // then its share of this class, so it cannot spend the class's whole minute.
  const std::string block = client_block(client);
  if (!limits.by_address.allow(block))
    return rate_limited("Too many tries to join a class from this address; wait a moment and try again.",
                        limits.by_address.retry_after_s(block));
  const std::string class_key = request.code.substr(0, 16);
  const std::string pair_key = class_key + " " + block;
  if (!limits.by_class_and_address.allow(pair_key))
    return rate_limited("Many learners are joining this class from this address right now; wait a moment and try again.",
                        limits.by_class_and_address.retry_after_s(pair_key));
  if (!limits.by_class.allow(class_key))
    return rate_limited("Many learners are joining this class right now; wait a moment and try again.",
                        limits.by_class.retry_after_s(class_key));
  auto info = store.find_class(request.code);
  if (!info) return tl::unexpected(info.error());
  auto m = store.join(request.code, request.learner, request.nickname);
  if (!m) return tl::unexpected(m.error());
  return membership_of(*info, *m);
}

Result<LearnerMembership> handle_class_membership(ClassStore& store, const std::string& learner) {
  if (auto s = validate_learner(learner); !s) return tl::unexpected(s.error());
  auto m = store.membership(learner);
  if (!m) return tl::unexpected(m.error());
  if (!*m) return LearnerMembership{};
  return membership_of((*m)->first, (*m)->second);
}

Result<LearnerMembership> handle_class_leave(ClassStore& store, const std::string& learner) {
  if (auto s = validate_learner(learner); !s) return tl::unexpected(s.error());
  if (auto s = store.leave(learner); !s) return tl::unexpected(s.error());
  return LearnerMembership{};
}

Result<TeacherLogin> handle_teacher_login(ClassStore& store, const LoginLimits& limits, const std::string& client,
                                          const TeacherLoginRequest& request) {
  // The address first: one machine trying many classes is stopped before it costs a hash.
  const std::string block = client_block(client);
  if (!limits.by_address.allow(block))
    return rate_limited("Too many login attempts from this address; wait and try again.",
                        limits.by_address.retry_after_s(block));
  // Then this address on this class: counted as a failure now, forgiven if it is right.
  const std::string pair_key = request.code.substr(0, 16) + " " + block;
  if (int wait = limits.by_class_and_address.begin(pair_key))
    return rate_limited("Too many wrong logins for this class from this address; wait " + std::to_string(wait) +
                            " s and try again.",
                        wait);
  auto ok = store.verify_teacher(request.code, request.secret);
  if (!ok) return tl::unexpected(ok.error());
  if (!*ok) return make_error(ErrorCode::unauthorized, "The class code or the teacher's secret is wrong.");
  limits.by_class_and_address.succeeded(pair_key);
  auto info = store.find_class(request.code);
  if (!info) return tl::unexpected(info.error());
  auto session = store.open_session(request.code);
  if (!session) return tl::unexpected(session.error());
  return TeacherLogin{*info, *session};
}

Status handle_teacher_logout(ClassStore& store, const std::string& token) {
  if (token.empty()) return {};
  return store.close_session(token);
}

Result<ClassInfo> authorize_teacher(ClassStore& store, const std::string& token, const std::string& code) {
  auto session_code = store.session_class(token);
  if (!session_code) return tl::unexpected(session_code.error());
  if (*session_code != code)
    return make_error(ErrorCode::forbidden, "You are logged in as the teacher of another class; log in to this one.");
  return store.find_class(code);
}

Result<ClassView> build_class_view(ClassStore& store, const std::string& code) {
  auto info = store.find_class(code);
  if (!info) return tl::unexpected(info.error());
  auto members = store.members(code);
  if (!members) return tl::unexpected(members.error());
  auto attempts = store.attempts(code);
  if (!attempts) return tl::unexpected(attempts.error());
  auto banned = store.banned(code);
  if (!banned) return tl::unexpected(banned.error());

  ClassView view;
  view.info = *info;
  view.banned = std::move(*banned);
  view.learner_count = static_cast<int>(members->size());
  // (learner, lesson, challenge) -> its cell, filled from the attempts in time order
  std::map<std::tuple<std::string, std::string, std::string>, ChallengeCell> cells;
  std::map<std::pair<std::string, std::string>, std::map<std::string, int>> wrong;  // (lesson, challenge) -> answer -> n
  for (const Attempt& a : *attempts) {
    ChallengeCell& c = cells[{a.learner, a.lesson, a.challenge}];
    if (c.done) continue;  // checks after the first pass do not count as tries
    ++c.tries;
    if (a.passed) {
      c.done = true;
      c.done_at = a.at;
    } else if (!a.answer.empty() && a.answer != "(revealed)") {  // looking is not a wrong answer
      ++wrong[{a.lesson, a.challenge}][a.answer];
    }
  }
  for (const ClassMember& m : *members) {
    LearnerRow row{m.nickname, m.joined_at, {}};
    for (const course::Lesson& l : course::course_lessons()) {
      if (l.coming || l.challenges.empty()) continue;
      LearnerLessonRow lr{l.id, {}};
      for (const course::Challenge& ch : l.challenges) {
        auto it = cells.find({m.learner, l.id, ch.id});
        ChallengeCell c = it == cells.end() ? ChallengeCell{} : it->second;
        c.challenge = ch.id;
        lr.challenges.push_back(std::move(c));
      }
      row.lessons.push_back(std::move(lr));
    }
    view.learners.push_back(std::move(row));
  }
  for (const course::Lesson& l : course::course_lessons()) {
    if (l.coming) continue;
    for (const course::Challenge& ch : l.challenges) {
      ChallengeSummary s{l.id, ch.id, ch.text, 0, {}};
      for (const ClassMember& m : *members) {
        auto it = cells.find({m.learner, l.id, ch.id});
        s.done_count += it != cells.end() && it->second.done;
      }
      for (const auto& [answer, n] : wrong[{l.id, ch.id}]) s.wrong_answers.push_back({answer, n});
      std::stable_sort(s.wrong_answers.begin(), s.wrong_answers.end(),
                       [](const WrongAnswer& a, const WrongAnswer& b) { return a.count > b.count; });
      if (s.wrong_answers.size() > 3) s.wrong_answers.resize(3);
      view.challenges.push_back(std::move(s));
    }
  }
  return view;
}

Result<ClassView> handle_class_view(ClassStore& store, const std::string& token, const std::string& code) {
  if (auto a = authorize_teacher(store, token, code); !a) return tl::unexpected(a.error());
  return build_class_view(store, code);
}

Result<ClassView> handle_remove_learner(ClassStore& store, const std::string& token, const std::string& code,
                                        const std::string& nickname) {
  if (auto a = authorize_teacher(store, token, code); !a) return tl::unexpected(a.error());
  if (auto s = store.remove_member(code, nickname); !s) return tl::unexpected(s.error());
  return build_class_view(store, code);
}

Result<ClassView> handle_unban_learner(ClassStore& store, const std::string& token, const std::string& code,
                                       const std::string& nickname) {
  if (auto a = authorize_teacher(store, token, code); !a) return tl::unexpected(a.error());
  if (auto s = store.unban_member(code, nickname); !s) return tl::unexpected(s.error());
  return build_class_view(store, code);
}

Status handle_class_delete(ClassStore& store, const std::string& token, const std::string& code) {
  if (auto a = authorize_teacher(store, token, code); !a) return tl::unexpected(a.error());
  return store.delete_class(code);
}

}  // namespace headlab::server
