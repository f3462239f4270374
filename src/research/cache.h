// research/cache.h — TransformerLens's run_with_cache: one forward per prompt keeps the
// selected hooks' activations under their TL names with TL's shapes, batch first, and writes
// them as one safetensors file that numpy and torch read in one line.
//
//   auto sel = hook_select(params.config, "blocks.*.attn.hook_pattern");
//   auto cache = cache_run(params, {ids_a, ids_b}, *sel, CacheOptions{}, workspace);
//   const CachedTensor* p = cache->find("blocks.0.attn.hook_pattern");   // (B, NH, T, T)
//   auto bytes = cache_safetensors(*cache, {.model = "gpt2"});
//   // python: safetensors.numpy.load_file("cache.safetensors")["blocks.0.attn.hook_pattern"]
//
// A batch of unequal lengths is right-padded to the longest, as TransformerLens pads with
// its attention mask: each prompt runs alone, so its causal positions never see the padding
// and hold exactly the values of a run of that prompt alone. The padded positions hold 0
// (attn_scores: -inf, a masked score), not TL's values computed from pad tokens, so a sum
// over positions sums the real ones. The file's metadata carries each prompt's length.
// Memory: only the selected tensors are kept, each allocated once at its final (B, ...) shape;
// the forward's hooks copy into them in place (nothing is recomputed per hook).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <span>
#include <string>
#include <vector>

#include "model/forward.h"
#include "model/parameters.h"
#include "research/hook_select.h"
#include "research/steering.h"
#include "util/result.h"

namespace headlab::research {

struct CacheOptions {
  // The most bytes the kept tensors may take (float32); past it the run is refused before it
  // starts, with the size and how to narrow it. 0: no limit.
  std::size_t max_bytes = std::size_t(2) << 30;
  // How the caller names the budget and how to raise it, for that message.
  std::string budget_hint = "pass --max-mb to raise it";
  // Keep the forwards' logits too, (B, T, V) in ActivationCache::logits (Python's
  // `logits, cache = model.run_with_cache(...)`): the same runs, not counted in max_bytes.
  bool logits = false;
  // Steer every prompt's run (research/steering.h, as `headlab run --steer` does): each is
  // added at its blocks.{l}.hook_resid_pre before the cache keeps that tensor, so the kept
  // resid_pre is the steered one, as TransformerLens's cache under a steering hook. Each must
  // pass steering_check (cache_run refuses one that does not, with its message).
  std::vector<Steering> steering;
};

// The memory of a cache's tensors, one block for them all: 2 MB pages when the kernel grants
// them on request (transparent huge pages), so first writing 150 MB of activations costs about
// 75 page faults, not 38,000 (on a VM each costs microseconds). Uninitialised: the forward's
// hooks and the padding write every value. The block of the last cache freed is kept and
// handed to the next cache it holds (cache.cpp), so a loop of caches does not have the kernel
// zero 150 MB of fresh pages each time. Null for 0 floats; throws std::bad_alloc.
std::shared_ptr<float[]> cache_memory_allocate(std::size_t floats);

struct CachedTensor {
  std::string name;                  // TransformerLens's: "blocks.0.attn.hook_pattern"
  model::HookPoint point{};
  int layer = -1;                    // -1: model-level
  std::vector<std::int64_t> shape;   // (B, ...) TL's shape with the batch axis first
  std::span<float> values;           // row-major, in the cache's block (ActivationCache::memory)
};

struct ActivationCache {
  int T = 0;                               // the padded length (the longest prompt)
  std::vector<std::vector<int>> tokens;    // (B, T_b) each prompt's ids, unpadded
  std::vector<CachedTensor> tensors;       // in the forward's order
  std::shared_ptr<float[]> memory;         // the tensors' values (copies of the cache share it)
  std::vector<float> logits;               // (B, T, V) with CacheOptions::logits, padded rows 0; else empty
  std::size_t bytes() const;               // of the values (float32)
  const CachedTensor* find(const std::string& name) const;  // null if not kept
};

// The bytes cache_run would keep for `selection` over `batch` prompts of (padded) length T.
std::size_t cache_bytes(const model::ModelConfig& config, const HookSelection& selection, int batch, int T);

// ok, or the too_long refusal cache_run gives a cache over options.max_bytes (a server refuses
// with it before the request waits for a turn).
Status cache_check_budget(const model::ModelConfig& config, const HookSelection& selection, int batch, int T,
                          const CacheOptions& options);

// Runs each prompt once with the selection's hooks. Errors: invalid_argument (no prompt, an
// empty prompt or an id outside the vocabulary, a steering steering_check refuses), too_long (a prompt longer than n_ctx; the
// cache over options.max_bytes: the message gives the size, the largest tensors and how to
// narrow), the forward's.
Result<ActivationCache> cache_run(const model::Parameters& params, const std::vector<std::vector<int>>& batch,
                                  const HookSelection& selection, const CacheOptions& options,
                                  model::Workspace& workspace);

// What the file's __metadata__ says beside the tensors (safetensors metadata values are strings):
//   "model": the name, "tokens": "[[ids of prompt 0], ...]", "lengths": "[T_0, ...]",
//   "hooks": "[\"hook_embed\", ...]", "padding": "right, zeros", "prepend_bos": "true"/"false"
struct CacheFileInfo {
  std::string model;
  std::string prepend_bos;  // "true", "false" or "" (given ids: as they were)
};
// The safetensors file's bytes, float32. Errors: none expected (the writer's).
Result<std::string> cache_safetensors(const ActivationCache& cache, const CacheFileInfo& info);
// The same written to `path`. Errors: io_error naming the path.
Status cache_write(const std::string& path, const ActivationCache& cache, const CacheFileInfo& info);

}  // namespace headlab::research
