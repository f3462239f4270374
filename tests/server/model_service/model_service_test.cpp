// ModelService::load's arithmetic choice for `serve --compute auto` (the default): the CLI picks
// bf16 where this CPU runs the AVX512_BF16 kernel and its bf16 dot products outran its float32
// ones at start (cli/dtype_option.h, model/cpu_peak.h); the service then rounds the
// products' inputs only for a model that keeps bfloat16 matrices, and says so in the notes serve
// prints at start; a model without them runs in float32, not refused. Asked for by name
// (--compute bf16, not auto), the same model is refused with how to fix it.
#include "server/model_service/model_service.h"
#include "server/model_service/model_views.h"
#include "server/api/model_codec.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace headlab;
using namespace headlab::server;

namespace {

std::string compute_test_model_dir() { return std::string(HEADLAB_SOURCE_DIR) + "/models/headlab-tiny"; }

ModelServiceOptions compute_test_options(model::DtypeChoice dtype, bool compute_auto) {
  ModelServiceOptions o;
  o.dir = compute_test_model_dir();
  o.load.dtype = dtype;
  o.load.compute = model::ComputeChoice::bf16;  // what compute_auto_choice("auto") gives where bf16 outruns f32
  o.compute_auto = compute_auto;
  o.bf16_speedup = 2.0;
  return o;
}

bool has_note(const ModelService& s, const std::string& text) {
  const auto& notes = s.parameters().notes;
  return std::any_of(notes.begin(), notes.end(), [&](const std::string& n) { return n.find(text) != std::string::npos; });
}

bool says_bf16_rounding(const ModelService& s) {
  const auto& notes = s.parameters().notes;
  return std::any_of(notes.begin(), notes.end(), [](const std::string& n) {
    return n.find("round their inputs to bfloat16") != std::string::npos && n.find("--compute f32") != std::string::npos;
  });
}

}  // namespace

TEST(ModelServiceCompute, AutoOnAModelWithBf16MatricesRoundsTheirInputsAndSaysSoInTheNotesServePrints) {
  auto s = ModelService::load(compute_test_options(model::DtypeChoice::bf16, true));
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_TRUE(model::parameters_rounds_inputs((*s)->parameters()));
  EXPECT_TRUE(says_bf16_rounding(**s));
}

TEST(ModelServiceCompute, AutoSaysHowMuchFasterTheCpusBf16DotProductsRanAtStart) {
  auto s = ModelService::load(compute_test_options(model::DtypeChoice::bf16, true));
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_TRUE(has_note(**s, "here 2.00 times as fast, measured at start"));
}

TEST(ModelServiceCompute, AutoOnACpuWhoseBf16IsSlowerMultipliesFloat32AndSaysWhy) {
  // an AVX512_BF16 CPU whose bf16 dot products ran at half its float32 ones: f32 chosen
  ModelServiceOptions o = compute_test_options(model::DtypeChoice::bf16, true);
  o.load.compute = model::ComputeChoice::f32;
  o.bf16_speedup = 0.5;
  auto s = ModelService::load(o);
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_FALSE(model::parameters_rounds_inputs((*s)->parameters()));
  EXPECT_FALSE(says_bf16_rounding(**s));
  EXPECT_TRUE(has_note(**s, "ran 0.50 times as fast as its float32 ones at start, so --compute bf16 would be slower here"));
  // a CPU without AVX512_BF16 (speedup 0) or a float32 model: nothing to say
  o.bf16_speedup = 0.0;
  auto none = ModelService::load(o);
  ASSERT_TRUE(none) << none.error().message;
  EXPECT_FALSE(has_note(**none, "would be slower here"));
  o.bf16_speedup = 0.5;
  o.load.dtype = model::DtypeChoice::keep;
  auto f32_model = ModelService::load(o);
  ASSERT_TRUE(f32_model) << f32_model.error().message;
  EXPECT_FALSE(has_note(**f32_model, "would be slower here"));
}

TEST(ModelServiceCompute, AutoOnAFloat32ModelRunsInFloat32WithoutARefusalOrARoundingNote) {
  auto s = ModelService::load(compute_test_options(model::DtypeChoice::keep, true));
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_FALSE(model::parameters_rounds_inputs((*s)->parameters()));
  EXPECT_FALSE(says_bf16_rounding(**s));
}

TEST(ModelServiceCompute, Bf16AskedByNameOnAFloat32ModelIsRefusedWithHowToFixIt) {
  auto s = ModelService::load(compute_test_options(model::DtypeChoice::keep, false));
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("keeps none: add --dtype bf16"), std::string::npos) << s.error().message;
  EXPECT_NE(s.error().message.find("or leave --compute out"), std::string::npos) << s.error().message;
}

// A run's result (every head's pattern, its predictions) counts in the pool's memory budget from
// the moment its report is made until the route has encoded it and let it go (issue 25: forty
// distinct runs of one batch report at once, each holding its views).
TEST(ModelServiceRun, AResultCountsInThePoolsBudgetUntilItIsLetGo) {
  ModelServiceOptions o;
  o.dir = compute_test_model_dir();
  auto s = ModelService::load(o);
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ((*s)->held_bytes(), 0u);
  {
    ModelRunRequest rq;
    rq.text = "the cat sat on the mat and the dog sat on the log";
    auto r = (*s)->run(rq);
    ASSERT_TRUE(r) << r.error().message;
    const std::size_t bytes = model_run_result_bytes(*r);
    // every head's causal half of patterns, in float32 at least
    const std::size_t T = r->tokens.size(), heads = std::size_t(r->n_layer * r->n_head);
    EXPECT_GE(bytes, heads * T * (T + 1) / 2 * sizeof(float));
    EXPECT_EQ((*s)->held_bytes(), bytes);  // the forward's output let go, the report held
  }
  EXPECT_EQ((*s)->held_bytes(), 0u);
}

// The budget counts what encoding an answer adds too (issue 25: the JSON of forty answers
// being written at once): a run's held bytes cover the text it encodes to and a JSON node per
// number of its rows, and its compact encoding's text, on the built-in model, with logits.
TEST(ModelServiceRun, AResultsHeldBytesCoverTheJsonItsAnswerEncodesTo) {
  ModelServiceOptions o;
  o.dir = compute_test_model_dir();
  auto s = ModelService::load(o);
  ASSERT_TRUE(s) << s.error().message;
  for (bool compact : {false, true}) {
    ModelRunRequest rq;
    rq.text = "the cat sat on the mat and the dog sat on the log, and the cat sat on the mat again";
    rq.want_value_weighted = rq.want_scores = rq.rollout = true;
    rq.compact = compact;
    auto r = (*s)->run(rq);
    ASSERT_TRUE(r) << r.error().message;
    const std::size_t T = r->tokens.size(), V = std::size_t(r->V);
    r->logits.assign(T * V, -1.2345678e-5f);  // as `headlab run --logits` gives them: the longest text a float makes
    std::size_t numbers = r->rollout.size() + r->logits.size();
    for (const HeadView& h : r->heads) numbers += h.pattern.size() + h.value_weighted.size() + h.scores.size();
    const std::string json = encode_model_run(*r);
    const std::size_t kept = numbers * sizeof(float);
    const std::size_t tree = compact ? r->logits.size() * 16 : numbers * 16;
    EXPECT_GE(model_run_result_bytes(*r), kept + tree + json.size()) << (compact ? "compact" : "rows") << ": " << json.size() << " bytes of JSON";
  }
}
