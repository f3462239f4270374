// research/attribution.h — direct logit attribution (Elhage et al. 2021; TransformerLens's
// `cache.decompose_resid` / `stack_head_results` + `apply_ln_to_stack` + `logit_attrs`): the
// final residual at one position is a sum of components, and the logit difference along
//   d = W_U[:, answer] - W_U[:, wrong]          (or W_U[:, answer] alone)          (C)
// is split among them with ln_final's scale frozen from the run (TL's apply_ln_to_stack):
//   LayerNorm:  dla(x) = ((x - mean(x)) / scale) . (w * d)        ln_final.b's part: b . d
//   RMSNorm:    dla(x) = (x / scale) . (w * d)                    (Gemma: 1 + w)
// Components, in TL's order: embed, pos_embed (learned positions), then per layer each head
// (hook_result, z_h W_O,h), the attention bias b_O and mlp_out, and last ln_final's bias.
// Gemma's post-attention norm makes the heads not additive: its layers give attn_out instead.
// The parts add up to the logit difference before Gemma 2's final soft-cap (the cap is not
// linear); headlab's families have no unembedding bias, so there is no b_U difference.
//
//   AttributionRequest rq;  rq.answer = id(" Mary");  rq.wrong = id(" John");
//   Result<Attribution> a = direct_logit_attribution(params, ids, rq, workspace);
//   for (const AttributionPart& p : a->parts) std::printf("%s %f\n", p.label.c_str(), p.value);
#pragma once

#include <span>
#include <string>
#include <vector>

#include "model/forward.h"
#include "model/parameters.h"
#include "util/result.h"

namespace headlab::research {

struct AttributionRequest {
  int answer = -1;    // token id whose logit counts +1
  int wrong = -1;     // token id whose logit counts -1; -1: the answer's logit alone
  int position = -1;  // the position read; negative counts from the end (-1: the last)
};

enum class PartKind { embed, pos_embed, head, attn_bias, attn_out, mlp_out, ln_final_bias };
std::string_view part_kind_name(PartKind k);  // "embed", "head", "attn_bias", ...

struct AttributionPart {
  PartKind kind = PartKind::embed;
  int layer = -1;     // -1 for embed, pos_embed, ln_final_bias
  int head = -1;      // heads only
  std::string label;  // TL's: "embed", "pos_embed", "L0H3", "0_attn_bias", "0_attn_out", "0_mlp_out", "ln_final.b"
  float value = 0.0f; // its share of the logit difference
};

struct Attribution {
  int position = 0;
  int answer = 0, wrong = -1;
  std::vector<AttributionPart> parts;  // in the order above
  double sum = 0;                 // of the parts
  float logit_diff = 0.0f;        // the model's own logits (after Gemma 2's soft-cap)
  float logit_diff_uncapped = 0;  // ln_final(resid) . d: what the parts add up to (= logit_diff without a soft-cap)
  float final_scale = 0.0f;       // ln_final.hook_scale at the position, frozen
};

// Errors: invalid_argument (an answer or wrong id outside the vocabulary, answer == wrong, a
// position outside 0..T-1), the forward's.
Result<Attribution> direct_logit_attribution(const model::Parameters& params, std::span<const int> ids,
                                             const AttributionRequest& request, model::Workspace& workspace);

}  // namespace headlab::research
