// model/hooks.cpp — TransformerLens's names of the forward's points, which a model has, and
// their shapes (see hooks.h).
#include "model/hooks.h"

#include <charconv>

#include "model/config.h"

namespace headlab::model {

namespace {

struct PointName {
  HookPoint point;
  std::string_view suffix;  // after "blocks.{l}." for block points; the whole name otherwise
};
// In the forward's order (TransformerLens's): the cache lists them so.
constexpr PointName kNames[] = {
    {HookPoint::embed, "hook_embed"},
    {HookPoint::pos_embed, "hook_pos_embed"},
    {HookPoint::resid_pre, "hook_resid_pre"},
    {HookPoint::ln1_scale, "ln1.hook_scale"},
    {HookPoint::ln1_normalized, "ln1.hook_normalized"},
    {HookPoint::q, "attn.hook_q"},
    {HookPoint::k, "attn.hook_k"},
    {HookPoint::v, "attn.hook_v"},
    {HookPoint::rot_q, "attn.hook_rot_q"},
    {HookPoint::rot_k, "attn.hook_rot_k"},
    {HookPoint::attn_scores, "attn.hook_attn_scores"},
    {HookPoint::pattern, "attn.hook_pattern"},
    {HookPoint::z, "attn.hook_z"},
    {HookPoint::result, "attn.hook_result"},
    {HookPoint::ln1_post_scale, "ln1_post.hook_scale"},
    {HookPoint::ln1_post_normalized, "ln1_post.hook_normalized"},
    {HookPoint::attn_out, "hook_attn_out"},
    {HookPoint::resid_mid, "hook_resid_mid"},
    {HookPoint::ln2_scale, "ln2.hook_scale"},
    {HookPoint::ln2_normalized, "ln2.hook_normalized"},
    {HookPoint::mlp_pre, "mlp.hook_pre"},
    {HookPoint::mlp_pre_linear, "mlp.hook_pre_linear"},
    {HookPoint::mlp_post, "mlp.hook_post"},
    {HookPoint::ln2_post_scale, "ln2_post.hook_scale"},
    {HookPoint::ln2_post_normalized, "ln2_post.hook_normalized"},
    {HookPoint::mlp_out, "hook_mlp_out"},
    {HookPoint::resid_post, "hook_resid_post"},
    {HookPoint::ln_final_scale, "ln_final.hook_scale"},
    {HookPoint::ln_final_normalized, "ln_final.hook_normalized"},
};
static_assert(std::size(kNames) == std::size_t(kHookPoints), "every point has a name");

}  // namespace

bool hook_is_block_level(HookPoint p) {
  return !(p == HookPoint::embed || p == HookPoint::pos_embed || p == HookPoint::ln_final_scale ||
           p == HookPoint::ln_final_normalized);
}

std::size_t HookView::size() const {
  std::size_t n = 1;
  for (int d = 0; d < rank; d++) n *= std::size_t(shape[std::size_t(d)]);
  return n;
}

void HookView::copy_to(float* out) const {
  const int a = rank > 0 ? shape[0] : 1, b = rank > 1 ? shape[1] : 1, c = rank > 2 ? shape[2] : 1;
  for (int i = 0; i < a; i++)
    for (int j = 0; j < b; j++)
      for (int k = 0; k < c; k++) *out++ = at(i, j, k);
}

void HookView::copy_from(const float* in) const {
  const int a = rank > 0 ? shape[0] : 1, b = rank > 1 ? shape[1] : 1, c = rank > 2 ? shape[2] : 1;
  for (int i = 0; i < a; i++)
    for (int j = 0; j < b; j++)
      for (int k = 0; k < c; k++) at(i, j, k) = *in++;
}

void ForwardHooks::want(HookPoint p, int layer) {
  const std::uint32_t bit = 1u << static_cast<int>(p);
  if (!hook_is_block_level(p)) {
    if (!sites.empty()) sites[0] |= bit;
    return;
  }
  if (layer == HookLayer::every) {
    for (std::size_t i = 1; i < sites.size(); i++) sites[i] |= bit;
  } else if (layer >= 0 && std::size_t(layer) + 1 < sites.size()) {
    sites[std::size_t(layer) + 1] |= bit;
  }
}

bool ForwardHooks::any() const {
  for (std::uint32_t s : sites)
    if (s) return true;
  return false;
}

std::string_view hook_suffix(HookPoint p) {
  for (const PointName& n : kNames)
    if (n.point == p) return n.suffix;
  return {};
}

std::string hook_name(HookPoint p, int layer) {
  if (!hook_is_block_level(p)) return std::string(hook_suffix(p));
  return "blocks." + std::to_string(layer) + "." + std::string(hook_suffix(p));
}

std::optional<NamedHook> parse_hook_name(std::string_view name) {
  if (name.substr(0, 7) != "blocks.") {
    for (const PointName& n : kNames)
      if (!hook_is_block_level(n.point) && n.suffix == name) return NamedHook{n.point, -1};
    return std::nullopt;
  }
  std::string_view rest = name.substr(7);
  int layer = -1;
  auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), layer);
  if (ec != std::errc() || end == rest.data() || layer < 0 || end == rest.data() + rest.size() || *end != '.')
    return std::nullopt;
  if (rest[0] == '0' && end - rest.data() > 1) return std::nullopt;  // "blocks.03." is not a name
  std::string_view suffix = rest.substr(std::size_t(end - rest.data()) + 1);
  for (const PointName& n : kNames)
    if (hook_is_block_level(n.point) && n.suffix == suffix) return NamedHook{n.point, layer};
  return std::nullopt;
}

bool hook_exists(const ModelConfig& c, HookPoint p) {
  const bool sequential = c.mlp && !c.parallel_residual;
  switch (p) {
    case HookPoint::pos_embed: return c.positions == ModelConfig::Positions::learned;
    case HookPoint::rot_q:
    case HookPoint::rot_k: return c.positions == ModelConfig::Positions::rotary;
    case HookPoint::ln1_post_scale:
    case HookPoint::ln1_post_normalized: return c.sandwich_norm;
    case HookPoint::ln2_post_scale:
    case HookPoint::ln2_post_normalized: return c.sandwich_norm && c.mlp;
    case HookPoint::resid_mid: return sequential;
    case HookPoint::ln2_scale:
    case HookPoint::ln2_normalized:
    case HookPoint::mlp_pre:
    case HookPoint::mlp_post:
    case HookPoint::mlp_out: return c.mlp;
    case HookPoint::mlp_pre_linear: return c.mlp && c.gated();
    default: return p != HookPoint::count;
  }
}

std::vector<NamedHook> model_hooks(const ModelConfig& c) {
  std::vector<NamedHook> all;
  for (const PointName& n : kNames)
    if (!hook_is_block_level(n.point) && hook_exists(c, n.point) &&
        (n.point == HookPoint::embed || n.point == HookPoint::pos_embed))
      all.push_back({n.point, -1});
  for (int l = 0; l < c.n_layer; l++)
    for (const PointName& n : kNames)
      if (hook_is_block_level(n.point) && hook_exists(c, n.point)) all.push_back({n.point, l});
  all.push_back({HookPoint::ln_final_scale, -1});
  all.push_back({HookPoint::ln_final_normalized, -1});
  return all;
}

std::vector<int> hook_shape(const ModelConfig& c, HookPoint p, int T) {
  const int C = c.n_embd, NH = c.n_head, NKV = c.kv_heads(), HS = c.head_size(), F = c.mlp_width();
  switch (p) {
    case HookPoint::ln_final_scale:
    case HookPoint::ln1_scale:
    case HookPoint::ln2_scale:
    case HookPoint::ln1_post_scale:
    case HookPoint::ln2_post_scale: return {T, 1};
    case HookPoint::q:
    case HookPoint::rot_q:
    case HookPoint::z: return {T, NH, HS};
    case HookPoint::k:
    case HookPoint::v:
    case HookPoint::rot_k: return {T, NKV, HS};
    case HookPoint::attn_scores:
    case HookPoint::pattern: return {NH, T, T};
    case HookPoint::result: return {T, NH, C};
    case HookPoint::mlp_pre:
    case HookPoint::mlp_pre_linear:
    case HookPoint::mlp_post: return {T, F};
    default: return {T, C};
  }
}

}  // namespace headlab::model
