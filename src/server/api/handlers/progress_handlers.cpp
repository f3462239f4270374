// server/api/handlers/progress_handlers.cpp — lesson 1's detectors from course/causal_mask, rows in the store.
#include "server/api/handlers/progress_handlers.h"

#include <algorithm>

#include "course/causal_mask.h"
#include "course/course.h"
#include "server/api/handlers/lesson_handlers.h"

namespace headlab::server {
namespace {

Status validate(const ProgressQuery& q) {
  const std::string& id = q.learner;
  bool ok = id.size() >= 8 && id.size() <= 64 && std::all_of(id.begin(), id.end(), [](unsigned char c) {
              return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
            });
  if (!ok)
    return make_error(ErrorCode::invalid_argument,
                      "The learner id must be 8 to 64 characters of letters, digits, '-' or '_' (the page makes "
                      "one for you; clear this site's storage to get a new one).");
  if (!course::find_lesson(q.lesson))
    return make_error(ErrorCode::invalid_argument, "Unknown lesson '" + q.lesson.substr(0, 64) +
                                                       "'. Lessons: " + course::lesson_ids_list() + ".");
  return {};
}

}  // namespace

Status validate_progress_query(const ProgressQuery& q) { return validate(q); }

Result<ProgressView> view_of(ProgressStore& store, const ProgressQuery& q) {
  auto done = store.completed(q.learner, q.lesson);
  if (!done) return tl::unexpected(done.error());
  ProgressView v;
  v.lesson = q.lesson;
  v.learner = q.learner;
  for (const course::Challenge& c : course::find_lesson(q.lesson)->challenges)
    v.challenges.push_back({c.id, c.text, std::find(done->begin(), done->end(), c.id) != done->end()});
  return v;
}

Result<ProgressView> handle_progress_get(ProgressStore& store, const ProgressQuery& query) {
  if (auto s = validate(query); !s) return tl::unexpected(s.error());
  return view_of(store, query);
}

Result<ProgressView> handle_progress_check(ProgressStore& store, const ProgressCheckRequest& request) {
  ProgressQuery q{request.learner, request.lesson};
  if (auto s = validate(q); !s) return tl::unexpected(s.error());
  if (q.lesson != course::kCausalMaskLesson)
    return make_error(ErrorCode::invalid_argument, "This route checks the challenges of '" + std::string(course::kCausalMaskLesson) +
                                                       "'; answers for '" + q.lesson + "' go to /api/lessons/" + q.lesson + "/check.");
  auto pattern = handle_weights(WeightsRequest{request.sentence, request.head, request.mask});
  if (!pattern) return tl::unexpected(pattern.error());
  if (request.query < 0 || request.query >= pattern->size())
    return make_error(ErrorCode::invalid_argument,
                      "query " + std::to_string(request.query) + " is out of range: the sentence has " +
                          std::to_string(pattern->size()) + " tokens (0 to " + std::to_string(pattern->size() - 1) +
                          ").");
  const course::CausalMaskEvidence evidence{*pattern, static_cast<int>(request.query)};
  std::vector<std::string> met = course::causal_mask_challenges_met(evidence);
  std::vector<std::string> met_why;  // what each met check computed, for a class member's teacher
  for (const std::string& id : met)
    for (const course::DetectedChallenge& d : course::causal_mask_challenges())
      if (d.challenge.id == id) met_why.push_back(d.check(evidence).explanation);
  auto fresh = store.record(q.learner, q.lesson, met);
  if (!fresh) return tl::unexpected(fresh.error());
  auto v = view_of(store, q);
  if (!v) return v;
  v->newly_completed = std::move(*fresh);
  v->include_newly_completed = true;
  v->met = std::move(met);
  v->met_why = std::move(met_why);
  return v;
}

Result<ProgressView> handle_progress_reset(ProgressStore& store, const ProgressQuery& query) {
  if (auto s = validate(query); !s) return tl::unexpected(s.error());
  if (auto s = store.reset(query.learner, query.lesson); !s) return tl::unexpected(s.error());
  return view_of(store, query);
}

}  // namespace headlab::server
