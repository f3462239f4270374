// Tests for research/cache.h: the cache holds each hook's view under its TransformerLens
// name, batch first; the safetensors file reads back to the same numbers and metadata; a
// padded prompt is its own run; a cache over its budget is refused before it runs; a freed
// cache's memory serves the next.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include <nlohmann/json.hpp>

#include "formats/safetensors.h"
#include "research/cache.h"
#include "testing/model_fixtures.h"
#include <unistd.h>

using namespace headlab::research;
using namespace headlab::model;
using headlab::testing::load_fixture;

namespace {

std::string cache_temp_file() {
  return std::string(HEADLAB_BINARY_DIR) + "/tmp_research_cache_" + std::to_string(::getpid()) + ".safetensors";
}

std::vector<int> cache_ids(const Parameters& p, int T, int salt = 0) {
  std::vector<int> ids;
  for (int t = 0; t < T; t++) ids.push_back((7 * t + 3 + salt) % p.config.vocab_size);
  return ids;
}

// Every hook's view of one run, straight from the forward.
std::map<std::string, std::vector<float>> hooks_by_hand(const Parameters& p, const std::vector<int>& ids) {
  ForwardHooks hooks(p.config.n_layer);
  for (const NamedHook& h : model_hooks(p.config)) hooks.want(h.point, h.layer);
  std::map<std::string, std::vector<float>> got;
  hooks.at = [&](HookPoint pt, int layer, const HookView& v) {
    auto& dst = got[hook_name(pt, layer)];
    dst.resize(v.size());
    v.copy_to(dst.data());
  };
  ForwardOptions opt;
  opt.hooks = &hooks;
  ForwardOutput out;
  Workspace ws;
  EXPECT_TRUE(forward(p, ids, opt, out, ws));
  return got;
}

}  // namespace

TEST(Cache, TheFileReadBackHoldsEveryHookAsTheForwardSawItWithTheTokensInItsMetadata) {
  for (const char* name : {"gpt2_tiny", "families/pythia", "families/llama", "families/gemma2"}) {
    SCOPED_TRACE(name);
    Parameters p = load_fixture(name, "model.safetensors");
    const std::vector<int> ids = cache_ids(p, 6);
    auto sel = hook_select(p.config, "*");
    ASSERT_TRUE(sel) << sel.error().message;
    Workspace ws;
    auto cache = cache_run(p, {ids}, *sel, CacheOptions{}, ws);
    ASSERT_TRUE(cache) << cache.error().message;
    const std::string path = cache_temp_file();
    ASSERT_TRUE(cache_write(path, *cache, {.model = "tiny", .prepend_bos = "true"}));
    auto file = safetensors_read(path);
    ASSERT_TRUE(file) << file.error().message;
    const auto want = hooks_by_hand(p, ids);
    ASSERT_EQ(file->tensors.size(), want.size());
    for (const NamedHook& h : model_hooks(p.config)) {
      const std::string n = hook_name(h.point, h.layer);
      const SafetensorsTensor* t = file->find(n);
      ASSERT_NE(t, nullptr) << n;
      std::vector<std::int64_t> shape = {1};
      for (int d : hook_shape(p.config, h.point, 6)) shape.push_back(d);
      EXPECT_EQ(t->shape, shape) << n;
      std::vector<float> back(std::size_t(t->numel()));
      ASSERT_TRUE(safetensors_to_f32(*file, *t, back.data()));
      const std::vector<float>& w = want.at(n);
      ASSERT_EQ(back.size(), w.size()) << n;
      for (std::size_t i = 0; i < w.size(); i++)
        ASSERT_TRUE(back[i] == w[i] || (std::isinf(w[i]) && back[i] == w[i])) << n << " [" << i << "]";
    }
    EXPECT_EQ(file->metadata.at("model"), "tiny");
    EXPECT_EQ(nlohmann::json::parse(file->metadata.at("tokens")), nlohmann::json({ids}));
    EXPECT_EQ(nlohmann::json::parse(file->metadata.at("hooks")).size(), want.size());
    EXPECT_EQ(file->metadata.at("prepend_bos"), "true");
    // the bytes an HTTP answer carries are the file's
    auto bytes = cache_safetensors(*cache, {.model = "tiny", .prepend_bos = "true"});
    ASSERT_TRUE(bytes);
    auto text = headlab::file_read(path);
    ASSERT_TRUE(text);
    EXPECT_EQ(*bytes, *text);
    std::remove(path.c_str());
  }
}

TEST(Cache, OnlyTheAskedHooksAreKept) {
  Parameters p = load_fixture("gpt2_tiny", "model.safetensors");
  auto sel = hook_select(p.config, "blocks.1.attn.hook_pattern,ln_final.hook_scale");
  ASSERT_TRUE(sel);
  Workspace ws;
  auto cache = cache_run(p, {cache_ids(p, 5)}, *sel, CacheOptions{}, ws);
  ASSERT_TRUE(cache) << cache.error().message;
  ASSERT_EQ(cache->tensors.size(), 2u);
  EXPECT_EQ(cache->tensors[0].name, "blocks.1.attn.hook_pattern");
  EXPECT_EQ(cache->tensors[1].name, "ln_final.hook_scale");  // needs the final norm: run, not skipped
  EXPECT_EQ(cache->bytes(), cache_bytes(p.config, *sel, 1, 5));
  EXPECT_EQ(cache->bytes(), (std::size_t(p.config.n_head) * 25 + 5) * 4);
  float nonzero = 0;
  for (float v : cache->tensors[1].values) nonzero += std::fabs(v);
  EXPECT_GT(nonzero, 0.0f);
}

TEST(Cache, AShorterPromptOfABatchHoldsItsOwnRunAndZerosInThePadding) {
  Parameters p = load_fixture("families/llama", "model.safetensors");
  const std::vector<int> a = cache_ids(p, 7), b = cache_ids(p, 4, 5);
  auto sel = hook_select(p.config, "blocks.0.hook_resid_post,blocks.1.attn.hook_pattern,blocks.1.attn.hook_attn_scores");
  ASSERT_TRUE(sel);
  Workspace ws;
  auto cache = cache_run(p, {a, b}, *sel, CacheOptions{}, ws);
  ASSERT_TRUE(cache) << cache.error().message;
  EXPECT_EQ(cache->T, 7);
  const auto alone = hooks_by_hand(p, b);
  const int C = p.config.n_embd, NH = p.config.n_head;
  const CachedTensor* resid = cache->find("blocks.0.hook_resid_post");  // (2, 7, C)
  ASSERT_EQ(resid->shape, (std::vector<std::int64_t>{2, 7, C}));
  const std::vector<float>& r1 = alone.at("blocks.0.hook_resid_post");
  for (int t = 0; t < 7; t++)
    for (int i = 0; i < C; i++)
      ASSERT_EQ(resid->values[std::size_t((7 + t) * C + i)], t < 4 ? r1[std::size_t(t * C + i)] : 0.0f) << t << "," << i;
  const CachedTensor* pat = cache->find("blocks.1.attn.hook_pattern");  // (2, NH, 7, 7)
  const CachedTensor* sc = cache->find("blocks.1.attn.hook_attn_scores");
  const std::vector<float>& p1 = alone.at("blocks.1.attn.hook_pattern");
  for (int h = 0; h < NH; h++)
    for (int q = 0; q < 7; q++)
      for (int k = 0; k < 7; k++) {
        const std::size_t at = std::size_t(NH * 49 + h * 49 + q * 7 + k);
        const float want = q < 4 && k < 4 ? p1[std::size_t(h * 16 + q * 4 + k)] : 0.0f;
        ASSERT_EQ(pat->values[at], want) << h << "," << q << "," << k;
        if (q >= 4 || k >= 4) ASSERT_TRUE(std::isinf(sc->values[at]) && sc->values[at] < 0);
      }
}

TEST(Cache, OverItsBudgetItIsRefusedBeforeRunningWithTheSizeAndHowToNarrow) {
  Parameters p = load_fixture("gpt2_tiny", "model.safetensors");
  auto sel = hook_select(p.config, "*");
  ASSERT_TRUE(sel);
  Workspace ws;
  CacheOptions o;
  o.max_bytes = 1000;
  auto cache = cache_run(p, {cache_ids(p, 8), cache_ids(p, 8)}, *sel, o, ws);
  ASSERT_FALSE(cache);
  EXPECT_EQ(cache.error().code, headlab::ErrorCode::too_long);
  const std::string& m = cache.error().message;
  EXPECT_NE(m.find("MB"), std::string::npos) << m;
  EXPECT_NE(m.find("2 prompts of up to 8 tokens"), std::string::npos) << m;
  EXPECT_NE(m.find("blocks.*.attn.hook_"), std::string::npos) << m;
  EXPECT_NE(m.find("--max-mb"), std::string::npos) << m;
}

TEST(Cache, BadPromptsAreRefusedByName) {
  Parameters p = load_fixture("gpt2_tiny", "model.safetensors");
  auto sel = hook_select(p.config, "hook_embed");
  ASSERT_TRUE(sel);
  Workspace ws;
  EXPECT_FALSE(cache_run(p, {}, *sel, CacheOptions{}, ws));
  auto empty = cache_run(p, {cache_ids(p, 3), {}}, *sel, CacheOptions{}, ws);
  ASSERT_FALSE(empty);
  EXPECT_NE(empty.error().message.find("prompt 2"), std::string::npos);
  auto outside = cache_run(p, {cache_ids(p, 3), {1, p.config.vocab_size}}, *sel, CacheOptions{}, ws);
  ASSERT_FALSE(outside);
  EXPECT_NE(outside.error().message.find("prompt 2"), std::string::npos) << outside.error().message;
  auto longer = cache_run(p, {std::vector<int>(std::size_t(p.config.n_ctx) + 1, 1)}, *sel, CacheOptions{}, ws);
  ASSERT_FALSE(longer);
  EXPECT_EQ(longer.error().code, headlab::ErrorCode::too_long);
  EXPECT_FALSE(cache_run(p, {{1}}, HookSelection{}, CacheOptions{}, ws));
}

TEST(Cache, ASteeredRunKeepsTheSteeredResidPreAndTheSteeredForwardsLogits) {
  Parameters p = load_fixture("gpt2_tiny", "model.safetensors");
  const int C = p.config.n_embd, T = 6;
  const std::vector<int> ids = cache_ids(p, T);
  Steering st{.layer = 1, .coef = 2.5f, .from = 2};
  for (int i = 0; i < C; i++) st.vector.push_back(0.1f * float(i % 7) - 0.3f);
  auto sel = hook_select(p.config, "blocks.*.hook_resid_pre");
  ASSERT_TRUE(sel);
  Workspace ws;
  CacheOptions o;
  o.logits = true;
  auto plain = cache_run(p, {ids}, *sel, o, ws);
  o.steering = {st};
  auto steered = cache_run(p, {ids}, *sel, o, ws);
  ASSERT_TRUE(plain && steered) << (plain ? steered.error().message : plain.error().message);
  // block 0 is before the steering; block 1's resid_pre is the plain one plus coef * v from position 2 on
  const CachedTensor *a0 = plain->find("blocks.0.hook_resid_pre"), *b0 = steered->find("blocks.0.hook_resid_pre");
  const CachedTensor *a1 = plain->find("blocks.1.hook_resid_pre"), *b1 = steered->find("blocks.1.hook_resid_pre");
  for (std::size_t i = 0; i < a0->values.size(); i++) ASSERT_EQ(a0->values[i], b0->values[i]) << i;
  for (int t = 0; t < T; t++)
    for (int i = 0; i < C; i++) {
      const std::size_t at = std::size_t(t * C + i);
      ASSERT_EQ(b1->values[at], t < 2 ? a1->values[at] : a1->values[at] + st.coef * st.vector[std::size_t(i)]) << t << "," << i;
    }
  // the logits are the steered forward's, as `headlab run --steer` runs it (steering_hooks)
  ForwardHooks hooks = steering_hooks(p.config, {&st, 1});
  ForwardOptions opt;
  opt.hooks = &hooks;
  ForwardOutput out;
  ASSERT_TRUE(forward(p, ids, opt, out, ws));
  EXPECT_EQ(steered->logits, out.logits);
  EXPECT_NE(steered->logits, plain->logits);
}

TEST(Cache, ASteeringWithANaNIsRefusedWithSteeringChecksMessage) {
  Parameters p = load_fixture("gpt2_tiny", "model.safetensors");
  auto sel = hook_select(p.config, "hook_embed");
  ASSERT_TRUE(sel);
  Steering st{.layer = 0, .vector = std::vector<float>(std::size_t(p.config.n_embd), 1.0f)};
  st.vector[3] = std::nanf("");
  Workspace ws;
  CacheOptions o;
  o.steering = {st};
  auto cache = cache_run(p, {cache_ids(p, 3)}, *sel, o, ws);
  ASSERT_FALSE(cache);
  EXPECT_EQ(cache.error().code, headlab::ErrorCode::invalid_argument);
  EXPECT_EQ(cache.error().message, steering_check(p.config, st).error().message);
}

TEST(Cache, TheFileHoldsThePyTorchReferencesCacheToOneInTenThousand) {
  // tests/fixtures/research/<name>/cache.safetensors: every TL hook of the clean ids of
  // prompts.json, batch first, from tools/reference/make_research_fixtures.py (float64)
  const std::pair<const char*, const char*> models[] = {{"gpt2_tiny", "gpt2_tiny"},
                                                        {"llama", "families/llama"},
                                                        {"gemma2", "families/gemma2"},
                                                        {"pythia", "families/pythia"},
                                                        {"headlab_tiny", "../../../models/headlab-tiny"}};
  for (const auto& [research, fixture] : models) {
    SCOPED_TRACE(research);
    const std::string dir = std::string(HEADLAB_SOURCE_DIR) + "/tests/fixtures/research/" + research;
    Parameters p = load_fixture(fixture, "model.safetensors");
    const std::vector<int> ids = headlab::testing::read_json_file(dir + "/prompts.json")["clean"].get<std::vector<int>>();
    auto ref = safetensors_read(dir + "/cache.safetensors");
    ASSERT_TRUE(ref) << ref.error().message;
    auto sel = hook_select(p.config, "*");
    ASSERT_TRUE(sel);
    Workspace ws;
    auto cache = cache_run(p, {ids}, *sel, CacheOptions{}, ws);
    ASSERT_TRUE(cache) << cache.error().message;
    const std::string path = cache_temp_file();
    ASSERT_TRUE(cache_write(path, *cache, {.model = research}));
    auto ours = safetensors_read(path);
    std::remove(path.c_str());
    ASSERT_TRUE(ours) << ours.error().message;
    ASSERT_EQ(ours->tensors.size(), ref->tensors.size());
    for (const SafetensorsTensor& t : ref->tensors) {
      const SafetensorsTensor* o = ours->find(t.name);
      ASSERT_NE(o, nullptr) << t.name;
      ASSERT_EQ(o->shape, t.shape) << t.name;
      std::vector<float> a(std::size_t(t.numel())), b(a.size());
      ASSERT_TRUE(safetensors_to_f32(*ours, *o, a.data()));
      ASSERT_TRUE(safetensors_to_f32(*ref, t, b.data()));
      double worst = 0, scale = 1;
      for (std::size_t i = 0; i < a.size(); i++) {
        if (std::isinf(a[i]) || std::isinf(b[i])) {
          ASSERT_EQ(a[i], b[i]) << t.name << " at " << i;  // masked scores: -inf on both sides
          continue;
        }
        worst = std::max(worst, std::fabs(double(a[i]) - b[i]));
        scale = std::max(scale, std::fabs(double(b[i])));
      }
      EXPECT_LT(worst / scale, 1e-4) << t.name;
    }
  }
}

TEST(CacheMemory, ALoopOfCachesReusesTheBlockOfTheLastCacheFreed) {
  const std::size_t floats = (std::size_t(8) << 20) / sizeof(float);  // 8 MB: past the huge-page size
  float* first = nullptr;
  {
    std::shared_ptr<float[]> a = cache_memory_allocate(floats);
    first = a.get();
    a[0] = 1.0f, a[floats - 1] = 2.0f;
  }
  std::shared_ptr<float[]> b = cache_memory_allocate(floats);
  EXPECT_EQ(b.get(), first);  // no fresh pages for the kernel to zero
  std::shared_ptr<float[]> c = cache_memory_allocate(floats);  // b still held: a block of its own
  EXPECT_NE(c.get(), b.get());
  c[floats - 1] = 3.0f;
  b.reset();
  std::shared_ptr<float[]> larger = cache_memory_allocate(4 * floats);  // the spare is too small: a new block
  larger[4 * floats - 1] = 4.0f;
  EXPECT_EQ(larger[4 * floats - 1], 4.0f);
}
