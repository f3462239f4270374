// The lesson's two programs: the output the page shows is what they print when run now,
// and both print the same answer.
#include "server/api/lesson_programs.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <memory>

using namespace headlab::server;

namespace {
std::string run(const std::string& command) {
  std::array<char, 512> buf{};
  std::string out;
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  if (!pipe) return "popen failed";
  while (std::fgets(buf.data(), buf.size(), pipe.get())) out += buf.data();
  return out;
}
const Program& program(const std::string& id) {
  for (const Program& p : lesson_programs())
    if (p.id == id) return p;
  throw std::runtime_error("no program " + id);
}
}  // namespace

TEST(LessonPrograms, NumpyOutputShownIsWhatTheProgramPrintsNow) {
  std::string now = run("/usr/bin/python3 " HEADLAB_SOURCE_DIR "/examples/causal_mask/induction_by_rule.py 2>&1");
  EXPECT_EQ(program("numpy").output, now);
  EXPECT_NE(now.find("cat (7) looks most at chased (2) with weight 0.92"), std::string::npos) << now;
  EXPECT_NE(now.find("weight on future keys: 0.0"), std::string::npos);
  EXPECT_NE(now.find("12 heads of width 64"), std::string::npos);
}

TEST(LessonPrograms, CppOutputShownIsWhatTheProgramPrintsNow) {
  std::string now = run(HEADLAB_BINARY_DIR "/examples/example_induction_by_rule 2>&1");
  EXPECT_EQ(program("cpp").output, now);
}

TEST(LessonPrograms, NumpyAndCppAgree) { EXPECT_EQ(program("numpy").output, program("cpp").output); }

TEST(LessonPrograms, SourcesShownAreTheFilesInTheRepository) {
  std::string py = run("cat " HEADLAB_SOURCE_DIR "/examples/causal_mask/induction_by_rule.py");
  EXPECT_EQ(program("numpy").source, py);
}
