// server/api/handlers/class_handlers.h — classes and the teacher's view: create, join, leave,
// teacher login, the grid of learners x challenges, removal and deletion. Plain functions
// from typed requests to Results; the HTTP side (cookies, ETag, CSV) is in class_routes.
//
//   auto made = handle_class_create(store, {"Period 3", ""});     // made->secret, made->session
//   auto view = handle_class_view(store, made->session.token, made->info.code);
//
// Teacher routes take the session token (from the cookie) and the class code they act on:
// no or a wrong or an expired token is unauthorized (401), a live session of another class
// is forbidden (403). A learner id is never a credential.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "course/evidence.h"
#include "server/store/class_store.h"
#include "server/http/rate_limiter.h"
#include "server/api/login_backoff.h"
#include "util/result.h"

namespace headlab::server {

struct ClassCreateRequest {
  std::string name;
  std::string passphrase;  // empty: a secret is generated and shown once
};

struct CreatedClass {
  ClassInfo info;
  std::string secret;      // empty when the teacher set a passphrase
  TeacherSession session;  // the teacher who created it is logged in
};

struct ClassJoinRequest {
  std::string code, learner, nickname;
};

struct LearnerMembership {
  std::optional<ClassInfo> cls;  // nullopt: in no class
  std::string nickname;
  int carried_over = 0;  // join only: challenges finished before joining that the teacher now sees
};

struct TeacherLoginRequest {
  std::string code, secret;
};

struct TeacherLogin {
  ClassInfo info;
  TeacherSession session;
};

// The teacher's view of one class.
struct ChallengeCell {
  std::string challenge;
  bool done = false;
  std::string done_at;  // the first passing check, "" when not done
  int tries = 0;        // checks until the first pass (all checks when not done)
  bool before_joining = false;  // done before the learner joined: carried over (ClassStore::join)
  std::string revealed_at;      // when the learner was shown the answer, "" when never:
                                // the challenge is not credited after it
};

struct LearnerLessonRow {
  std::string lesson;
  std::vector<ChallengeCell> challenges;  // in the lesson's order
};

struct LearnerRow {
  std::string nickname, joined_at;
  std::vector<LearnerLessonRow> lessons;  // every lesson with challenges, in course order
  int total = 0;            // challenges done, of ClassView::challenges.size()
  std::string last_active;  // the learner's latest check, reveal or joining (ISO-8601 UTC)
};

struct WrongAnswer {
  std::string answer;  // readable: "an even spread", "layer 1, head 3" (readable_answer)
  int count = 0;
};

struct ChallengeSummary {
  std::string lesson, challenge, text;
  std::string title, lesson_title;  // what the teacher reads (course/challenge_titles.h)
  int done_count = 0;                      // learners of the class who have it
  std::vector<WrongAnswer> wrong_answers;  // the most common first, at most 3
};

struct ClassView {
  ClassInfo info;
  int learner_count = 0;
  std::vector<LearnerRow> learners;           // in joining order
  std::vector<ChallengeSummary> challenges;   // course order
  std::vector<BannedLearner> banned;          // removed learners, kept out until let back in
};

// Errors: those of ClassStore::create_class; rate_limited (more than 20 classes an hour
// from one address).
Result<CreatedClass> handle_class_create(ClassStore& store, RateLimiter& limiter, const std::string& client,
                                         const ClassCreateRequest& request);

// How often learners may try to join, in this order: per address (one machine trying many
// codes; a classroom behind one NAT address shares it), per class and address (one
// address's share of a class's joins, so no single address can spend the class's whole
// budget), and per class (a class flooded with names from many addresses). A limit refuses
// before the next one is charged. Addresses are counted by client_block (IPv6 by /64).
struct JoinLimits {
  RateLimiter& by_address;
  RateLimiter& by_class_and_address;
  RateLimiter& by_class;
};

// Errors: invalid_argument (a learner id that is not 8-64 of A-Z a-z 0-9 - _, a bad or
// taken nickname, in another class already), forbidden (removed by the teacher), not_found
// (no such code), rate_limited (past a limit; every try counts, joined or not, with the
// seconds to wait).
Result<LearnerMembership> handle_class_join(ClassStore& store, const JoinLimits& limits, const std::string& client,
                                            const ClassJoinRequest& request);
Result<LearnerMembership> handle_class_membership(ClassStore& store, const std::string& learner);
// Deletes the learner's class data. Errors: invalid_argument, not_found (in no class).
Result<LearnerMembership> handle_class_leave(ClassStore& store, const std::string& learner);

// How often a teacher's login may be tried: per address (every try counts: one machine
// trying many classes), and per class and address, with a growing wait after failures
// (login_backoff.h). Nothing is counted per class alone: wrong guesses from a learner's
// machine never lock the teacher out of their class from another address.
struct LoginLimits {
  RateLimiter& by_address;
  LoginBackoff& by_class_and_address;
};

// Errors: unauthorized (wrong code or secret), rate_limited (more than 30 tries from one
// address in 10 minutes, or this address failed for this class 5 times and waits 2^k s;
// with the seconds to wait). A right secret from an address that is not waiting logs in.
Result<TeacherLogin> handle_teacher_login(ClassStore& store, const LoginLimits& limits, const std::string& client,
                                          const TeacherLoginRequest& request);
Status handle_teacher_logout(ClassStore& store, const std::string& token);

// The class the token may act on, when it is `code`. Errors: unauthorized, forbidden.
Result<ClassInfo> authorize_teacher(ClassStore& store, const std::string& token, const std::string& code);

// The view itself, without a credential: for the CLI, which reads the file directly.
// Errors: not_found, the store's.
Result<ClassView> build_class_view(ClassStore& store, const std::string& code);

Result<ClassView> handle_class_view(ClassStore& store, const std::string& token, const std::string& code);
Result<ClassView> handle_remove_learner(ClassStore& store, const std::string& token, const std::string& code,
                                        const std::string& nickname);
// Lets a removed learner join again (by the nickname they had). Errors: those of
// authorize_teacher, not_found (nobody of that nickname was removed).
Result<ClassView> handle_unban_learner(ClassStore& store, const std::string& token, const std::string& code,
                                       const std::string& nickname);
Status handle_class_delete(ClassStore& store, const std::string& token, const std::string& code);

// What the teacher sees on clicking a cell: the learner's kept checks of one challenge.
struct EvidenceRequest {
  std::string code, nickname, lesson, challenge;
};

struct EvidenceAttempt {
  std::string at;
  bool passed = false;
  bool before_joining = false;
  std::string answer;    // readable (readable_answer), "" for a detected or carried-over pass
  std::string evidence;  // JSON the check left (encode_check_evidence), "" when none was kept
};

struct ClassEvidence {
  std::string nickname, lesson, challenge, title, text;
  std::string revealed_at;                // "" when the learner was never shown the answer
  std::vector<EvidenceAttempt> attempts;  // oldest first, up to and including the first pass
};

// Errors: those of authorize_teacher, not_found (no such learner, lesson or challenge).
Result<ClassEvidence> handle_class_evidence(ClassStore& store, const std::string& token, const EvidenceRequest& request);

// What a class member's checks leave for the teacher (nothing when the learner is in no
// class, or store is null): an answer check, passed or not, with the answer given; and
// lesson 1's detected challenges: every challenge the check met gets one passing attempt
// unless the class has one for this learner already. Met, not newly completed: a check
// whose progress write was saved but whose class note was not (a server killed between
// the two, PostgreSQL gone for a moment) is made good by the learner's next check.
// A check that carries a request id is noted once however often it is retried.
// `evidence` is what the check saw, as the class codec writes it (encode_check_evidence):
// kept beside the check for the teacher's click on a cell; evidence[i] goes with met[i].
Status note_answer_check(ClassStore* store, const std::string& learner, const std::string& lesson,
                         const course::Answer& answer, bool correct, const std::string& request_id = "",
                         const std::string& evidence = "");
Status note_detected(ClassStore* store, const std::string& learner, const std::string& lesson,
                     const std::vector<std::string>& met, const std::vector<std::string>& evidence = {});

// How an answer to an answer check reads in the teacher's list of wrong answers:
// the choice ("uniform"), or the head ("L1 H3"); "(revealed)" when the learner looked.
std::string describe_answer(const course::Answer& answer);
// A described answer as the teacher reads it: a choice by its label ("an even spread"), a
// head as "layer 1, head 3", "answer shown" for "(revealed)"; anything else as it is.
std::string readable_answer(const std::string& lesson, const std::string& challenge, const std::string& described);

}  // namespace headlab::server
