// research/attribution.cpp — direct logit attribution (see attribution.h): one forward whose
// hooks keep the components' rows at the position, then each row's dot product with the
// logit direction through the frozen final norm.
#include "research/attribution.h"

#include <cmath>

#include "model/hooks.h"

namespace headlab::research {

std::string_view part_kind_name(PartKind k) {
  switch (k) {
    case PartKind::embed: return "embed";
    case PartKind::pos_embed: return "pos_embed";
    case PartKind::head: return "head";
    case PartKind::attn_bias: return "attn_bias";
    case PartKind::attn_out: return "attn_out";
    case PartKind::mlp_out: return "mlp_out";
    case PartKind::ln_final_bias: return "ln_final_bias";
  }
  return "";
}

Result<Attribution> direct_logit_attribution(const model::Parameters& params, std::span<const int> ids,
                                             const AttributionRequest& rq, model::Workspace& ws) {
  using model::HookPoint;
  const model::ModelConfig& c = params.config;
  const int L = c.n_layer, NH = c.n_head, C = c.n_embd, V = c.vocab_size;
  const bool rms = c.norm == model::ModelConfig::Norm::rmsnorm;
  auto bad = [](const std::string& m) { return make_error(ErrorCode::invalid_argument, m); };
  if (rq.answer < 0 || rq.answer >= V)
    return bad("answer token " + std::to_string(rq.answer) + " is outside the vocabulary [0, " + std::to_string(V) + ")");
  if (rq.wrong < -1 || rq.wrong >= V)
    return bad("wrong token " + std::to_string(rq.wrong) + " is outside the vocabulary [0, " + std::to_string(V) + ")");
  if (rq.wrong == rq.answer)
    return bad("the answer and the wrong token are the same token (" + std::to_string(rq.answer) +
               "): their logit difference is 0 by definition");
  const int T = static_cast<int>(ids.size());
  // -1 the last, -2 the one before, as Python counts (every negative was the last, silently)
  const int pos = rq.position < 0 ? T + rq.position : rq.position;
  if (T > 0 && (pos < 0 || pos >= T))
    return bad("position " + std::to_string(rq.position) + " is outside the input (positions 0.." + std::to_string(T - 1) +
               ", or -1.." + std::to_string(-T) + " from the end)");

  // 1. the forward, keeping row `pos` of each component                         (C) each
  const bool heads_add = !c.sandwich_norm;  // Gemma's post-attention norm: attn_out is the part
  model::ForwardHooks hooks(L);
  hooks.want(HookPoint::embed, -1);
  if (c.positions == model::ModelConfig::Positions::learned) hooks.want(HookPoint::pos_embed, -1);
  hooks.want(heads_add ? HookPoint::result : HookPoint::attn_out, model::HookLayer::every);
  if (c.mlp) hooks.want(HookPoint::mlp_out, model::HookLayer::every);
  hooks.want(HookPoint::ln_final_scale, -1);
  hooks.want(HookPoint::ln_final_normalized, -1);
  std::vector<float> embed(C, 0.0f), pos_embed(C, 0.0f), normalized(C, 0.0f);
  std::vector<float> heads(std::size_t(L) * NH * C, 0.0f);  // (L, NH, C) or (L, 1, C) attn_out
  std::vector<float> mlp(std::size_t(L) * C, 0.0f);         // (L, C)
  float scale = 1.0f;
  auto row = [&](const model::HookView& v, float* out) {  // row `pos` of a (T, C) view
    for (int j = 0; j < C; j++) out[j] = v.at(pos, j);
  };
  hooks.at = [&](HookPoint p, int l, const model::HookView& v) {
    switch (p) {
      case HookPoint::embed: row(v, embed.data()); break;
      case HookPoint::pos_embed: row(v, pos_embed.data()); break;
      case HookPoint::result:  // (T, NH, C)
        for (int h = 0; h < NH; h++)
          for (int j = 0; j < C; j++) heads[(std::size_t(l) * NH + h) * C + j] = v.at(pos, h, j);
        break;
      case HookPoint::attn_out: row(v, heads.data() + std::size_t(l) * NH * C); break;
      case HookPoint::mlp_out: row(v, mlp.data() + std::size_t(l) * C); break;
      case HookPoint::ln_final_scale: scale = v.at(pos, 0); break;
      case HookPoint::ln_final_normalized: row(v, normalized.data()); break;
      default: break;
    }
  };
  model::ForwardOptions opt;
  opt.hooks = &hooks;
  opt.logit_tokens = {rq.answer};
  if (rq.wrong >= 0) opt.logit_tokens.push_back(rq.wrong);
  model::ForwardOutput out;
  if (Status s = model::forward(params, ids, opt, out, ws); !s) return tl::unexpected(s.error());

  // 2. the direction d = W_U[answer] - W_U[wrong], and u = d * norm weight      (C)
  std::vector<float> d(C), tmp(C);
  model::parameters_read_rows(params, model::parameters_unembedding_tensor(c), 0, rq.answer, 1, d.data());
  if (rq.wrong >= 0) {
    model::parameters_read_rows(params, model::parameters_unembedding_tensor(c), 0, rq.wrong, 1, tmp.data());
    for (int j = 0; j < C; j++) d[j] -= tmp[j];
  }
  std::vector<double> u(C);
  for (int j = 0; j < C; j++) u[j] = double(d[j]) * (double(params.t.lnfw[j]) + (c.norm_plus_one ? 1.0 : 0.0));

  // 3. each component through the frozen norm: centred (LayerNorm), / scale, . u
  auto dla = [&](const float* x) {
    double mean = 0;
    if (!rms) {
      for (int j = 0; j < C; j++) mean += x[j];
      mean /= C;
    }
    double s = 0;
    for (int j = 0; j < C; j++) s += (double(x[j]) - mean) * u[j];
    return s / scale;
  };
  Attribution a;
  a.position = pos, a.answer = rq.answer, a.wrong = rq.wrong, a.final_scale = scale;
  auto add = [&](PartKind kind, int layer, int head, std::string label, double value) {
    a.parts.push_back({kind, layer, head, std::move(label), static_cast<float>(value)});
    a.sum += value;
  };
  add(PartKind::embed, -1, -1, "embed", dla(embed.data()));
  if (c.positions == model::ModelConfig::Positions::learned) add(PartKind::pos_embed, -1, -1, "pos_embed", dla(pos_embed.data()));
  for (int l = 0; l < L; l++) {
    const std::string ls = std::to_string(l);
    if (heads_add) {
      for (int h = 0; h < NH; h++)
        add(PartKind::head, l, h, "L" + ls + "H" + std::to_string(h), dla(heads.data() + (std::size_t(l) * NH + h) * C));
      if (c.attn_out_bias) add(PartKind::attn_bias, l, -1, ls + "_attn_bias", dla(params.t.attprojb + std::size_t(l) * C));
    } else {
      add(PartKind::attn_out, l, -1, ls + "_attn_out", dla(heads.data() + std::size_t(l) * NH * C));
    }
    if (c.mlp) add(PartKind::mlp_out, l, -1, ls + "_mlp_out", dla(mlp.data() + std::size_t(l) * C));
  }
  if (!rms) {
    double b = 0;
    for (int j = 0; j < C; j++) b += double(params.t.lnfb[j]) * d[j];
    add(PartKind::ln_final_bias, -1, -1, "ln_final.b", b);
  }

  // 4. what they add up to: the model's logits, and ln_final(resid) . d before any soft-cap
  const std::size_t n = opt.logit_tokens.size();
  const float* lg = out.logits.data() + std::size_t(pos) * n;
  a.logit_diff = rq.wrong >= 0 ? lg[0] - lg[1] : lg[0];
  double uncapped = 0;
  for (int j = 0; j < C; j++) uncapped += double(normalized[j]) * d[j];
  a.logit_diff_uncapped = static_cast<float>(uncapped);
  return a;
}

}  // namespace headlab::research
