// One whole training step against PyTorch: the loss, every parameter's gradient and the
// weights after clipping + AdamW, on the fixtures tools/reference/train/
// train_step_reference.py wrote (tests/train/data/train_step/<model>/).
#include <cmath>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "formats/hf/checkpoint.h"
#include "model/config.h"
#include "formats/safetensors.h"
#include "train/gpt_train.h"
#include "train/trainer.h"

using namespace headlab;
using namespace headlab::train;

namespace {

const std::string kFixtures = std::string(HEADLAB_SOURCE_DIR) + "/tests/train/data/train_step/";

// A safetensors file in checkpoint layout, read into headlab's parameter layout.
model::Parameters load_as_parameters(const model::ModelConfig& c, const std::string& path) {
  auto file = model::safetensors_read(path);
  EXPECT_TRUE(file) << (file ? "" : file.error().message);
  auto p = model::checkpoint_from_safetensors(c, *file, {.rows = true});  // float32 rows, as the trainer keeps them
  EXPECT_TRUE(p) << (p ? "" : p.error().message);
  return std::move(*p);
}

// Max abs difference per tensor; fails on any above atol + rtol * |expected|.
// Elements whose reference gradient is below skip_below_grad are not compared: AdamW's
// first step moves each weight by lr * g / |g|, so where the exact gradient is 0 (the key
// bias: adding a constant to every score of a row leaves the softmax unchanged) the step
// is the sign of float rounding noise, different in any two implementations.
void expect_close(const char* what, const model::Parameters& got_params, const std::vector<float>& got_memory,
                  const model::Parameters& expected, double atol, double rtol,
                  const model::Parameters* reference_grads = nullptr, double skip_below_grad = 0.0) {
  auto sizes = model::parameters_sizes(expected.config);
  std::size_t offset = 0;
  for (int t = 0; t < model::kNumParameterTensors; ++t) {
    double max_diff = 0.0;
    int bad = 0;
    for (std::size_t i = 0; i < sizes[t]; ++i) {
      if (reference_grads && std::fabs(reference_grads->memory[offset + i]) < skip_below_grad) continue;
      const double e = expected.memory[offset + i], g = got_memory[offset + i];
      const double d = std::fabs(e - g);
      max_diff = std::max(max_diff, d);
      if (d > atol + rtol * std::fabs(e)) ++bad;
    }
    if (sizes[t] > 0)
      std::printf("  %s %-9s max abs diff %.3g\n", what, std::string(model::parameters_name(t)).c_str(), max_diff);
    EXPECT_EQ(bad, 0) << what << " " << model::parameters_name(t) << ": max abs diff " << max_diff;
    offset += sizes[t];
  }
  (void)got_params;
}

void check_fixture(const std::string& name) {
  const std::string dir = kFixtures + name;
  auto config = model::config_load(dir + "/config.json");
  ASSERT_TRUE(config) << config.error().message;
  std::ifstream sf(dir + "/step.json");
  nlohmann::json step = nlohmann::json::parse(sf);
  const auto inputs2d = step["inputs"].get<std::vector<std::vector<int>>>();
  const auto targets2d = step["targets"].get<std::vector<std::vector<int>>>();
  const int B = static_cast<int>(inputs2d.size()), T = static_cast<int>(inputs2d[0].size());
  std::vector<int> inputs, targets;
  for (int b = 0; b < B; ++b) {
    inputs.insert(inputs.end(), inputs2d[b].begin(), inputs2d[b].end());
    targets.insert(targets.end(), targets2d[b].begin(), targets2d[b].end());
  }
  auto m = train_model_create(*config, B, T);
  ASSERT_TRUE(m);
  model::Parameters initial = load_as_parameters(*config, dir + "/model.safetensors");
  std::copy(initial.memory.begin(), initial.memory.end(), m->params.memory.begin());

  // forward: the loss
  const float loss = train_forward(*m, inputs.data(), targets.data());
  std::printf("  loss: headlab %.7f, PyTorch %.7f\n", loss, step["loss"].get<double>());
  EXPECT_NEAR(loss, step["loss"].get<double>(), 1e-5);
  // backward: every gradient
  train_zero_grad(*m);
  train_backward(*m);
  model::Parameters grads = load_as_parameters(*config, dir + "/grads.safetensors");
  expect_close("grad", m->params, m->grads_memory, grads, 1e-5, 1e-3);
  // clip + AdamW
  TrainOptions o;
  o.lr = step["lr"].get<float>();
  o.warmup = 0;
  o.decay = LrDecay::constant;
  o.weight_decay = step["weight_decay"].get<float>();
  o.grad_clip = step["grad_clip"].get<float>();
  o.adamw.beta1 = step["beta1"].get<float>();
  o.adamw.beta2 = step["beta2"].get<float>();
  o.adamw.eps = step["eps"].get<float>();
  std::vector<float> mom(m->params.memory.size(), 0.0f), vel(m->params.memory.size(), 0.0f);
  const double norm = optimizer_step(*m, mom, vel, o, 0);
  EXPECT_NEAR(norm, step["grad_norm"].get<double>(), 1e-4);
  model::Parameters updated = load_as_parameters(*config, dir + "/updated.safetensors");
  expect_close("updated", m->params, m->params.memory, updated, 1e-5, 1e-4, &grads, 1e-6);
}

}  // namespace

TEST(TrainStepReference, AttentionOnlyTiedMatchesPyTorch) { check_fixture("attention_only_tied"); }
TEST(TrainStepReference, MlpUntiedMatchesPyTorch) { check_fixture("mlp_untied"); }
TEST(TrainStepReference, RotaryOnHalfOfEachHeadMatchesPyTorch) { check_fixture("rotary_untied"); }
TEST(TrainStepReference, NoPositionsMatchesPyTorch) { check_fixture("no_positions_untied"); }
