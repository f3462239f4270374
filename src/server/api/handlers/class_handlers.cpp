// server/api/handlers/class_handlers.cpp — the teacher's view is computed from the class's
// attempts: a challenge is done at its first passing check; its tries are the checks up to
// that one; its wrong answers are the failing checks' answers, counted across the class.
#include "server/api/handlers/class_handlers.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <tuple>

#include "course/causal_mask.h"
#include "course/challenge_titles.h"
#include "course/course.h"
#include "server/http/http_rules.h"
#include "server/api/handlers/progress_handlers.h"
#include "util/untrusted_text.h"

namespace headlab::server {
namespace {

Status validate_learner(const std::string& learner) {
  return validate_progress_query(ProgressQuery{learner, course::kCausalMaskLesson});
}

LearnerMembership membership_of(const ClassInfo& info, const ClassMember& m) { return {info, m.nickname, m.carried_over}; }

}  // namespace

std::string describe_answer(const course::Answer& a) {
  if (a.revealed) return "(revealed)";
  if (!a.choice.empty()) return a.choice;
  if (a.layer >= 0 && a.head >= 0) return "L" + std::to_string(a.layer) + " H" + std::to_string(a.head);
  return "";
}

std::string readable_answer(const std::string& lesson, const std::string& challenge, const std::string& described) {
  if (described == "(revealed)") return "answer shown";
  int layer = -1, head = -1;
  char tail = 0;
  if (std::sscanf(described.c_str(), "L%d H%d%c", &layer, &head, &tail) == 2 && layer >= 0 && head >= 0)
    return "layer " + std::to_string(layer) + ", head " + std::to_string(head);
  if (const course::Lesson* l = course::find_lesson(lesson))
    for (const course::Challenge& c : l->challenges)
      if (c.id == challenge && std::find(c.choices.begin(), c.choices.end(), described) != c.choices.end())
        return course::choice_label(lesson, challenge, described);
  return described;
}

Status note_answer_check(ClassStore* store, const std::string& learner, const std::string& lesson,
                         const course::Answer& answer, bool correct, const std::string& request_id,
                         const std::string& evidence) {
  if (!store) return {};
  return store->record_attempt(learner, lesson, answer.challenge, correct, describe_answer(answer), request_id, evidence);
}

Status note_detected(ClassStore* store, const std::string& learner, const std::string& lesson,
                     const std::vector<std::string>& met, const std::vector<std::string>& evidence) {
  if (!store || met.empty()) return {};
  return store->record_passes(learner, lesson, met, evidence);
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
  auto reveals = store.reveals(code);
  if (!reveals) return tl::unexpected(reveals.error());

  ClassView view;
  view.info = *info;
  view.banned = std::move(*banned);
  view.learner_count = static_cast<int>(members->size());
  // (learner, lesson, challenge) -> its cell, filled from the attempts in time order
  std::map<std::tuple<std::string, std::string, std::string>, ChallengeCell> cells;
  std::map<std::pair<std::string, std::string>, std::map<std::string, int>> wrong;  // (lesson, challenge) -> answer -> n
  std::map<std::string, std::string> last_active;  // learner -> latest check or reveal (ISO text sorts by time)
  auto touch = [&](const std::string& learner, const std::string& at) {
    std::string& t = last_active[learner];
    if (at > t) t = at;
  };
  for (const Attempt& a : *attempts) {
    if (!a.before_joining) touch(a.learner, a.at);
    ChallengeCell& c = cells[{a.learner, a.lesson, a.challenge}];
    if (c.done) continue;  // checks after the first pass do not count as tries
    if (a.before_joining) {  // not a try in class: done, and marked as carried over
      c.done = true;
      c.done_at = a.at;
      c.before_joining = true;
      continue;
    }
    ++c.tries;
    if (a.passed) {
      c.done = true;
      c.done_at = a.at;
    } else if (!a.answer.empty() && a.answer != "(revealed)") {  // looking is not a wrong answer
      ++wrong[{a.lesson, a.challenge}][readable_answer(a.lesson, a.challenge, a.answer)];
    }
  }
  for (const Reveal& r : *reveals) {
    touch(r.learner, r.at);
    cells[{r.learner, r.lesson, r.challenge}].revealed_at = r.at;
  }
  for (const ClassMember& m : *members) {
    LearnerRow row{m.nickname, m.joined_at, {}, 0, m.joined_at};
    if (auto t = last_active.find(m.learner); t != last_active.end() && t->second > row.last_active)
      row.last_active = t->second;
    for (const course::Lesson& l : course::course_lessons()) {
      if (l.coming || l.challenges.empty()) continue;
      LearnerLessonRow lr{l.id, {}};
      for (const course::Challenge& ch : l.challenges) {
        auto it = cells.find({m.learner, l.id, ch.id});
        ChallengeCell c = it == cells.end() ? ChallengeCell{} : it->second;
        c.challenge = ch.id;
        row.total += c.done;
        lr.challenges.push_back(std::move(c));
      }
      row.lessons.push_back(std::move(lr));
    }
    view.learners.push_back(std::move(row));
  }
  for (const course::Lesson& l : course::course_lessons()) {
    if (l.coming) continue;
    for (const course::Challenge& ch : l.challenges) {
      ChallengeSummary s{l.id, ch.id, ch.text, course::challenge_title(l.id, ch.id), l.title, 0, {}};
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

Result<ClassEvidence> handle_class_evidence(ClassStore& store, const std::string& token, const EvidenceRequest& request) {
  if (auto a = authorize_teacher(store, token, request.code); !a) return tl::unexpected(a.error());
  const course::Lesson* l = course::find_lesson(request.lesson);
  if (!l) return make_error(ErrorCode::not_found, "No lesson is called '" + request.lesson.substr(0, 32) + "'.");
  auto ch = std::find_if(l->challenges.begin(), l->challenges.end(),
                         [&](const course::Challenge& c) { return c.id == request.challenge; });
  if (ch == l->challenges.end())
    return make_error(ErrorCode::not_found, "The lesson '" + l->id + "' has no challenge '" +
                                                request.challenge.substr(0, 32) + "'.");
  auto attempts = store.learner_attempts(request.code, request.nickname, l->id, ch->id);
  if (!attempts) return tl::unexpected(attempts.error());
  auto members = store.members(request.code);
  if (!members) return tl::unexpected(members.error());
  ClassEvidence out{{}, l->id, ch->id, course::challenge_title(l->id, ch->id), ch->text, {}, {}};
  std::string learner;
  for (const ClassMember& m : *members)
    if (nickname_key(m.nickname) == nickname_key(request.nickname)) {
      out.nickname = m.nickname;
      learner = m.learner;
    }
  auto reveals = store.reveals(request.code);
  if (!reveals) return tl::unexpected(reveals.error());
  for (const Reveal& r : *reveals)
    if (r.learner == learner && r.lesson == l->id && r.challenge == ch->id) out.revealed_at = r.at;
  for (const Attempt& a : *attempts) {
    out.attempts.push_back({a.at, a.passed, a.before_joining, readable_answer(l->id, ch->id, a.answer), a.evidence});
    if (a.passed) break;  // checks after the first pass are not kept, nor shown
  }
  return out;
}

}  // namespace headlab::server
