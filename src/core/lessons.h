// core/lessons.h — the course: its lessons in teaching order and each lesson's challenges.
// The first lesson's challenges are detected by core/challenges; the second lesson's are
// answers checked by the server against the loaded model.
#pragma once

#include <string>
#include <vector>

namespace headlab::core {

struct LessonChallenge {
  std::string id;    // stable: stored with a learner's progress
  std::string text;  // the task as the learner reads it
};

struct LessonInfo {
  std::string id;  // "causal-mask"
  int number = 0;
  std::string title;
  bool coming = false;  // announced, not built yet
  std::vector<LessonChallenge> challenges;
};

inline constexpr const char* kTrainedHeadsLesson = "trained-heads";

const std::vector<LessonInfo>& course_lessons();

// The lesson with this id, or nullptr.
const LessonInfo* find_lesson(const std::string& id);

// "causal-mask, trained-heads" (lessons that exist)
std::string lesson_ids_list();

}  // namespace headlab::core
