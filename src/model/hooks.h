// model/hooks.h — the named points of the forward where a caller reads or changes an
// activation: TransformerLens's hook points, for every family the engine runs.
//
//   ForwardHooks hooks(params.config.n_layer);
//   hooks.want(HookPoint::resid_pre, 3);                      // blocks.3.hook_resid_pre
//   hooks.want(HookPoint::pattern, HookLayer::every);         // blocks.*.attn.hook_pattern
//   hooks.at = [&](HookPoint p, int layer, const HookView& v) { ... read or write v ... };
//   ForwardOptions opt;  opt.hooks = &hooks;
//
// `at` is called in the forward's own order (TransformerLens's), on the forward's thread,
// once per wanted site (in a forward_batch, once per sequence there, HookView::sequence
// saying which, each view over that sequence's own rows). The view is the activation itself where the forward's next step
// reads it, so a write there changes the rest of the run (patching, steering); a view made
// only to be looked at (`writable` false: the norms' scales, the scores, each head's
// result) is a copy and a write to it changes nothing. `pattern` is writable: a changed
// pattern is used as the head's pattern (the forward compares it with the one it made).
//
// Shapes are TransformerLens's without the batch axis (model/hooks.cpp has the table):
//   hook_embed, hook_pos_embed, resid_pre/mid/post, attn_out, mlp_out   (T, C)
//   ln*.hook_scale (T, 1), ln*.hook_normalized (T, C)  (normalized = the norm's output)
//   attn.hook_q, hook_rot_q, hook_z  (T, NH, HS);  hook_k/v, hook_rot_k  (T, NKV, HS)
//   attn.hook_attn_scores, hook_pattern (NH, T, T): scores after the scale, the soft-cap and
//     the mask (-inf where masked), as TransformerLens; pattern zero where masked
//   attn.hook_result (T, NH, C): z_h W_O,h without the bias
//   mlp.hook_pre, hook_pre_linear (gated MLPs' up projection), hook_post  (T, F)
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace headlab::model {

enum class HookPoint : std::uint8_t {
  // model-level (layer -1)
  embed,
  pos_embed,
  ln_final_scale,
  ln_final_normalized,
  // per block
  resid_pre,
  ln1_scale,
  ln1_normalized,
  q,
  k,
  v,
  rot_q,
  rot_k,
  attn_scores,
  pattern,
  z,
  result,
  ln1_post_scale,       // Gemma's norm of the attention output (sandwich norms)
  ln1_post_normalized,
  attn_out,
  resid_mid,
  ln2_scale,
  ln2_normalized,
  mlp_pre,
  mlp_pre_linear,
  mlp_post,
  ln2_post_scale,       // Gemma's norm of the MLP output
  ln2_post_normalized,
  mlp_out,
  resid_post,
  count
};
constexpr int kHookPoints = static_cast<int>(HookPoint::count);

bool hook_is_block_level(HookPoint p);

// A strided view of one activation: element (i, j, k) at data[i*stride[0] + j*stride[1] + k*stride[2]].
struct HookView {
  float* data = nullptr;
  int rank = 0;
  std::array<int, 3> shape{};
  std::array<std::size_t, 3> stride{};
  bool writable = false;
  int sequence = 0;          // which sequence of a forward_batch the view holds (0 in a lone forward)
  int first_row = 0;         // the position of the view's row 0 (ForwardOptions::start_rows; 0 for scores, pattern)
  std::size_t size() const;  // elements
  float& at(int i, int j = 0, int k = 0) const {
    return data[std::size_t(i) * stride[0] + std::size_t(j) * stride[1] + std::size_t(k) * stride[2]];
  }
  // Copies the view into `out`, densely in its shape's order (row-major).
  void copy_to(float* out) const;
  void copy_from(const float* in) const;  // the reverse (only for a writable view)
};

struct HookLayer {
  static constexpr int every = -2;
};

struct ForwardHooks {
  explicit ForwardHooks(int n_layer = 0) : sites(std::size_t(n_layer) + 1, 0) {}
  // [0]: model-level points; [l + 1]: block l. Bit p set: call `at` for point p there.
  std::vector<std::uint32_t> sites;
  std::function<void(HookPoint, int layer, const HookView&)> at;

  void want(HookPoint p, int layer);  // layer: a block, -1 for model-level points, HookLayer::every
  bool wants(HookPoint p, int layer) const {
    const std::size_t i = layer < 0 ? 0 : std::size_t(layer) + 1;
    return i < sites.size() && (sites[i] >> static_cast<int>(p) & 1u);
  }
  bool any() const;
};

// ---- TransformerLens's names -----------------------------------------------------------

// "blocks.3.attn.hook_pattern", "hook_embed", "ln_final.hook_scale"
std::string hook_name(HookPoint p, int layer);
// The point and layer of a name (layer -1 for model-level names); nothing for an unknown one.
struct NamedHook {
  HookPoint point;
  int layer;
};
std::optional<NamedHook> parse_hook_name(std::string_view name);
// The point's suffix after "blocks.{l}." ("attn.hook_pattern") or its whole name for model-level points.
std::string_view hook_suffix(HookPoint p);

// ---- which points a model has ------------------------------------------------------------

struct ModelConfig;
// Whether the model has the point (as TransformerLens: no resid_mid in a parallel or
// attention-only block, no pos_embed without learned positions, rot_q/rot_k only with the
// rotary, pre_linear only in gated MLPs, the ln*_post points only with Gemma's sandwich norms).
bool hook_exists(const ModelConfig& config, HookPoint p);
// Every site of the model in the forward's order: the model-level points at -1.
std::vector<NamedHook> model_hooks(const ModelConfig& config);
// The point's shape at T tokens (without the batch axis).
std::vector<int> hook_shape(const ModelConfig& config, HookPoint p, int T);

}  // namespace headlab::model
