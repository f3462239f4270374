// research/cache.cpp — run_with_cache (cache.h): every kept tensor allocated once at
// (B, ...) with the longest prompt's T; each prompt's forward copies its hooks' views into
// its row b, so a padded position keeps the fill value.
#include "research/cache.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <mutex>
#include <new>

#include <sys/mman.h>

#include <nlohmann/json.hpp>

#include "formats/safetensors.h"
#include "model/thread_pool.h"

namespace headlab::research {

using model::HookPoint;

namespace {

std::size_t numel(const std::vector<int>& shape) {
  std::size_t n = 1;
  for (int d : shape) n *= std::size_t(d);
  return n;
}

std::string megabytes(std::size_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MB", double(bytes) / 1e6);
  return buf;
}

// The refusal of a cache over the budget: its size, what takes most of it, how to narrow.
Error over_budget(const model::ModelConfig& c, const HookSelection& sel, int B, int T, const CacheOptions& o) {
  std::map<std::string, std::size_t> by_point;  // "blocks.*.attn.hook_pattern" -> bytes over its layers
  for (const model::NamedHook& h : sel.sites) {
    const std::string name = model::hook_is_block_level(h.point) ? "blocks.*." + std::string(model::hook_suffix(h.point))
                                                                 : std::string(model::hook_suffix(h.point));
    by_point[name] += std::size_t(B) * numel(model::hook_shape(c, h.point, T)) * 4;
  }
  std::vector<std::pair<std::size_t, std::string>> largest;
  for (const auto& [name, bytes] : by_point) largest.push_back({bytes, name});
  std::sort(largest.rbegin(), largest.rend());
  std::string top;
  for (std::size_t i = 0; i < largest.size() && i < 3; i++)
    top += (i ? ", " : "") + largest[i].second + " " + megabytes(largest[i].first);
  return Error{ErrorCode::too_long,
               "the cache would take " + megabytes(cache_bytes(c, sel, B, T)) + " (" + std::to_string(B) +
                   (B == 1 ? " prompt" : " prompts") + " of up to " + std::to_string(T) + " tokens, " +
                   std::to_string(sel.sites.size()) + " tensors; the largest: " + top + "), more than the budget of " +
                   megabytes(o.max_bytes) +
                   ". Narrow the hooks (fewer layers, like blocks.3.attn.hook_pattern; the (NH, T, T) patterns and "
                   "scores grow with T squared), use fewer or shorter prompts, or " + o.budget_hint + "."};
}

// The positions of prompt b past its length Tb: 0, or -inf for a score (a masked score, as the
// forward writes every masked one). Time is axis 1 of (B, T, ...) tensors; axes 2 and 3 of the
// (B, NH, T, T) scores and patterns.
void pad_prompt(CachedTensor& t, int b, int Tb) {
  const bool square = t.point == HookPoint::attn_scores || t.point == HookPoint::pattern;
  const float fill = t.point == HookPoint::attn_scores ? -std::numeric_limits<float>::infinity() : 0.0f;
  std::size_t per_prompt = 1;
  for (std::size_t d = 1; d < t.shape.size(); d++) per_prompt *= std::size_t(t.shape[d]);
  float* row = t.values.data() + std::size_t(b) * per_prompt;
  if (!square) {
    const std::size_t per_position = per_prompt / std::size_t(t.shape[1]);
    std::fill(row + std::size_t(Tb) * per_position, row + per_prompt, fill);
    return;
  }
  const int NH = static_cast<int>(t.shape[1]), T = static_cast<int>(t.shape[2]);
  for (int h = 0; h < NH; h++) {
    float* head = row + std::size_t(h) * T * T;
    for (int q = 0; q < Tb; q++) std::fill(head + std::size_t(q) * T + Tb, head + std::size_t(q + 1) * T, fill);
    std::fill(head + std::size_t(Tb) * T, head + std::size_t(T) * T, fill);
  }
}

}  // namespace

namespace {
constexpr std::size_t kParallelCopyFloats = std::size_t(1) << 18;  // 1 MB
constexpr std::size_t kHugePage = std::size_t(2) << 20;

// The block of the last cache freed, kept for the next one that fits in it: the kernel zeroes
// every page it hands out (for GPT-2 small at 128 tokens, 159 MB per run), where PyTorch's
// allocator hands the same memory back to the next run_with_cache of a loop. Its pages are
// given to the kernel as lazily free (MADV_FREE): reclaimed only under memory pressure, and
// until then written again without a fault.
struct SpareBlock {
  std::mutex mutex;
  void* data = nullptr;
  std::size_t len = 0;
};
SpareBlock& spare_block() {
  static SpareBlock* spare = new SpareBlock;  // never destroyed: a cache may be freed after main returns
  return *spare;
}

// Keeps the block as the spare if there is none, else unmaps it.
void block_release(void* data, std::size_t len) {
  SpareBlock& s = spare_block();
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (!s.data) {
      ::madvise(data, len, MADV_FREE);
      s.data = data, s.len = len;
      return;
    }
  }
  ::munmap(data, len);
}

// The spare block if it holds `len` bytes (its own length in *got), else null.
void* block_reuse(std::size_t len, std::size_t* got) {
  SpareBlock& s = spare_block();
  void* data = nullptr;
  std::size_t held = 0;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    std::swap(data, s.data);
    std::swap(held, s.len);
  }
  if (data && held >= len) {
    *got = held;
    return data;
  }
  if (data) ::munmap(data, held);  // too small for this cache: give it back
  return nullptr;
}
}  // namespace

std::shared_ptr<float[]> cache_memory_allocate(std::size_t floats) {
  if (floats == 0) return nullptr;
  const std::size_t bytes = floats * sizeof(float);
  if (bytes < kHugePage) {
    float* p = static_cast<float*>(std::malloc(bytes));
    if (!p) throw std::bad_alloc();
    return std::shared_ptr<float[]>(p, [](float* q) { std::free(q); });
  }
  const std::size_t len = (bytes + kHugePage - 1) / kHugePage * kHugePage;
  std::size_t held = 0;
  if (void* reused = block_reuse(len, &held))
    return std::shared_ptr<float[]>(static_cast<float*>(reused), [held](float* q) { block_release(q, held); });
  // over-map by one huge page, keep the 2 MB-aligned part, give back the rest
  void* raw = ::mmap(nullptr, len + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) throw std::bad_alloc();
  const std::uintptr_t start = reinterpret_cast<std::uintptr_t>(raw);
  const std::uintptr_t aligned = (start + kHugePage - 1) / kHugePage * kHugePage;
  if (aligned > start) ::munmap(raw, aligned - start);
  const std::size_t tail = start + len + kHugePage - (aligned + len);
  if (tail > 0) ::munmap(reinterpret_cast<void*>(aligned + len), tail);
  ::madvise(reinterpret_cast<void*>(aligned), len, MADV_HUGEPAGE);  // a hint: without THP, small pages
  return std::shared_ptr<float[]>(reinterpret_cast<float*>(aligned), [len](float* q) { block_release(q, len); });
}

std::size_t ActivationCache::bytes() const {
  std::size_t n = 0;
  for (const CachedTensor& t : tensors) n += t.values.size() * sizeof(float);
  return n;
}

const CachedTensor* ActivationCache::find(const std::string& name) const {
  for (const CachedTensor& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

std::size_t cache_bytes(const model::ModelConfig& c, const HookSelection& sel, int batch, int T) {
  std::size_t n = 0;
  for (const model::NamedHook& h : sel.sites) n += numel(model::hook_shape(c, h.point, T));
  return n * std::size_t(batch) * sizeof(float);
}

Status cache_check_budget(const model::ModelConfig& c, const HookSelection& sel, int B, int T, const CacheOptions& o) {
  if (o.max_bytes > 0 && cache_bytes(c, sel, B, T) > o.max_bytes) return tl::unexpected(over_budget(c, sel, B, T, o));
  return {};
}

Result<ActivationCache> cache_run(const model::Parameters& params, const std::vector<std::vector<int>>& batch,
                                  const HookSelection& sel, const CacheOptions& o, model::Workspace& ws) {
  const model::ModelConfig& c = params.config;
  if (batch.empty()) return make_error(ErrorCode::invalid_argument, "no prompt to cache");
  if (sel.sites.empty()) return make_error(ErrorCode::invalid_argument, "no hook to cache");
  for (const Steering& st : o.steering)
    if (Status s = steering_check(c, st); !s) return tl::unexpected(s.error());
  int T = 0;
  for (std::size_t b = 0; b < batch.size(); b++) {
    if (batch[b].empty())
      return make_error(ErrorCode::invalid_argument, "prompt " + std::to_string(b + 1) + " has no tokens");
    if (batch[b].size() > std::size_t(c.n_ctx))
      return make_error(ErrorCode::too_long, "prompt " + std::to_string(b + 1) + " is " +
                                                 std::to_string(batch[b].size()) + " tokens long, more than the model's n_ctx (" +
                                                 std::to_string(c.n_ctx) + ")");
    T = std::max(T, static_cast<int>(batch[b].size()));
  }
  for (const Steering& st : o.steering)
    if (Status s = steering_reaches(st, T); !s) return tl::unexpected(s.error());
  const int B = static_cast<int>(batch.size());
  if (Status s = cache_check_budget(c, sel, B, T, o); !s) return tl::unexpected(s.error());

  ActivationCache cache;
  cache.T = T;
  cache.tokens = batch;
  // one block for every tensor (memory is refused here, as a value, rather than thrown later)
  const std::size_t floats = cache_bytes(c, sel, B, T) / sizeof(float);
  try {
    cache.memory = cache_memory_allocate(floats);
  } catch (const std::bad_alloc&) {
    return make_error(ErrorCode::too_long, "the cache's " + megabytes(floats * sizeof(float)) +
                                               " could not be allocated: narrow the hooks or use fewer or shorter prompts");
  }
  std::size_t offset = 0;
  // slot[p][layer + 1]: the tensor of that site, or -1
  std::vector<std::vector<int>> slot(model::kHookPoints, std::vector<int>(std::size_t(c.n_layer) + 1, -1));
  bool final_norm = false;
  for (const model::NamedHook& h : sel.sites) {
    CachedTensor t;
    t.name = model::hook_name(h.point, h.layer);
    t.point = h.point;
    t.layer = h.layer;
    const std::vector<int> shape = model::hook_shape(c, h.point, T);
    t.shape.push_back(B);
    for (int d : shape) t.shape.push_back(d);
    const std::size_t n = std::size_t(B) * numel(shape);
    t.values = std::span<float>(cache.memory.get() + offset, n);  // uninitialised: written by the hooks and pad_prompt
    offset += n;
    slot[static_cast<int>(h.point)][std::size_t(h.layer + 1)] = static_cast<int>(cache.tensors.size());
    cache.tensors.push_back(std::move(t));
    final_norm |= h.point == HookPoint::ln_final_scale || h.point == HookPoint::ln_final_normalized;
  }

  model::ForwardHooks hooks = sel.wish(c.n_layer);
  // the steering first at its sites, so the cache keeps the steered resid_pre
  const model::ForwardHooks steer = o.steering.empty() ? model::ForwardHooks() : steering_hooks(c, o.steering);
  if (!o.steering.empty())
    for (std::size_t i = 0; i < hooks.sites.size(); i++) hooks.sites[i] |= steer.sites[i];
  int b = 0;
  Status copied;  // a view of another rank than the table's is our bug: reported, never written past
  hooks.at = [&](HookPoint p, int layer, const model::HookView& v) {
    if (!o.steering.empty() && steer.wants(p, layer)) steer.at(p, layer, v);
    const int i = slot[static_cast<int>(p)][std::size_t(layer + 1)];
    if (i < 0) return;
    CachedTensor& t = cache.tensors[std::size_t(i)];
    if (static_cast<std::size_t>(v.rank) + 1 != t.shape.size()) {
      copied = make_error(ErrorCode::internal, t.name + ": the forward's view has rank " + std::to_string(v.rank));
      return;
    }
    // (i, j, k) of the prompt's view -> row b of the padded (B, P0, P1, P2) tensor
    const std::size_t P1 = v.rank > 1 ? std::size_t(t.shape[2]) : 1, P2 = v.rank > 2 ? std::size_t(t.shape[3]) : 1;
    const std::size_t P0 = std::size_t(t.shape[1]);
    float* dst = t.values.data() + std::size_t(b) * P0 * P1 * P2;
    // row by row along the view's last axis, contiguous in every view the forward hands
    // (each (T, NH, C) head result's rows of C, each pattern's rows of T): a memcpy each
    auto copy_row = [](const float* from, std::size_t stride, int n, float* to) {
      if (stride == 1) std::copy(from, from + n, to);
      else
        for (int i = 0; i < n; i++) to[i] = from[std::size_t(i) * stride];
    };
    const int a0 = v.shape[0], a1 = v.rank > 1 ? v.shape[1] : 1, a2 = v.rank > 2 ? v.shape[2] : 1;
    // a view of a megabyte or more (a head result, an MLP activation) is copied by the pool's
    // threads, its first axis split between them; a smaller one is not worth waking a worker
    const std::size_t per_x = std::size_t(a1) * a2;
    auto copy_part = [&](std::size_t x0, std::size_t x1) {
      for (std::size_t x = x0; x < x1; x++) {
        if (v.rank == 3)
          for (int y = 0; y < a1; y++) copy_row(&v.at(int(x), y), v.stride[2], a2, dst + (x * P1 + y) * P2);
        else
          copy_row(&v.at(int(x)), v.stride[1], a1, dst + x * P1);
      }
    };
    if (v.rank >= 2) {
      if (std::size_t(a0) * per_x >= kParallelCopyFloats)
        model::thread_pool_for_parts(std::size_t(a0), copy_part, per_x);
      else
        copy_part(0, std::size_t(a0));
    } else {
      copy_row(v.data, v.stride[0], a0, dst);
    }
  };
  model::ForwardOptions opt;
  opt.hooks = &hooks;
  if (final_norm && !o.logits) opt.logit_tokens = {0};  // ln_final runs only before an unembedding: one column is enough
  opt.logits = final_norm || o.logits;
  model::ForwardOutput out;
  for (b = 0; b < B; b++) {
    if (Status s = model::forward(params, batch[std::size_t(b)], opt, out, ws); !s) {
      Error e = s.error();
      if (B > 1) e.message = "prompt " + std::to_string(b + 1) + ": " + e.message;
      return tl::unexpected(e);
    }
    if (!copied) return tl::unexpected(copied.error());
    if (o.logits) {
      if (B == 1) {
        cache.logits = std::move(out.logits);  // (1, T, V): no copy
      } else {
        const std::size_t row = std::size_t(T) * std::size_t(out.V);
        if (cache.logits.empty()) cache.logits.assign(std::size_t(B) * row, 0.0f);
        std::copy(out.logits.begin(), out.logits.end(), cache.logits.begin() + std::ptrdiff_t(std::size_t(b) * row));
      }
    }
    for (CachedTensor& t : cache.tensors) pad_prompt(t, b, static_cast<int>(batch[std::size_t(b)].size()));
  }
  return cache;
}

namespace {

std::map<std::string, std::string> cache_metadata(const ActivationCache& cache, const CacheFileInfo& info) {
  nlohmann::json tokens = cache.tokens, lengths = nlohmann::json::array(), hooks = nlohmann::json::array();
  for (const auto& ids : cache.tokens) lengths.push_back(ids.size());
  for (const CachedTensor& t : cache.tensors) hooks.push_back(t.name);
  std::map<std::string, std::string> m = {{"model", info.model},
                                          {"tokens", tokens.dump()},
                                          {"lengths", lengths.dump()},
                                          {"hooks", hooks.dump()},
                                          {"padding", "right, zeros (attn_scores: -inf)"},
                                          {"format", "headlab activation cache: TransformerLens names and shapes, batch first"}};
  if (!info.prepend_bos.empty()) m["prepend_bos"] = info.prepend_bos;
  return m;
}

std::vector<model::SafetensorsWriteTensor> write_list(const ActivationCache& cache) {
  std::vector<model::SafetensorsWriteTensor> out;
  for (const CachedTensor& t : cache.tensors) out.push_back({t.name, t.shape, t.values.data()});
  return out;
}

}  // namespace

Result<std::string> cache_safetensors(const ActivationCache& cache, const CacheFileInfo& info) {
  return model::safetensors_serialize(write_list(cache), model::Dtype::F32, cache_metadata(cache, info));
}

Status cache_write(const std::string& path, const ActivationCache& cache, const CacheFileInfo& info) {
  return model::safetensors_write(path, write_list(cache), model::Dtype::F32, cache_metadata(cache, info));
}

}  // namespace headlab::research
