// server/handlers/course_handlers.cpp — lessons list, lesson 2's checks, feedback.
#include "server/handlers/course_handlers.h"

#include <algorithm>
#include <cstdio>

#include "core/challenges.h"
#include "core/lessons.h"
#include "server/handlers/progress_handlers.h"

namespace headlab::server {
namespace {

std::string fixed(double v, int digits = 2) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string head_name(int layer, int head) { return std::to_string(layer) + "." + std::to_string(head); }

std::size_t code_points(const std::string& s) {
  std::size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

const analysis::HeadReport* find_head(const analysis::ScanReport& r, int layer, int head) {
  for (const auto& h : r.heads)
    if (h.layer == layer && h.head == head) return &h;
  return nullptr;
}

bool has_label(const analysis::HeadReport& h, const std::string& name) {
  return std::any_of(h.labels.begin(), h.labels.end(), [&](const analysis::Label& l) { return l.name == name; });
}

Status check_head_exists(const ModelService& m, int layer, int head) {
  const auto& c = m.info().config;
  if (layer < 0 || layer >= c.n_layer || head < 0 || head >= c.n_head)
    return make_error(ErrorCode::invalid_argument, "Answer with a head of the model: layer 0 to " + std::to_string(c.n_layer - 1) +
                                                       ", head 0 to " + std::to_string(c.n_head - 1) + ".");
  return {};
}

}  // namespace

Result<std::vector<LessonSummary>> handle_lessons(ProgressStore* store, const std::string& learner) {
  if (!learner.empty())
    if (auto s = validate_progress_query(ProgressQuery{learner, core::kCausalMaskLesson}); !s) return tl::unexpected(s.error());
  std::vector<LessonSummary> out;
  for (const core::LessonInfo& l : core::course_lessons()) {
    LessonSummary s{l.id, l.title, l.number, l.coming, static_cast<int>(l.challenges.size()), 0};
    if (store && !learner.empty() && !l.coming) {
      auto done = store->completed(learner, l.id);
      if (!done) return tl::unexpected(done.error());
      s.completed_count = static_cast<int>(done->size());
    }
    out.push_back(std::move(s));
  }
  return out;
}

Result<CheckVerdict> handle_trained_heads_check(ProgressStore& store, ModelService* model,
                                                const TrainedHeadsCheckRequest& req) {
  ProgressQuery q{req.learner, core::kTrainedHeadsLesson};
  if (auto s = validate_progress_query(q); !s) return tl::unexpected(s.error());
  CheckVerdict v;
  const std::string& c = req.challenge;
  if (c == "pattern-quiz") {
    static const std::vector<std::string> choices = {"diagonal", "first-column", "below-diagonal", "uniform"};
    if (std::find(choices.begin(), choices.end(), req.choice) == choices.end())
      return make_error(ErrorCode::invalid_argument,
                        "Answer with one of the choices: diagonal, first-column, below-diagonal, uniform.");
    v.correct = req.choice == "below-diagonal";
    v.explanation = v.correct ? "Right: row i puts its weight on column i - 1, so the bright cells form a stripe one step "
                                "below the diagonal. That is a previous-token head."
                              : req.choice == "diagonal"
                                    ? "Not quite: a diagonal means each token looks at itself, not at the word before it."
                                : req.choice == "first-column"
                                    ? "Not quite: a bright first column means every token looks at the first token."
                                    : "Not quite: an even spread means the head does not prefer any earlier word.";
    if (model) {
      auto scan = model->scan_report();
      if (scan) {
        auto best = analysis::best_head(*scan, &analysis::HeadScores::previous_token);
        if (best.layer >= 0 && v.correct)
          v.explanation += " In this model, head " + head_name(best.layer, best.head) + " does it best (previous-token score " +
                           fixed(best.score) + ").";
      }
    }
  } else if (c == "find-induction" || c == "find-sink" || c == "ablation-matters") {
    if (!model)
      return make_error(ErrorCode::unavailable, "No model is loaded, so this challenge cannot be checked. Start the server with --model DIR.");
    if (auto s = check_head_exists(*model, req.layer, req.head); !s) return tl::unexpected(s.error());
    const std::string name = head_name(req.layer, req.head);
    if (c == "ablation-matters") {
      if (req.text.empty()) return make_error(ErrorCode::invalid_argument, "Send the text you ablated the head on, in 'text'.");
      auto deltas = model->head_ablation_deltas(req.text);
      if (!deltas) return tl::unexpected(deltas.error());
      const int NH = model->info().config.n_head;
      const auto best = std::max_element(deltas->begin(), deltas->end());
      const float mine = (*deltas)[std::size_t(req.layer) * NH + req.head];
      v.correct = *best > 0 && mine >= 0.5f * *best;
      v.explanation = "Removing head " + name + " changes the loss by " + fixed(mine, 3) + " nats; the most any one head changes it is " +
                      fixed(*best, 3) + (v.correct ? " nats. This head matters." : " nats. Look for a head that matters more.");
    } else {
      auto scan = model->scan_report();
      if (!scan) return tl::unexpected(scan.error());
      const analysis::HeadReport* h = find_head(*scan, req.layer, req.head);
      if (!h) return make_error(ErrorCode::internal, "The scanner has no report for head " + name + ".");
      if (c == "find-induction") {
        v.correct = has_label(*h, "induction");
        v.explanation = "Head " + name + " has induction score " + fixed(h->scores.induction.score) + " (chance " +
                        fixed(h->scores.induction.chance) + ")" +
                        (v.correct ? ": on the second copy it looks at the token that followed the earlier copy."
                                   : ", too low to be an induction head. Look for the stripe that runs one step right of the "
                                     "earlier copy.");
      } else {
        v.correct = has_label(*h, "sink") || has_label(*h, "first_token");
        v.explanation = "Head " + name + " puts " + fixed(h->scores.first_token.score * 100, 0) +
                        "% of its attention on the first token" +
                        (v.correct ? "." : ". A head that parks there puts at least half of it there.");
      }
    }
  } else {
    return make_error(ErrorCode::invalid_argument,
                      "Unknown challenge '" + c.substr(0, 64) + "'. Challenges: pattern-quiz, find-induction, find-sink, ablation-matters.");
  }
  if (v.correct)
    if (auto r = store.record(q.learner, q.lesson, {c}); !r) return tl::unexpected(r.error());
  auto progress = view_of(store, q);
  if (!progress) return tl::unexpected(progress.error());
  v.progress = std::move(*progress);
  return v;
}

Result<std::int64_t> handle_feedback(FeedbackStore& store, RateLimiter& limiter, const std::string& client,
                                     const Feedback& f) {
  if (!core::find_lesson(f.lesson) && f.lesson != "explorer")
    return make_error(ErrorCode::invalid_argument,
                      "Unknown lesson '" + f.lesson.substr(0, 64) + "'. Use one of: " + core::lesson_ids_list() + ", explorer.");
  std::string trimmed = f.message;
  trimmed.erase(0, trimmed.find_first_not_of(" \t\r\n"));
  if (trimmed.empty()) return make_error(ErrorCode::invalid_argument, "The message is empty. Say what is wrong.");
  if (code_points(f.message) > 2000)
    return make_error(ErrorCode::too_long, "The message is " + std::to_string(code_points(f.message)) +
                                               " characters long; at most 2000 fit. Shorten it.");
  if (code_points(f.contact) > 200)
    return make_error(ErrorCode::too_long, "The contact is longer than 200 characters.");
  if (!limiter.allow(client))
    return make_error(ErrorCode::rate_limited, "Thank you, but that is a lot of notes at once: try again in a few minutes.");
  return store.add(f);
}

}  // namespace headlab::server
