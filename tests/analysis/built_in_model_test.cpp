// The built-in model (models/headlab-tiny, what `headlab serve` loads) must show what the
// lessons teach with it, as the head scanner measures it on the held-out text it ships:
// a previous-token head (>= 0.6), an induction head (>= 0.6, positive copying score), a
// head that parks on the first token (>= 0.5), and in-context learning (the loss over a
// repeated random sequence's second copy at most a third of the first's). The scan runs
// through the CLI, as a user would run it.
#include <sys/wait.h>

#include <cstdio>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "testing/process.h"

namespace {

nlohmann::json scan_built_in_model() {
  const auto r = headlab::testing::command_run(std::string(HEADLAB_BINARY_DIR) + "/headlab scan --model " +
                                               HEADLAB_SOURCE_DIR + "/models/headlab-tiny --format json");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  return nlohmann::json::parse(r.out, nullptr, false);
}

struct Best {
  double score = -1.0;
  nlohmann::json head;
};

Best best_by(const nlohmann::json& report, const char* score) {
  Best b;
  for (const auto& h : report["heads"])
    if (h["scores"][score].get<double>() > b.score) b = {h["scores"][score].get<double>(), h};
  return b;
}

bool has_label(const nlohmann::json& head, const std::string& name) {
  for (const auto& l : head["labels"])
    if (l["label"] == name) return true;
  return false;
}

}  // namespace

TEST(BuiltInModel, HasAPreviousTokenHeadAnInductionHeadThatCopiesAndAHeadThatParksOnTheFirstToken) {
  const nlohmann::json report = scan_built_in_model();
  ASSERT_TRUE(report.is_object() && report.contains("heads"));
  const Best previous = best_by(report, "previous_token");
  const Best induction = best_by(report, "induction");
  const Best first = best_by(report, "first_token");
  std::printf("previous-token %s %.3f; induction %s %.3f (copying %.3f); first-token %s %.3f\n",
              previous.head["name"].get<std::string>().c_str(), previous.score,
              induction.head["name"].get<std::string>().c_str(), induction.score,
              induction.head["scores"]["copying"].get<double>(), first.head["name"].get<std::string>().c_str(),
              first.score);
  EXPECT_GE(previous.score, 0.6);
  EXPECT_TRUE(has_label(previous.head, "previous_token"));
  EXPECT_GE(induction.score, 0.6);
  EXPECT_GT(induction.head["scores"]["copying"].get<double>(), 0.0);
  EXPECT_TRUE(has_label(induction.head, "induction"));
  // K-composition: the induction head reads what a previous-token head of an earlier layer wrote
  EXPECT_LT(previous.head["layer"].get<int>(), induction.head["layer"].get<int>());
  EXPECT_GE(first.score, 0.5);
  EXPECT_TRUE(has_label(first.head, "sink") || has_label(first.head, "first_token"));
}

TEST(BuiltInModel, LearnsInContextTheSecondCopyCostsAtMostAThirdOfTheFirst) {
  const nlohmann::json report = scan_built_in_model();
  ASSERT_TRUE(report.contains("in_context_learning"));
  const auto& icl = report["in_context_learning"];
  std::printf("loss over the first copy %.3f, the second %.3f: ratio %.3f\n", icl["loss_first_copy"].get<double>(),
              icl["loss_second_copy"].get<double>(), icl["ratio"].get<double>());
  EXPECT_LE(icl["ratio"].get<double>(), 1.0 / 3.0);
}
