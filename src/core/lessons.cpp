// core/lessons.cpp — the course's table of contents.
#include "core/lessons.h"

#include "core/challenges.h"

namespace headlab::core {

const std::vector<LessonInfo>& course_lessons() {
  static const std::vector<LessonInfo> lessons = [] {
    LessonInfo first{kCausalMaskLesson, 1, "Attention heads and the causal mask", false, {}};
    for (const ChallengeInfo& c : causal_mask_challenges()) first.challenges.push_back({c.name, c.text});
    LessonInfo second{kTrainedHeadsLesson, 2, "What trained heads learn", false,
                      {{"pattern-quiz", "Pick the pattern a head draws when it copies the word right before it."},
                       {"find-induction", "On a repeated text, find a head of the model that completes the pattern."},
                       {"find-sink", "Find a head of the model that parks its attention on the first token."},
                       {"ablation-matters",
                        "Find a head whose removal hurts the model's predictions on your repeated text the most."}}};
    LessonInfo third{"word-order", 3, "Encoding word order and RoPE", true, {}};
    return std::vector<LessonInfo>{first, second, third};
  }();
  return lessons;
}

const LessonInfo* find_lesson(const std::string& id) {
  for (const LessonInfo& l : course_lessons())
    if (l.id == id && !l.coming) return &l;
  return nullptr;
}

std::string lesson_ids_list() {
  std::string out;
  for (const LessonInfo& l : course_lessons())
    if (!l.coming) out += (out.empty() ? "" : ", ") + l.id;
  return out;
}

}  // namespace headlab::core
