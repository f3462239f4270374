// course/course.cpp — the table of contents. One line per lesson, in teaching order.
#include "course/course.h"

#include "course/causal_mask.h"
#include "course/trained_heads.h"
#include "course/word_order.h"

namespace headlab::course {
namespace {

[[maybe_unused]] Lesson coming(std::string id, std::string title) { return {std::move(id), 0, std::move(title), true, {}, nullptr}; }

}  // namespace

const std::vector<Lesson>& course_lessons() {
  static const std::vector<Lesson> lessons = [] {
    std::vector<Lesson> all = {
        causal_mask_lesson(),
        trained_heads_lesson(),
        word_order_lesson(),
    };
    for (std::size_t i = 0; i < all.size(); ++i) all[i].number = static_cast<int>(i) + 1;
    return all;
  }();
  return lessons;
}

const Lesson* find_lesson(const std::string& id) {
  for (const Lesson& l : course_lessons())
    if (l.id == id && !l.coming) return &l;
  return nullptr;
}

std::string lesson_ids_list() {
  std::string out;
  for (const Lesson& l : course_lessons())
    if (!l.coming) out += (out.empty() ? "" : ", ") + l.id;
  return out;
}

}  // namespace headlab::course
