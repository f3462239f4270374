// server/api/handlers/course_handlers.cpp — lessons list, answer checks, feedback.
#include "server/api/handlers/course_handlers.h"

#include <algorithm>
#include <optional>

#include "analysis/position_views.h"
#include "course/causal_mask.h"
#include "course/course.h"
#include "server/api/handlers/progress_handlers.h"

namespace headlab::server {
namespace {

std::size_t code_points(const std::string& s) {
  std::size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// The loaded model as the course's checks see it.
class ServedModel final : public course::LessonModel {
 public:
  explicit ServedModel(ModelService& m) : m_(m) {}
  int n_layer() const override { return m_.info().config.n_layer; }
  int n_head() const override { return m_.info().config.n_head; }
  Result<analysis::ScanReport> scan_report() override { return m_.scan_report(); }
  Result<std::vector<float>> head_ablation_deltas(const std::string& text) override {
    return m_.head_ablation_deltas(text);
  }
  Result<course::HeadOnText> head_on_text(const std::string& text, int layer, int head) override {
    ModelRunRequest req;
    req.text = text;
    req.all_heads = false;
    req.heads = {{layer, head}};
    req.want_value_weighted = true;
    req.top_k = 0;
    req.too_long_hint = "shorten the text";  // the lesson's check has no "truncate"
    auto r = m_.run(req);
    if (!r) return tl::unexpected(r.error());
    course::HeadOnText out;
    out.T = static_cast<int>(r->tokens.size());
    for (const model::Token& t : r->tokens) out.ids.push_back(t.id);
    // the run sends the packed causal half: row q holds keys 0..q
    const std::size_t T = std::size_t(out.T);
    out.pattern.assign(T * T, 0.0f);
    out.value_weighted.assign(T * T, 0.0f);
    const analysis::HeadViews& h = r->heads.at(0);
    std::size_t at = 0;
    for (std::size_t q = 0; q < T; ++q)
      for (std::size_t k = 0; k <= q; ++k, ++at) {
        out.pattern[q * T + k] = h.pattern.at(at);
        out.value_weighted[q * T + k] = h.value_weighted.at(at);
      }
    return out;
  }
  // Lesson 3 (word order): the content-only head and the learned positions, at most 64 tokens.
  Result<course::TokensOfText> tokens_of_text(const std::string& text) override {
    auto t = m_.tokenizer().encode(text, {.special = false});
    if (!t) return tl::unexpected(t.error());
    if (t->size() > 64) return make_error(ErrorCode::too_long, "The text is " + std::to_string(t->size()) + " tokens long; at most 64 fit.");
    course::TokensOfText out;
    for (model::Token& k : *t) out.ids.push_back(k.id), out.texts.push_back(std::move(k.text));
    return out;
  }
  Result<std::vector<float>> content_only_pattern(const std::vector<int>& ids, int head) override {
    return analysis::content_only_pattern(m_.parameters(), ids, head);
  }
  Result<course::PositionSimilarity> learned_position_similarity() override {
    const model::Parameters& p = m_.parameters();
    if (p.config.positions != model::ModelConfig::Positions::learned)
      return make_error(ErrorCode::unsupported, "This model has no learned position vectors (wpe).");
    return course::PositionSimilarity{p.config.n_ctx, analysis::position_similarity(p.t.wpe, p.config.n_ctx, p.config.n_embd)};
  }

 private:
  ModelService& m_;
};

}  // namespace

Result<std::vector<LessonSummary>> handle_lessons(ProgressStore* store, const std::string& learner) {
  if (!learner.empty())
    if (auto s = validate_progress_query(ProgressQuery{learner, course::kCausalMaskLesson}); !s) return tl::unexpected(s.error());
  std::vector<LessonSummary> out;
  for (const course::Lesson& l : course::course_lessons()) {
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

namespace {

// The choice must be one the challenge offers; a challenge without choices takes none. An
// unknown challenge is left to the lesson's check, which names the known ones.
Status validate_choice(const course::Lesson& l, const course::Answer& a) {
  if (a.choice.empty()) return {};
  auto ch = std::find_if(l.challenges.begin(), l.challenges.end(),
                         [&](const course::Challenge& c) { return c.id == a.challenge; });
  if (ch == l.challenges.end()) return {};
  if (ch->choices.empty())
    return make_error(ErrorCode::invalid_argument,
                      "The challenge '" + ch->id + "' takes no 'choice'; leave that field out.");
  if (std::find(ch->choices.begin(), ch->choices.end(), a.choice) != ch->choices.end()) return {};
  std::string list;
  for (const std::string& c : ch->choices) list += (list.empty() ? "" : ", ") + c;
  return make_error(ErrorCode::invalid_argument,
                    "Field 'choice' of the challenge '" + ch->id + "' must be one of: " + list + ".");
}

}  // namespace

Result<CheckVerdict> handle_lesson_check(ProgressStore& store, ModelService* model, const std::string& lesson,
                                         const LessonCheckRequest& req) {
  ProgressQuery q{req.learner, lesson};
  if (auto s = validate_progress_query(q); !s) return tl::unexpected(s.error());
  const course::Lesson* l = course::find_lesson(lesson);
  if (!l->check_answer)
    return make_error(ErrorCode::invalid_argument, "The challenges of '" + lesson +
                                                       "' are checked from what you look at, by POST /api/progress/check.");
  if (auto s = validate_choice(*l, req.answer); !s) return tl::unexpected(s.error());
  // A reveal is remembered by the server: the page's own flag is lost on a reload, and a
  // challenge whose answer was shown is never credited after (issue 26). It is remembered
  // once the answer has been explained: a request the check refuses shows nothing, so it
  // burns nothing (and the class is told of the reveal with the check, in the route).
  course::Answer answer = req.answer;
  if (!answer.revealed) {
    auto seen = store.revealed(q.learner, q.lesson, answer.challenge);
    if (!seen) return tl::unexpected(seen.error());
    answer.revealed = *seen;
  }
  std::optional<ServedModel> served;
  if (model) served.emplace(*model);
  auto verdict = l->check_answer(answer, served ? &*served : nullptr);
  if (!verdict) return tl::unexpected(verdict.error());
  if (req.answer.revealed)
    if (auto s = store.note_reveal(q.learner, q.lesson, answer.challenge); !s) return tl::unexpected(s.error());
  // A guess: only the first answer on its evidence may earn credit (a wrong one was told how
  // far off it was, or what the head is). The verdict names the evidence it spoke about, so
  // a refused request, or one whose explanation showed nothing (a text too short), spends no guess.
  if (!answer.revealed)
    if (const std::string& key = verdict->guess; !key.empty()) {
      auto first = store.note_guess(q.learner, q.lesson, answer.challenge, key);
      if (!first) return tl::unexpected(first.error());
      if (!*first && verdict->met) {
        verdict->met = false;
        const std::string what = key.substr(0, key.find('#'));  // "position", "shuffle": the key names its evidence
        verdict->explanation += " But you answered on this same " + what +
                                " before, and that answer's explanation pointed the way, so only the first answer on "
                                "a " + what + " counts. Try another " + what + ".";
      }
    }
  CheckVerdict v{verdict->met, std::move(verdict->explanation), {}, answer.revealed};
  if (v.correct)
    if (auto r = store.record(q.learner, q.lesson, {req.answer.challenge}); !r) return tl::unexpected(r.error());
  auto progress = view_of(store, q);
  if (!progress) return tl::unexpected(progress.error());
  v.progress = std::move(*progress);
  return v;
}

Result<std::int64_t> handle_feedback(FeedbackStore& store, RateLimiter& limiter, const std::string& client,
                                     const Feedback& f) {
  if (!course::find_lesson(f.lesson) && f.lesson != "explorer")
    return make_error(ErrorCode::invalid_argument,
                      "Unknown lesson '" + f.lesson.substr(0, 64) + "'. Use one of: " + course::lesson_ids_list() + ", explorer.");
  std::string trimmed = f.message;
  trimmed.erase(0, trimmed.find_first_not_of(" \t\r\n"));
  if (trimmed.empty()) return make_error(ErrorCode::invalid_argument, "The message is empty. Say what is wrong.");
  if (code_points(f.message) > 2000)
    return make_error(ErrorCode::too_long, "The message is " + std::to_string(code_points(f.message)) +
                                               " characters long; at most 2000 fit. Shorten it.");
  if (code_points(f.contact) > 200)
    return make_error(ErrorCode::too_long, "The contact is longer than 200 characters.");
  // a note refused for what it holds is not counted against the sender's limit
  if (Status s = FeedbackStore::check(f); !s) return tl::unexpected(s.error());
  if (!limiter.allow(client))
    return make_error(ErrorCode::rate_limited, "Thank you, but that is a lot of notes at once: try again in a few minutes.");
  return store.add(f);
}

}  // namespace headlab::server
