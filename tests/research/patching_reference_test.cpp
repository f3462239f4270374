// Activation patching against the PyTorch reference (tools/reference/make_research_fixtures.py:
// TransformerLens's loop, one full float64 forward per index): every "patch" value and
// "noising_resid_pre" of tests/fixtures/research/<model>/expected.json, with the shortcuts on,
// to 1e-4 * max(1, |x|) (the engine runs in float32). A model whose fixture is absent is skipped.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>

#include "formats/model_files.h"
#include "research/patching.h"
#include "testing/model_fixtures.h"

using namespace headlab::research;
using headlab::testing::read_json_file;
using nlohmann::json;

namespace {

class PatchingReference : public ::testing::TestWithParam<const char*> {};

// Flattens a nested JSON array of numbers in row-major order.
void flatten(const json& j, std::vector<double>& out) {
  if (j.is_array())
    for (const json& x : j) flatten(x, out);
  else
    out.push_back(j.get<double>());
}

}  // namespace

TEST_P(PatchingReference, EverySweepMatchesTransformerLensLoopInFloat64) {
  const std::string dir = std::string(HEADLAB_SOURCE_DIR) + "/tests/fixtures/research/" + GetParam();
  if (!std::filesystem::exists(dir + "/expected.json")) GTEST_SKIP() << dir << " is not here yet";
  const json prompts = read_json_file(dir + "/prompts.json");
  const json expected = read_json_file(dir + "/expected.json");
  auto params = headlab::model::model_load(std::string(HEADLAB_SOURCE_DIR) + "/" + prompts["model"].get<std::string>());
  ASSERT_TRUE(params) << params.error().message;
  PatchPair pair{prompts["clean"].get<std::vector<int>>(), prompts["corrupted"].get<std::vector<int>>(),
                 prompts["answer"].get<int>(), prompts["wrong"].get<int>()};
  headlab::model::Workspace ws;
  double worst_of_all = 0;
  auto check = [&](const std::string& what, bool noising, const json& want) {
    PatchRequest rq;
    rq.what = *parse_patch_what(what);
    rq.noising = noising;
    auto r = patch(*params, {&pair, 1}, rq, ws);
    ASSERT_TRUE(r) << what << ": " << r.error().message;
    EXPECT_NEAR(r->clean, expected["logit_diff"]["clean"].get<double>(), 1e-4 * std::max(1.0, std::fabs(double(r->clean))));
    EXPECT_NEAR(r->corrupted, expected["logit_diff"]["corrupted"].get<double>(),
                1e-4 * std::max(1.0, std::fabs(double(r->corrupted))));
    std::vector<double> ref;
    flatten(want, ref);
    ASSERT_EQ(r->values.size(), ref.size()) << what;
    double worst = 0;
    std::size_t at = 0;
    for (std::size_t i = 0; i < ref.size(); i++) {
      const double d = std::fabs(r->values[i] - ref[i]) / std::max(1.0, std::fabs(ref[i]));
      if (d > worst) worst = d, at = i;
    }
    worst_of_all = std::max(worst_of_all, worst);
    EXPECT_LT(worst, 1e-4) << GetParam() << " " << what << (noising ? " (noising)" : "") << ": worst at " << at << ", "
                           << r->values[at] << " vs " << ref[at];
  };
  for (auto it = expected["patch"].begin(); it != expected["patch"].end(); ++it) check(it.key(), false, it.value());
  check("resid_pre", true, expected["noising_resid_pre"]);
  std::printf("%s: %zu sweeps, max |headlab - reference| / max(1, |x|) = %.2g\n", GetParam(),
              expected["patch"].size() + 1, worst_of_all);
}

INSTANTIATE_TEST_SUITE_P(Models, PatchingReference,
                         ::testing::Values("gpt2_tiny", "llama", "gemma2", "pythia", "headlab_tiny"));
