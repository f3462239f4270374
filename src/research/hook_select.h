// research/hook_select.h — which of a model's hook points a caller wants, from the globs a
// person types: "blocks.*.attn.hook_pattern,blocks.3.hook_resid_pre,hook_embed".
//
//   auto sel = hook_select(params.config, "blocks.*.attn.hook_pattern,hook_embed");
//   if (!sel) return tl::unexpected(sel.error());    // names the bad glob, the close names
//   model::ForwardHooks hooks = sel->wish(params.config.n_layer);
//   hooks.at = ...;                                    // called once per selected site
//
// The rule (Python's fnmatch.fnmatch on TransformerLens's cache keys, which is how a TL user
// filters `cache.keys()`): globs are separated by commas (spaces around them are dropped);
// `*` matches any run of characters, dots included, `?` one character, anything else itself;
// a glob matches a whole name. So `*` alone is every hook, `blocks.*.hook_resid_pre` every
// layer's resid_pre, `blocks.3.*` everything in block 3, `*hook_scale` every norm's scale.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "model/config.h"
#include "model/hooks.h"
#include "util/result.h"

namespace headlab::research {

struct HookSelection {
  std::vector<model::NamedHook> sites;  // in the forward's order (model::model_hooks), each once
  std::vector<std::string> names() const;  // their TransformerLens names, in the same order
  // The forward's wish list: `at` is left for the caller to set.
  model::ForwardHooks wish(int n_layer) const;
};

// Whether `glob` matches `name` under the rule above.
bool hook_glob_match(std::string_view glob, std::string_view name);

// Errors (invalid_argument): no glob; an exact name that is no TransformerLens name (the
// message lists the closest names by edit distance); a layer the model does not have; a name
// or glob that matches only points this model lacks (the message says why: a parallel block
// has no resid_mid, rotary models no pos_embed, ...); a glob that matches nothing.
Result<HookSelection> hook_select(const model::ModelConfig& config, std::string_view globs);

// Why the model has no such point ("" when it has it): for the messages above.
std::string hook_missing_reason(const model::ModelConfig& config, model::HookPoint point);

}  // namespace headlab::research
