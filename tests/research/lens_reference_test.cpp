// The logit lens, direct logit attribution, composition scores and copying scores against the
// PyTorch reference (tests/fixtures/research/<model>/expected.json, made by
// tools/reference/make_research_fixtures.py from the published definitions, float64), on GPT-2,
// Llama with GQA, Gemma 2, Pythia and the built-in model, to 1e-4 * max(1, |x|).
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "formats/model_files.h"
#include "research/attribution.h"
#include "research/composition.h"
#include "research/lens.h"
#include "testing/model_fixtures.h"

using namespace headlab;
using nlohmann::json;

namespace {

const char* kReferenceModels[] = {"gpt2_tiny", "llama", "gemma2", "pythia", "headlab_tiny"};

struct Reference {
  json prompts, expected;
  model::Parameters params;
  std::vector<int> clean;
};

Reference reference(const std::string& name) {
  const std::string dir = std::string(HEADLAB_SOURCE_DIR) + "/tests/fixtures/research/" + name;
  Reference r;
  r.prompts = headlab::testing::read_json_file(dir + "/prompts.json");
  r.expected = headlab::testing::read_json_file(dir + "/expected.json");
  auto p = model::model_load(std::string(HEADLAB_SOURCE_DIR) + "/" + r.prompts["model"].get<std::string>());
  if (!p) throw std::runtime_error(p.error().message);
  r.params = std::move(*p);
  r.clean = r.prompts["clean"].get<std::vector<int>>();
  return r;
}

double tol(double x) { return 1e-4 * std::max(1.0, std::fabs(x)); }

}  // namespace

TEST(LensReference, MatchesThePyTorchReferenceOnFiveModels) {
  for (const char* name : kReferenceModels) {
    SCOPED_TRACE(name);
    Reference ref = reference(name);
    const json& e = ref.expected["lens"];
    research::LensRequest rq;
    rq.top_k = 5;
    rq.answers = {ref.prompts["answer"].get<int>()};
    model::Workspace ws;
    auto r = research::logit_lens(ref.params, ref.clean, rq, ws);
    ASSERT_TRUE(r) << r.error().message;
    ASSERT_EQ(std::size_t(r->entries), e["entropy"].size());
    for (int l = 0; l < r->entries; l++)
      for (int t = 0; t < r->T; t++) {
        const research::LensCell& c = r->cell(l, t);
        SCOPED_TRACE("entry " + std::to_string(l) + ", position " + std::to_string(t));
        const double entropy = e["entropy"][l][t], kl = e["kl_to_final"][l][t], lp = e["logprob_answer"][l][t];
        EXPECT_NEAR(c.entropy, entropy, tol(entropy));
        EXPECT_NEAR(c.kl_final, kl, tol(kl));
        EXPECT_NEAR(c.answers[0].logprob, lp, tol(lp));
        // ranks: within the count of tokens the reference finds tied with the answer (1e-4)
        EXPECT_LE(std::abs(c.answers[0].rank - e["rank_answer"][l][t].get<int>()), e["rank_answer_ties"][l][t].get<int>());
        // the top 5: logits always; ids where the reference's neighbours are more than 1e-4 apart
        const json& ids = e["top5"][l][t];
        const json& logits = e["top5_logit"][l][t];
        for (int k = 0; k < 5; k++) {
          const double want = logits[k];
          EXPECT_NEAR(c.top[std::size_t(k)].logit, want, tol(want));
          const bool clear = (k == 0 || logits[k - 1].get<double>() - want > 1e-4) &&
                             (k == 4 || want - logits[k + 1].get<double>() > 1e-4);
          if (clear) {
            EXPECT_EQ(c.top[std::size_t(k)].id, ids[k].get<int>()) << "top " << k;
          }
        }
      }
  }
}

TEST(DirectLogitAttributionReference, MatchesThePyTorchReferenceOnFiveModels) {
  for (const char* name : kReferenceModels) {
    SCOPED_TRACE(name);
    Reference ref = reference(name);
    const json& e = ref.expected["dla"];
    research::AttributionRequest rq;
    rq.answer = ref.prompts["answer"];
    rq.wrong = ref.prompts["wrong"];
    model::Workspace ws;
    auto a = research::direct_logit_attribution(ref.params, ref.clean, rq, ws);
    ASSERT_TRUE(a) << a.error().message;
    int checked = 0;
    double worst = 0;
    for (const research::AttributionPart& p : a->parts) {
      double want = 0;
      switch (p.kind) {
        case research::PartKind::embed: want = e["embed"]; break;
        case research::PartKind::pos_embed: want = e["pos_embed"]; break;
        case research::PartKind::head: want = e["heads"][p.layer][p.head]; break;
        case research::PartKind::attn_bias: want = e["attn_bias"][p.layer]; break;
        case research::PartKind::attn_out: want = e["attn_out"][p.layer]; break;
        case research::PartKind::mlp_out: want = e["mlp_out"][p.layer]; break;
        case research::PartKind::ln_final_bias: want = e["ln_final_bias"]; break;
      }
      EXPECT_NEAR(p.value, want, tol(want)) << p.label;
      worst = std::max(worst, std::fabs(p.value - want));
      checked++;
    }
    EXPECT_GT(checked, 3);
    const double sum = e["sum"], target = e["target"];
    EXPECT_NEAR(a->sum, sum, tol(sum));
    EXPECT_NEAR(a->logit_diff_uncapped, target, tol(target));  // Gemma 2: before the final soft-cap, as the reference
    const double clean = ref.expected["logit_diff"]["clean"];
    EXPECT_NEAR(a->logit_diff, clean, tol(clean));  // the model's own, capped
    std::printf("%-13s DLA: %d parts, max |headlab - reference| = %.2g\n", name, checked, worst);
  }
}

TEST(CompositionReference, ScoresAndCopyingMatchThePyTorchReferenceOnFiveModels) {
  for (const char* name : kReferenceModels) {
    SCOPED_TRACE(name);
    Reference ref = reference(name);
    auto s = research::composition_scores(ref.params, {.baseline_samples = 1});
    ASSERT_TRUE(s) << s.error().message;
    const int L = s->L, NH = s->NH;
    double worst = 0;
    for (research::CompositionKind kind : {research::CompositionKind::q, research::CompositionKind::k, research::CompositionKind::v}) {
      const json& e = ref.expected["compose"][std::string(research::composition_kind_name(kind))];
      for (int l1 = 0; l1 < L; l1++)
        for (int h1 = 0; h1 < NH; h1++)
          for (int l2 = 0; l2 < L; l2++)
            for (int h2 = 0; h2 < NH; h2++) {
              const double want = e[l1][h1][l2][h2];
              const double got = s->at(kind, l1, h1, l2, h2);
              EXPECT_NEAR(got, want, tol(want));
              worst = std::max(worst, std::fabs(got - want));
            }
    }
    for (int l = 0; l < L; l++)
      for (int h = 0; h < NH; h++) {
        auto c = research::copying_score(ref.params, l, h, false);
        ASSERT_TRUE(c) << c.error().message;
        const double want = ref.expected["ov_copying"][l][h];
        EXPECT_NEAR(*c, want, tol(want)) << "head " << l << "." << h;
        worst = std::max(worst, std::fabs(*c - want));
      }
    std::printf("%-13s composition and copying: max |headlab - reference| = %.2g\n", name, worst);
  }
}
