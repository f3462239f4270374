// The teacher's view computed from a class's attempts: done, when, tries, the most common
// wrong answers (readable), titles, totals, last active, reveals and passes carried over on
// joining; a cell's evidence; and how an answer and a check's evidence are written down.
#include "server/api/handlers/class_handlers.h"

#include <gtest/gtest.h>

#include <atomic>

#include <nlohmann/json.hpp>

#include "course/challenge_titles.h"
#include "server/api/class_codec.h"
#include "server/store/progress_store.h"
#include "testing/test_server.h"

using namespace headlab;
using namespace headlab::server;
using headlab::testing::temp_path;

namespace {

struct Fixture {
  std::shared_ptr<std::atomic<std::int64_t>> now = std::make_shared<std::atomic<std::int64_t>>(1'800'000'000'000);
  std::unique_ptr<ClassStore> store;
  std::string code;
  Fixture() {
    ClassStoreOptions o;
    o.fast_hash_for_tests = true;
    o.clock = [now = now] { return now->fetch_add(1000); };  // each write one second later
    store = std::move(*ClassStore::open(temp_path("view.db"), o));
    code = store->create_class("Period 3", "")->info.code;
  }
  const ChallengeCell& cell(const ClassView& v, int learner, const std::string& lesson, const std::string& challenge) {
    for (const LearnerLessonRow& l : v.learners.at(learner).lessons)
      if (l.lesson == lesson)
        for (const ChallengeCell& c : l.challenges)
          if (c.challenge == challenge) return c;
    throw std::runtime_error("no cell " + lesson + "/" + challenge);
  }
  const ChallengeSummary& summary(const ClassView& v, const std::string& challenge) {
    for (const ChallengeSummary& s : v.challenges)
      if (s.challenge == challenge) return s;
    throw std::runtime_error("no summary " + challenge);
  }
};

}  // namespace

TEST(ClassView, ADoneChallengeCountsTheTriesUpToItsFirstPass) {
  Fixture f;
  f.store->join(f.code, "learner-0001", "Ada");
  f.store->record_attempt("learner-0001", "trained-heads", "pattern-quiz", false, "uniform");
  f.store->record_attempt("learner-0001", "trained-heads", "pattern-quiz", false, "diagonal");
  f.store->record_attempt("learner-0001", "trained-heads", "pattern-quiz", true, "below-diagonal");
  f.store->record_attempt("learner-0001", "trained-heads", "pattern-quiz", false, "uniform");  // after: not a try
  auto v = build_class_view(*f.store, f.code);
  ASSERT_TRUE(v) << v.error().message;
  const ChallengeCell& c = f.cell(*v, 0, "trained-heads", "pattern-quiz");
  EXPECT_TRUE(c.done);
  EXPECT_EQ(c.tries, 3);
  EXPECT_EQ(c.done_at, "2027-01-15T08:00:04.000Z");  // the create, the join, two misses, then this
  const ChallengeCell& open = f.cell(*v, 0, "trained-heads", "find-sink");
  EXPECT_FALSE(open.done);
  EXPECT_EQ(open.tries, 0);
  EXPECT_TRUE(open.done_at.empty());
}

TEST(ClassView, CountsWhoHasEachChallengeAndTheCommonestWrongAnswersFirst) {
  Fixture f;
  const char* answers[4][2] = {{"uniform", "diagonal"}, {"uniform", "first-column"}, {"uniform", nullptr}, {"diagonal", nullptr}};
  for (int i = 0; i < 4; ++i) {
    std::string learner = "learner-000" + std::to_string(i);
    f.store->join(f.code, learner, "L" + std::to_string(i));
    for (const char* a : answers[i])
      if (a) f.store->record_attempt(learner, "trained-heads", "pattern-quiz", false, a);
  }
  f.store->record_attempt("learner-0000", "trained-heads", "pattern-quiz", true, "below-diagonal");
  f.store->record_attempt("learner-0001", "trained-heads", "pattern-quiz", true, "below-diagonal");
  f.store->record_attempt("learner-0002", "trained-heads", "pattern-quiz", false, "(revealed)");
  f.store->record_attempt("learner-0002", "trained-heads", "pattern-quiz", false, "zzz");
  auto v = build_class_view(*f.store, f.code);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->learner_count, 4);
  const ChallengeSummary& s = f.summary(*v, "pattern-quiz");
  EXPECT_EQ(s.done_count, 2);
  ASSERT_EQ(s.wrong_answers.size(), 3u);  // at most three
  EXPECT_EQ(s.wrong_answers[0].answer, "an even spread");  // readable, not the id "uniform"
  EXPECT_EQ(s.wrong_answers[0].count, 3);
  EXPECT_EQ(s.wrong_answers[1].answer, "a bright diagonal");
  EXPECT_EQ(s.wrong_answers[1].count, 2);
}

TEST(ClassView, ListsEveryLessonWithChallengesForEveryLearnerInJoiningOrder) {
  Fixture f;
  f.store->join(f.code, "learner-0002", "Zed");
  f.store->join(f.code, "learner-0001", "Ada");
  auto v = build_class_view(*f.store, f.code);
  ASSERT_TRUE(v);
  ASSERT_EQ(v->learners.size(), 2u);
  EXPECT_EQ(v->learners[0].nickname, "Zed");
  ASSERT_EQ(v->learners[0].lessons.size(), 3u);
  EXPECT_EQ(v->learners[0].lessons[0].lesson, "causal-mask");
  EXPECT_EQ(v->learners[0].lessons[1].lesson, "trained-heads");
  EXPECT_EQ(v->learners[0].lessons[2].lesson, "word-order");
  EXPECT_EQ(v->learners[0].lessons[1].challenges.size(), 4u);
  EXPECT_EQ(build_class_view(*f.store, "NOSUCH").error().code, ErrorCode::not_found);
}

TEST(ClassView, NotesLesson1sDetectedChallengesAsPassesWithoutAnAnswer) {
  Fixture f;
  f.store->join(f.code, "learner-0001", "Ada");
  ASSERT_TRUE(note_detected(f.store.get(), "learner-0001", "causal-mask", {"future-favourite"}));
  ASSERT_TRUE(note_detected(nullptr, "learner-0001", "causal-mask", {"future-favourite"}));  // no store: nothing
  auto v = build_class_view(*f.store, f.code);
  EXPECT_TRUE(f.cell(*v, 0, "causal-mask", "future-favourite").done);
  EXPECT_EQ(f.cell(*v, 0, "causal-mask", "future-favourite").tries, 1);
}

TEST(ClassView, AChallengeMetAgainIsNotedOnceAndOneMissedIsMadeGoodByTheNextCheck) {
  Fixture f;
  f.store->join(f.code, "learner-0001", "Ada");
  ASSERT_TRUE(note_detected(f.store.get(), "learner-0001", "causal-mask", {"future-favourite"}));
  const std::int64_t version = f.store->find_class(f.code)->version;
  // the same challenge met again (already done): nothing new, the version stays for the pollers
  ASSERT_TRUE(note_detected(f.store.get(), "learner-0001", "causal-mask", {"future-favourite"}));
  EXPECT_EQ(f.store->find_class(f.code)->version, version);
  EXPECT_EQ(f.store->attempts(f.code)->size(), 1u);
  // a check meeting one noted and one the class never heard of (its note was lost): the new one
  ASSERT_TRUE(note_detected(f.store.get(), "learner-0001", "causal-mask", {"future-favourite", "induction-next-word"}));
  EXPECT_EQ(f.store->attempts(f.code)->size(), 2u);
  auto v = build_class_view(*f.store, f.code);
  EXPECT_TRUE(f.cell(*v, 0, "causal-mask", "induction-next-word").done);
  EXPECT_EQ(f.cell(*v, 0, "causal-mask", "future-favourite").tries, 1);
}

TEST(DescribeAnswer, NamesTheChoiceTheHeadOrThatItWasRevealed) {
  course::Answer a;
  a.choice = "uniform";
  EXPECT_EQ(describe_answer(a), "uniform");
  a.choice = "";
  a.layer = 1;
  a.head = 3;
  EXPECT_EQ(describe_answer(a), "L1 H3");
  a.revealed = true;
  EXPECT_EQ(describe_answer(a), "(revealed)");
}

TEST(ClassJoin, RefusesALearnerIdThatIsNotOne) {
  Fixture f;
  RateLimiter by_address(10, std::chrono::minutes(1)), share(10, std::chrono::minutes(1)), by_class(10, std::chrono::minutes(1));
  auto r = handle_class_join(*f.store, {by_address, share, by_class}, "10.0.0.1", {f.code, "no", "Ada"});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::invalid_argument);
}

TEST(ClassJoin, TriesPastTheAddresssLimitAreRateLimitedWithTheWait) {
  Fixture f;
  RateLimiter by_address(2, std::chrono::minutes(1)), share(10, std::chrono::minutes(1)), by_class(10, std::chrono::minutes(1));
  const auto start = RateLimiter::Clock::now();
  EXPECT_EQ(handle_class_join(*f.store, {by_address, share, by_class}, "10.0.0.1", {"NOSUCH", "learner-0001", "Ada"}).error().code,
            ErrorCode::not_found);  // a wrong code counts too
  EXPECT_TRUE(handle_class_join(*f.store, {by_address, share, by_class}, "10.0.0.1", {f.code, "learner-0001", "Ada"}));
  auto r = handle_class_join(*f.store, {by_address, share, by_class}, "10.0.0.1", {f.code, "learner-0002", "Bo"});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::rate_limited);
  EXPECT_GE(r.error().retry_after_s, 1);
  EXPECT_LE(r.error().retry_after_s,
            60 - std::chrono::duration_cast<std::chrono::seconds>(RateLimiter::Clock::now() - start).count() + 1);
  EXPECT_TRUE(handle_class_join(*f.store, {by_address, share, by_class}, "10.0.0.2", {f.code, "learner-0002", "Bo"}));
  EXPECT_EQ(f.store->members(f.code)->size(), 2u);
}

TEST(ClassJoin, TriesPastTheClasssLimitAreRateLimitedFromAnyAddress) {
  Fixture f;
  RateLimiter by_address(10, std::chrono::minutes(1)), share(10, std::chrono::minutes(1)), by_class(2, std::chrono::minutes(1));
  EXPECT_TRUE(handle_class_join(*f.store, {by_address, share, by_class}, "10.0.0.1", {f.code, "learner-0001", "Ada"}));
  EXPECT_FALSE(handle_class_join(*f.store, {by_address, share, by_class}, "10.0.0.2", {f.code, "learner-0002", "Ada"}));  // taken
  auto r = handle_class_join(*f.store, {by_address, share, by_class}, "10.0.0.3", {f.code, "learner-0003", "Cy"});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::rate_limited);
  EXPECT_GE(r.error().retry_after_s, 1);
  EXPECT_EQ(f.store->members(f.code)->size(), 1u);
}

TEST(ClassJoin, OneAddressCannotSpendTheClasssWholeMinute) {
  Fixture f;
  RateLimiter by_address(100, std::chrono::minutes(1)), share(3, std::chrono::minutes(1)), by_class(5, std::chrono::minutes(1));
  // junk from one address: bad nicknames, each try counted
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(handle_class_join(*f.store, {by_address, share, by_class}, "203.0.113.7", {f.code, "learner-0001", "  "}).error().code,
              ErrorCode::invalid_argument);
  auto r = handle_class_join(*f.store, {by_address, share, by_class}, "203.0.113.7", {f.code, "learner-0001", "Ada"});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::rate_limited);
  EXPECT_NE(r.error().message.find("from this address"), std::string::npos) << r.error().message;
  // the refused try was not charged to the class: the learners of other addresses get in
  EXPECT_TRUE(handle_class_join(*f.store, {by_address, share, by_class}, "198.51.100.1", {f.code, "learner-0002", "Bo"}));
  EXPECT_TRUE(handle_class_join(*f.store, {by_address, share, by_class}, "198.51.100.2", {f.code, "learner-0003", "Cy"}));
}

TEST(ClassJoin, LimitsCountAnIpv6Slash64AsOneAddress) {
  Fixture f;
  RateLimiter by_address(2, std::chrono::minutes(1)), share(10, std::chrono::minutes(1)), by_class(10, std::chrono::minutes(1));
  EXPECT_TRUE(handle_class_join(*f.store, {by_address, share, by_class}, "2001:db8:0:1::1", {f.code, "learner-0001", "Ada"}));
  EXPECT_TRUE(handle_class_join(*f.store, {by_address, share, by_class}, "2001:db8:0:1::2", {f.code, "learner-0002", "Bo"}));
  auto r = handle_class_join(*f.store, {by_address, share, by_class}, "2001:db8:0:1:ffff::3", {f.code, "learner-0003", "Cy"});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::rate_limited);
  EXPECT_TRUE(handle_class_join(*f.store, {by_address, share, by_class}, "2001:db8:0:2::1", {f.code, "learner-0003", "Cy"}));
}

TEST(ReadableAnswer, NamesAChoiceByItsLabelAHeadByLayerAndHeadAndALookAsAnswerShown) {
  EXPECT_EQ(readable_answer("trained-heads", "pattern-quiz", "below-diagonal"), "the line just below the diagonal");
  EXPECT_EQ(readable_answer("trained-heads", "find-sink", "reads-first"), "reads the first token");
  EXPECT_EQ(readable_answer("trained-heads", "find-induction", "L1 H3"), "layer 1, head 3");
  EXPECT_EQ(readable_answer("trained-heads", "pattern-quiz", "(revealed)"), "answer shown");
  EXPECT_EQ(readable_answer("trained-heads", "pattern-quiz", "zzz"), "zzz");  // not offered: as it is
}

TEST(ClassView, EveryChallengeOfTheCourseHasATitleAndItsLessonsTitleForTheColumnHeads) {
  Fixture f;
  auto v = build_class_view(*f.store, f.code);
  ASSERT_TRUE(v);
  ASSERT_FALSE(v->challenges.empty());
  for (const ChallengeSummary& s : v->challenges) {
    EXPECT_TRUE(course::has_challenge_title(s.lesson, s.challenge)) << s.lesson << "/" << s.challenge;
    EXPECT_NE(s.title, s.challenge);
    EXPECT_LE(s.title.size(), 40u) << s.title;
    EXPECT_FALSE(s.lesson_title.empty());
  }
  EXPECT_EQ(f.summary(*v, "induction-next-word").title, "Induction: the next word");
}

TEST(ClassView, GivesEachLearnerTheirTotalAndWhenTheyWereLastActive) {
  Fixture f;
  f.store->join(f.code, "learner-0001", "Ada");  // at :01
  f.store->join(f.code, "learner-0002", "Bo");   // at :02
  f.store->record_attempt("learner-0001", "trained-heads", "pattern-quiz", true, "below-diagonal");  // :03
  ASSERT_TRUE(note_detected(f.store.get(), "learner-0001", "causal-mask", {"future-favourite"}));    // :04
  f.store->record_attempt("learner-0001", "trained-heads", "find-sink", false, "sink");             // :05
  auto v = build_class_view(*f.store, f.code);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->learners[0].total, 2);
  EXPECT_EQ(v->learners[0].last_active, "2027-01-15T08:00:05.000Z");
  EXPECT_EQ(v->learners[1].total, 0);
  EXPECT_EQ(v->learners[1].last_active, v->learners[1].joined_at);  // nothing since joining
}

TEST(ClassView, MarksAChallengeWhoseAnswerTheLearnerWasShownAndDoesNotCountTheLookAsWrong) {
  std::string db = temp_path("reveal.db");
  ClassStoreOptions o;
  o.fast_hash_for_tests = true;
  auto store = std::move(*ClassStore::open(db, o));
  auto progress = std::move(*ProgressStore::open(db));
  const std::string code = store->create_class("Period 3", "")->info.code;
  ASSERT_TRUE(store->join(code, "learner-0001", "Ada"));
  ASSERT_TRUE(progress->note_reveal("learner-0001", "trained-heads", "find-sink"));
  course::Answer a;
  a.challenge = "find-sink";
  a.revealed = true;
  ASSERT_TRUE(note_answer_check(store.get(), "learner-0001", "trained-heads", a, false));
  auto v = build_class_view(*store, code);
  ASSERT_TRUE(v);
  const LearnerLessonRow& l = v->learners[0].lessons[1];
  ASSERT_EQ(l.challenges[2].challenge, "find-sink");
  EXPECT_FALSE(l.challenges[2].revealed_at.empty());
  EXPECT_FALSE(l.challenges[2].done);
  EXPECT_TRUE(l.challenges[0].revealed_at.empty());
  for (const ChallengeSummary& s : v->challenges) EXPECT_TRUE(s.wrong_answers.empty()) << s.challenge;
}

TEST(ClassView, ProgressMadeBeforeJoiningIsCarriedOverAndMarkedSo) {
  std::string db = temp_path("carried.db");
  ClassStoreOptions o;
  o.fast_hash_for_tests = true;
  auto store = std::move(*ClassStore::open(db, o));
  auto progress = std::move(*ProgressStore::open(db));
  const std::string code = store->create_class("Period 3", "")->info.code;
  ASSERT_TRUE(progress->record("learner-0001", "causal-mask", {"future-favourite"}));
  ASSERT_TRUE(progress->record("learner-0001", "trained-heads", {"pattern-quiz"}));
  auto m = store->join(code, "learner-0001", "Ada");
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_EQ(m->carried_over, 2);
  auto v = build_class_view(*store, code);
  ASSERT_TRUE(v);
  const ChallengeCell& c = v->learners[0].lessons[0].challenges[2];
  ASSERT_EQ(c.challenge, "future-favourite");
  EXPECT_TRUE(c.done);
  EXPECT_TRUE(c.before_joining);
  EXPECT_EQ(c.tries, 0);  // no try in class
  EXPECT_EQ(v->learners[0].total, 2);
  EXPECT_EQ(v->learners[0].last_active, v->learners[0].joined_at);  // earlier work is not activity in class
  // joining again under the same nickname carries nothing twice
  EXPECT_EQ(store->join(code, "learner-0001", "Ada")->carried_over, 0);
  EXPECT_EQ(store->attempts(code)->size(), 2u);
}

TEST(ClassEvidence, ShowsTheLearnersTextHeadAndTheNumbersTheCheckComputedUpToTheFirstPass) {
  Fixture f;
  f.store->join(f.code, "learner-0001", "Ada");
  auto session = f.store->open_session(f.code);
  ASSERT_TRUE(session);
  const std::string e1 = R"({"text":"the cat the cat","layer":1,"head":3,"why":"head 1.3 puts 0.12 on the token after"})";
  const std::string e2 = R"({"text":"the cat the cat","layer":1,"head":4,"why":"head 1.4 puts 0.81 on the token after"})";
  f.store->record_attempt("learner-0001", "trained-heads", "find-induction", false, "L1 H3", "", e1);
  f.store->record_attempt("learner-0001", "trained-heads", "find-induction", true, "L1 H4", "", e2);
  auto e = handle_class_evidence(*f.store, session->token, {f.code, "ada", "trained-heads", "find-induction"});
  ASSERT_TRUE(e) << e.error().message;
  EXPECT_EQ(e->nickname, "Ada");
  EXPECT_EQ(e->title, "Find an induction head");
  ASSERT_EQ(e->attempts.size(), 2u);
  EXPECT_EQ(e->attempts[0].answer, "layer 1, head 3");
  EXPECT_EQ(e->attempts[0].evidence, e1);
  EXPECT_TRUE(e->attempts[1].passed);
  EXPECT_EQ(e->attempts[1].evidence, e2);
  EXPECT_EQ(handle_class_evidence(*f.store, session->token, {f.code, "Nobody", "trained-heads", "find-induction"}).error().code,
            ErrorCode::not_found);
  EXPECT_EQ(handle_class_evidence(*f.store, session->token, {f.code, "Ada", "trained-heads", "no-such"}).error().code,
            ErrorCode::not_found);
  EXPECT_EQ(handle_class_evidence(*f.store, "not-a-token", {f.code, "Ada", "trained-heads", "find-induction"}).error().code,
            ErrorCode::unauthorized);
}

TEST(CheckEvidence, ALongTextAndExplanationAreShortenedSoTheEvidenceFitsItsBound) {
  course::Answer a;
  a.challenge = "find-induction";
  a.layer = 1;
  a.head = 3;
  for (int i = 0; i < 20000; ++i) a.text += "\u5B66 \x01";  // wide characters and controls (escaped longer in JSON)
  const std::string e = encode_check_evidence(a, std::string(50000, '7'));
  ASSERT_FALSE(e.empty());
  EXPECT_LE(e.size(), ClassStore::kMaxEvidenceBytes);
  nlohmann::json j = nlohmann::json::parse(e);  // still JSON, the text cut between characters
  EXPECT_EQ(j["layer"], 1);
  EXPECT_EQ(j["head"], 3);
  EXPECT_FALSE(j["text"].get<std::string>().empty());
  EXPECT_FALSE(j["why"].get<std::string>().empty());
  ProgressCheckRequest q{"learner-0001", "causal-mask", "the cat sat", "induction", false, 2};
  nlohmann::json d = nlohmann::json::parse(encode_detected_evidence(q, "Query 2 looks ahead."));
  EXPECT_EQ(d, (nlohmann::json{{"text", "the cat sat"}, {"head", "induction"}, {"mask", false}, {"query", 2},
                               {"why", "Query 2 looks ahead."}}));
}
