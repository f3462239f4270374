// The course's table of contents: order, numbers, announced lessons.
#include "course/course.h"

#include <gtest/gtest.h>

using namespace headlab::course;

TEST(Course, ListsTheLessonsInTeachingOrderNumberedFromOne) {
  const auto& all = course_lessons();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].id, "causal-mask");
  EXPECT_EQ(all[1].id, "trained-heads");
  EXPECT_EQ(all[2].id, "word-order");
  for (std::size_t i = 0; i < all.size(); ++i) EXPECT_EQ(all[i].number, static_cast<int>(i) + 1);
}

TEST(Course, TheWordOrderLessonIsBuiltAndComesThird) {
  const Lesson* l = find_lesson("word-order");
  ASSERT_NE(l, nullptr);
  EXPECT_FALSE(l->coming);
  EXPECT_EQ(l->number, 3);
  EXPECT_EQ(l->challenges.size(), 3u);
  EXPECT_EQ(find_lesson("nope"), nullptr);
  EXPECT_EQ(lesson_ids_list(), "causal-mask, trained-heads, word-order");
}

TEST(Course, OnlyAnsweredLessonsHaveAnAnswerCheck) {
  EXPECT_EQ(find_lesson("causal-mask")->check_answer, nullptr);  // detected from the view
  EXPECT_NE(find_lesson("trained-heads")->check_answer, nullptr);
  EXPECT_NE(find_lesson("word-order")->check_answer, nullptr);
}

TEST(Course, LessonIdsAreUrlSlugs) {
  for (const Lesson& l : course_lessons()) {
    ASSERT_FALSE(l.id.empty());
    for (char c : l.id) EXPECT_TRUE((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-') << l.id;
  }
}
