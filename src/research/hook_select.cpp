// research/hook_select.cpp — globs over TransformerLens's hook names (hook_select.h): each
// glob is matched against the model's sites; a glob that matches none is explained by the
// points the model lacks, the layers it has, or the closest names by edit distance.
#include "research/hook_select.h"

#include <algorithm>
#include <set>

namespace headlab::research {

using model::HookPoint;
using model::NamedHook;

namespace {

bool has_wildcard(std::string_view glob) { return glob.find_first_of("*?") != std::string_view::npos; }

// Levenshtein distance, two rows.
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); j++) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); i++) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); j++)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

// Every name of every point, whether or not this model has it, at each of its layers.
std::vector<NamedHook> every_point_site(const model::ModelConfig& c) {
  std::vector<NamedHook> all;
  for (int p = 0; p < model::kHookPoints; p++) {
    const auto point = static_cast<HookPoint>(p);
    if (!model::hook_is_block_level(point)) {
      all.push_back({point, -1});
      continue;
    }
    for (int l = 0; l < c.n_layer; l++) all.push_back({point, l});
  }
  return all;
}

// The names a mistyped glob is compared with: model-level names whole, block names with the
// layer the glob gave ("blocks.3.") or with "*".
std::string close_names(const model::ModelConfig& c, std::string_view glob) {
  std::string layer = "*";
  if (glob.substr(0, 7) == "blocks.") {
    std::size_t end = 7;
    while (end < glob.size() && ((glob[end] >= '0' && glob[end] <= '9') || glob[end] == '*')) end++;
    if (end > 7 && end < glob.size() && glob[end] == '.') layer = std::string(glob.substr(7, end - 7));
  }
  std::vector<std::pair<std::size_t, std::string>> scored;
  for (int p = 0; p < model::kHookPoints; p++) {
    const auto point = static_cast<HookPoint>(p);
    if (!model::hook_exists(c, point)) continue;
    std::string name = model::hook_is_block_level(point)
                           ? "blocks." + layer + "." + std::string(model::hook_suffix(point))
                           : std::string(model::hook_suffix(point));
    scored.push_back({edit_distance(glob, name), std::move(name)});
  }
  std::stable_sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  // the nearest names, and those as near as them within one edit, if near enough to be meant
  if (scored.empty()) return "";
  const std::size_t limit = std::min(scored.front().first + 1, std::max<std::size_t>(3, glob.size() / 3));
  std::string out;
  for (std::size_t i = 0; i < scored.size() && i < 4 && scored[i].first <= limit; i++)
    out += (out.empty() ? "" : ", ") + scored[i].second;
  return out;
}

}  // namespace

std::vector<std::string> HookSelection::names() const {
  std::vector<std::string> out;
  for (const NamedHook& h : sites) out.push_back(model::hook_name(h.point, h.layer));
  return out;
}

model::ForwardHooks HookSelection::wish(int n_layer) const {
  model::ForwardHooks hooks(n_layer);
  for (const NamedHook& h : sites) hooks.want(h.point, h.layer);
  return hooks;
}

bool hook_glob_match(std::string_view glob, std::string_view name) {
  // The classic backtracking match: remember the last '*' and how much of the name it took.
  std::size_t g = 0, n = 0, star = std::string_view::npos, taken = 0;
  while (n < name.size()) {
    if (g < glob.size() && (glob[g] == '?' || glob[g] == name[n])) {
      g++;
      n++;
    } else if (g < glob.size() && glob[g] == '*') {
      star = g++;
      taken = n;
    } else if (star != std::string_view::npos) {
      g = star + 1;
      n = ++taken;
    } else {
      return false;
    }
  }
  while (g < glob.size() && glob[g] == '*') g++;
  return g == glob.size();
}

std::string hook_missing_reason(const model::ModelConfig& c, HookPoint p) {
  if (model::hook_exists(c, p)) return "";
  const std::string fam = c.family.empty() ? "this model" : "this " + c.family + " model";
  switch (p) {
    case HookPoint::pos_embed:
      return fam + " has no learned position table (its positions are " +
             (c.positions == model::ModelConfig::Positions::rotary ? "rotary, in attn.hook_rot_q/rot_k)" : "none)");
    case HookPoint::rot_q:
    case HookPoint::rot_k: return fam + " has no rotary positions (its positions are added in hook_pos_embed, or none)";
    case HookPoint::ln1_post_scale:
    case HookPoint::ln1_post_normalized:
    case HookPoint::ln2_post_scale:
    case HookPoint::ln2_post_normalized:
      return fam + " has no norm after its attention and MLP outputs (only Gemma 2/3's sandwich norms do)";
    case HookPoint::resid_mid:
      return !c.mlp ? fam + " is attention-only: resid_post = resid_pre + attn_out, no residual in between"
                    : fam + " has parallel blocks (GPT-NeoX): attention and MLP both read resid_pre, so there is "
                            "no residual between them (TransformerLens has no hook_resid_mid there either)";
    case HookPoint::mlp_pre_linear:
      return !c.mlp ? fam + " is attention-only (no MLP)"
                    : fam + "'s MLP is not gated: mlp.hook_pre is its only input (hook_pre_linear is the up "
                            "projection of a gated SwiGLU/GeGLU MLP)";
    default: return fam + " is attention-only (no MLP)";
  }
}

Result<HookSelection> hook_select(const model::ModelConfig& c, std::string_view globs) {
  const std::vector<NamedHook> sites = model::model_hooks(c);
  std::vector<std::string> names;  // made once: a request may carry thousands of globs
  for (const NamedHook& h : sites) names.push_back(model::hook_name(h.point, h.layer));
  std::vector<bool> chosen(sites.size(), false);
  bool any_glob = false;
  std::size_t begin = 0;
  while (begin <= globs.size()) {
    std::size_t comma = globs.find(',', begin);
    if (comma == std::string_view::npos) comma = globs.size();
    std::string_view glob = globs.substr(begin, comma - begin);
    begin = comma + 1;
    while (!glob.empty() && (glob.front() == ' ' || glob.front() == '\t')) glob.remove_prefix(1);
    while (!glob.empty() && (glob.back() == ' ' || glob.back() == '\t')) glob.remove_suffix(1);
    if (glob.empty()) {
      if (comma == globs.size() && any_glob) break;  // a trailing comma
      return make_error(ErrorCode::invalid_argument,
                        "--hooks: an empty name; give TransformerLens hook names or globs separated by commas, "
                        "like 'blocks.*.attn.hook_pattern,hook_embed' ('*' for every hook)");
    }
    any_glob = true;
    const std::string g(glob);
    bool matched = false;
    for (std::size_t i = 0; i < sites.size(); i++)
      if (hook_glob_match(glob, names[i])) chosen[i] = matched = true;
    if (matched) continue;

    // Nothing of this model: is it a point the model lacks, a layer it lacks, or no name at all?
    std::set<HookPoint> lacked;
    for (const NamedHook& h : every_point_site(c))
      if (!model::hook_exists(c, h.point) && hook_glob_match(glob, model::hook_name(h.point, h.layer)))
        lacked.insert(h.point);
    if (!lacked.empty()) {
      std::string why;
      for (HookPoint p : lacked) {
        if (!why.empty()) why += "; ";
        why += std::string(model::hook_suffix(p)) + ": " + hook_missing_reason(c, p);
      }
      return make_error(ErrorCode::invalid_argument, "--hooks: '" + g + "' names no hook of this model (" + why + ")");
    }
    if (auto named = model::parse_hook_name(glob); named && named->layer >= c.n_layer)
      return make_error(ErrorCode::invalid_argument,
                        "--hooks: '" + g + "': this model has " + std::to_string(c.n_layer) + " blocks, blocks.0 to blocks." +
                            std::to_string(c.n_layer - 1));
    std::string close = close_names(c, glob);
    return make_error(ErrorCode::invalid_argument,
                      "--hooks: '" + g + "' " + (has_wildcard(glob) ? "matches no hook name" : "is not a hook name") +
                          (close.empty() ? std::string(". Names are TransformerLens's, like hook_embed, "
                                                       "blocks.0.hook_resid_pre, blocks.*.attn.hook_pattern; '*' is every hook")
                                         : ". Did you mean " + close + "?"));
  }
  HookSelection sel;
  for (std::size_t i = 0; i < sites.size(); i++)
    if (chosen[i]) sel.sites.push_back(sites[i]);
  return sel;
}

}  // namespace headlab::research
