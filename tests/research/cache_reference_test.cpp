// Every hook of the engine against the PyTorch reference (tools/reference/make_research_fixtures.py,
// written from the published definitions, float64): tests/fixtures/research/<model>/cache.safetensors
// holds each TransformerLens name with its shape, batch first, on the clean ids of prompts.json.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <string>

#include "formats/safetensors.h"
#include "model/forward.h"
#include "model/hooks.h"
#include "testing/model_fixtures.h"

using namespace headlab::model;
using headlab::testing::load_fixture;
using headlab::testing::read_json_file;

namespace {

struct ReferenceModel {
  const char* research;  // tests/fixtures/research/<name>
  const char* model;     // under tests/fixtures/model/
};
const ReferenceModel kModels[] = {{"gpt2_tiny", "gpt2_tiny"},
                                  {"llama", "families/llama"},
                                  {"gemma2", "families/gemma2"},
                                  {"pythia", "families/pythia"},
                                  {"headlab_tiny", "../../../models/headlab-tiny"}};

std::string research_dir(const char* name) {
  return std::string(HEADLAB_SOURCE_DIR) + "/tests/fixtures/research/" + name;
}

}  // namespace

TEST(CacheReference, EveryHookOfEveryModelMatchesPyTorchToOneInTenThousand) {
  for (const ReferenceModel& m : kModels) {
    SCOPED_TRACE(m.research);
    Parameters p = load_fixture(m.model, "model.safetensors");
    auto prompts = read_json_file(research_dir(m.research) + "/prompts.json");
    std::vector<int> ids = prompts["clean"].get<std::vector<int>>();
    auto ref = safetensors_read(research_dir(m.research) + "/cache.safetensors");
    ASSERT_TRUE(ref) << ref.error().message;

    ForwardHooks hooks(p.config.n_layer);
    for (const NamedHook& h : model_hooks(p.config)) hooks.want(h.point, h.layer);
    std::map<std::string, std::vector<float>> got;
    std::map<std::string, std::vector<int>> shapes;
    hooks.at = [&](HookPoint pt, int layer, const HookView& v) {
      std::string name = hook_name(pt, layer);
      got[name].resize(v.size());
      v.copy_to(got[name].data());
      shapes[name] = hook_shape(p.config, pt, static_cast<int>(ids.size()));
    };
    ForwardOptions opt;
    opt.hooks = &hooks;
    ForwardOutput out;
    Workspace ws;
    ASSERT_TRUE(forward(p, ids, opt, out, ws));

    // the same names on both sides
    std::set<std::string> ours, theirs;
    for (const auto& [name, _] : got) ours.insert(name);
    for (const SafetensorsTensor& t : ref->tensors) theirs.insert(t.name);
    EXPECT_EQ(ours, theirs);

    for (const SafetensorsTensor& t : ref->tensors) {
      auto it = got.find(t.name);
      if (it == got.end()) continue;
      // TransformerLens's shape: the batch of one first, then ours
      std::vector<std::int64_t> want = {1};
      for (int d : shapes[t.name]) want.push_back(d);
      EXPECT_EQ(t.shape, want) << t.name;
      std::vector<float> r(std::size_t(t.numel()));
      ASSERT_TRUE(safetensors_to_f32(*ref, t, r.data()));
      ASSERT_EQ(r.size(), it->second.size()) << t.name;
      double worst = 0, scale = 1;
      for (std::size_t i = 0; i < r.size(); i++) {
        const float a = it->second[i], b = r[i];
        if (std::isinf(a) || std::isinf(b)) {
          EXPECT_EQ(a, b) << t.name << " at " << i;  // the masked scores: -inf on both sides
          continue;
        }
        worst = std::max(worst, std::fabs(double(a) - b));
        scale = std::max(scale, std::fabs(double(b)));
      }
      // float32 against float64: 1e-4 relative to the tensor's largest value (and at least absolute)
      EXPECT_LT(worst / scale, 1e-4) << t.name << " (largest value " << scale << ")";
    }
  }
}
