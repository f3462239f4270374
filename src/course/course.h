// course/course.h — the course: every lesson in teaching order, announced ones included.
// A lesson's number is its place in this list; GET /api/lessons serves it to the web app,
// which keeps only slug -> page (web/src/lessons/NN-slug/). See course/README.md.
//
//   for (const Lesson& l : course_lessons()) ... l.number, l.title ...
//   const Lesson* l = find_lesson("causal-mask");   // nullptr when unknown or coming
#pragma once

#include <string>
#include <vector>

#include "course/lesson.h"

namespace headlab::course {

const std::vector<Lesson>& course_lessons();

// The lesson with this id, or nullptr when there is none or it is only announced.
const Lesson* find_lesson(const std::string& id);

// "causal-mask, trained-heads": the lessons that exist, for error messages.
std::string lesson_ids_list();

}  // namespace headlab::course
