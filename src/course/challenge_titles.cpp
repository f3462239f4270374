// course/challenge_titles.cpp — see challenge_titles.h. Data only: (lesson, challenge) -> a
// title of a few words; (challenge, choice) -> the choice as a sentence fragment.
#include "course/challenge_titles.h"

#include <map>
#include <utility>

#include "course/course.h"

namespace headlab::course {
namespace {

using Key = std::pair<std::string, std::string>;

const std::map<Key, std::string>& titles() {
  static const std::map<Key, std::string> all = {
      {{"causal-mask", "induction-next-word"}, "Induction: the next word"},
      {{"causal-mask", "same-word-first-copy"}, "Same word: a first copy"},
      {{"causal-mask", "future-favourite"}, "Mask off: a future favourite"},
      {{"trained-heads", "pattern-quiz"}, "The previous-token pattern"},
      {{"trained-heads", "find-induction"}, "Find an induction head"},
      {{"trained-heads", "find-sink"}, "Sink or reads the first token"},
      {{"trained-heads", "ablation-matters"}, "The head whose removal hurts most"},
      {{"word-order", "shuffle-follows"}, "Shuffle: follow the word"},
      {{"word-order", "wpe-neighbour"}, "The most similar position"},
      {{"word-order", "offset-only"}, "Same offset, same q\u00b7k"},
  };
  return all;
}

const std::map<Key, std::string>& choices() {
  static const std::map<Key, std::string> all = {
      {{"pattern-quiz", "diagonal"}, "a bright diagonal"},
      {{"pattern-quiz", "first-column"}, "a bright first column"},
      {{"pattern-quiz", "below-diagonal"}, "the line just below the diagonal"},
      {{"pattern-quiz", "uniform"}, "an even spread"},
      {{"find-sink", "sink"}, "a sink"},
      {{"find-sink", "reads-first"}, "reads the first token"},
  };
  return all;
}

}  // namespace

bool has_challenge_title(const std::string& lesson, const std::string& challenge) {
  return titles().count({lesson, challenge}) > 0;
}

std::string challenge_title(const std::string& lesson, const std::string& challenge) {
  if (auto it = titles().find({lesson, challenge}); it != titles().end()) return it->second;
  if (const Lesson* l = find_lesson(lesson))
    for (const Challenge& c : l->challenges)
      if (c.id == challenge) return c.text;
  return challenge;
}

std::string choice_label(const std::string& /*lesson*/, const std::string& challenge, const std::string& choice) {
  if (auto it = choices().find({challenge, choice}); it != choices().end()) return it->second;
  std::string out = choice;
  for (char& c : out)
    if (c == '-') c = ' ';
  return out;
}

}  // namespace headlab::course
