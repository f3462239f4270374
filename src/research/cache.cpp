// research/cache.cpp — run_with_cache (cache.h): every kept tensor allocated once at
// (B, ...) with the longest prompt's T; each prompt's forward copies its hooks' views into
// its row b, so a padded position keeps the fill value.
#include "research/cache.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>

#include <nlohmann/json.hpp>

#include "formats/safetensors.h"

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

}  // namespace

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
  const int B = static_cast<int>(batch.size());
  if (Status s = cache_check_budget(c, sel, B, T, o); !s) return tl::unexpected(s.error());

  ActivationCache cache;
  cache.T = T;
  cache.tokens = batch;
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
    // a padded score is masked: -inf, as the forward writes every masked score
    const float fill = h.point == HookPoint::attn_scores ? -std::numeric_limits<float>::infinity() : 0.0f;
    t.values.assign(std::size_t(B) * numel(shape), fill);
    slot[static_cast<int>(h.point)][std::size_t(h.layer + 1)] = static_cast<int>(cache.tensors.size());
    cache.tensors.push_back(std::move(t));
    final_norm |= h.point == HookPoint::ln_final_scale || h.point == HookPoint::ln_final_normalized;
  }

  model::ForwardHooks hooks = sel.wish(c.n_layer);
  int b = 0;
  Status copied;  // a view of another rank than the table's is our bug: reported, never written past
  hooks.at = [&](HookPoint p, int layer, const model::HookView& v) {
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
    const int a0 = v.shape[0], a1 = v.rank > 1 ? v.shape[1] : 1, a2 = v.rank > 2 ? v.shape[2] : 1;
    for (int x = 0; x < a0; x++)
      for (int y = 0; y < a1; y++)
        for (int z = 0; z < a2; z++) dst[(std::size_t(x) * P1 + std::size_t(y)) * P2 + std::size_t(z)] = v.at(x, y, z);
  };
  model::ForwardOptions opt;
  opt.hooks = &hooks;
  if (final_norm) opt.logit_tokens = {0};  // ln_final runs only before an unembedding: one column is enough
  opt.logits = final_norm;
  model::ForwardOutput out;
  for (b = 0; b < B; b++) {
    if (Status s = model::forward(params, batch[std::size_t(b)], opt, out, ws); !s) {
      Error e = s.error();
      if (B > 1) e.message = "prompt " + std::to_string(b + 1) + ": " + e.message;
      return tl::unexpected(e);
    }
    if (!copied) return tl::unexpected(copied.error());
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
