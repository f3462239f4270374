// model/forward.cpp — the inference forward with its activation record and interventions
// (see forward.h for the numbered steps).
#include "model/forward.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "model/blas.h"
#include "model/head_range.h"
#include "model/next_token.h"
#include "model/thread_pool.h"
#include "model/ops/attention.h"
#include "model/ops/embedding.h"
#include "model/ops/gelu.h"
#include "model/ops/layernorm.h"
#include "model/ops/matmul.h"
#include "model/ops/matmul_packed.h"
#include "model/ops/rmsnorm.h"
#include "model/ops/rope.h"
#include "model/ops/swiglu.h"
#include "model/packed_weights.h"
#include "model/ops/residual.h"
#include "util/check.h"

namespace headlab::model {

const float* ActivationRecord::pattern_row(int layer, int head, int query) const {
  HEADLAB_CHECK(!pattern.empty() && layer >= 0 && layer < L && head >= 0 && head < NH && query >= 0 && query < T);
  return pattern.data() + (std::size_t(layer) * NH + head) * packed_size(T) + packed_offset(query);
}

const float* ActivationRecord::scores_row(int layer, int head, int query) const {
  HEADLAB_CHECK(!scores.empty() && layer >= 0 && layer < L && head >= 0 && head < NH && query >= 0 && query < T);
  return scores.data() + (std::size_t(layer) * NH + head) * packed_size(T) + packed_offset(query);
}

float ActivationRecord::pattern_at(int layer, int head, int query, int key) const {
  HEADLAB_CHECK(key >= 0 && key < T);
  return key > query ? 0.0f : pattern_row(layer, head, query)[key];
}

std::vector<float> ActivationRecord::pattern_full(int layer, int head) const {
  std::vector<float> full(std::size_t(T) * T, 0.0f);
  for (int t = 0; t < T; t++) {
    const float* row = pattern_row(layer, head, t);
    std::copy(row, row + t + 1, full.begin() + std::size_t(t) * T);
  }
  return full;
}

namespace {

Status validate_interventions(const Interventions& iv, const ModelConfig& c, int T) {
  auto bad = [](const std::string& m) { return make_error(ErrorCode::invalid_argument, m); };
  auto where = [&](int layer, int head, bool head_may_be_all) -> std::string {
    Status s = check_layer_head(c, layer, head, head_may_be_all);
    return s ? std::string() : s.error().message;
  };
  for (const HeadAblation& a : iv.ablate)
    if (std::string w = where(a.layer, a.head, false); !w.empty()) return bad("ablate: " + w);
  for (const PatternReplacement& r : iv.replace) {
    if (std::string w = where(r.layer, r.head, false); !w.empty()) return bad("replace pattern: " + w);
    if (r.kind != PatternReplacementKind::custom) continue;
    if (r.pattern.size() != std::size_t(T) * T)
      return bad("replace pattern: a custom pattern must be (T, T) = " + std::to_string(std::size_t(T) * T) +
                 " values for " + std::to_string(T) + " tokens, got " + std::to_string(r.pattern.size()));
    for (int t = 0; t < T; t++) {
      double sum = 0;
      for (int t2 = 0; t2 < T; t2++) {
        float p = r.pattern[std::size_t(t) * T + t2];
        if (!(p >= 0.0f && p <= 1.0f))
          return bad("replace pattern: value at query " + std::to_string(t) + ", key " + std::to_string(t2) +
                     " is not in [0, 1]");
        if (t2 > t && p != 0.0f)
          return bad("replace pattern: query " + std::to_string(t) + " attends to future key " + std::to_string(t2) +
                     " (the pattern must be zero above the diagonal)");
        sum += p;
      }
      if (std::fabs(sum - 1.0) > 1e-3)
        return bad("replace pattern: row " + std::to_string(t) + " sums to " + std::to_string(sum) + ", not 1");
    }
  }
  for (const KeyBlock& b : iv.block) {
    if (std::string w = where(b.layer, b.head, true); !w.empty()) return bad("block key: " + w);
    if (b.key < 0 || b.key >= T)
      return bad("block key: key " + std::to_string(b.key) + " is outside the input (tokens 0.." +
                 std::to_string(T - 1) + ")");
  }
  return {};
}

// The norm's scale of each row (TransformerLens's hook_scale): sqrt(var + eps) for LayerNorm,
// sqrt(mean(x^2) + eps) for RMSNorm.                                       in (T, C) -> out (T)
void norm_scale(float* out, const float* in, int T, int C, float eps, bool rms) {
  for (int t = 0; t < T; t++) {
    const float* row = in + std::size_t(t) * C;
    double mean = 0;
    if (!rms) {
      for (int i = 0; i < C; i++) mean += row[i];
      mean /= C;
    }
    double ss = 0;
    for (int i = 0; i < C; i++) ss += (row[i] - mean) * (row[i] - mean);
    out[t] = static_cast<float>(std::sqrt(ss / C + eps));
  }
}

HookView view2(float* data, int rows, int cols, std::size_t row_stride, bool writable) {
  HookView v;
  v.data = data, v.rank = 2, v.shape = {rows, cols, 1}, v.stride = {row_stride, 1, 0}, v.writable = writable;
  return v;
}
HookView view3(float* data, int a, int b, int c, std::size_t sa, std::size_t sb, bool writable) {
  HookView v;
  v.data = data, v.rank = 3, v.shape = {a, b, c}, v.stride = {sa, sb, 1}, v.writable = writable;
  return v;
}

// Carves the workspace into named buffers. (GPT-2: QKV = 3C, D = C, FC = F = 4C.)
struct Buffers {
  float* ln;        // (T, C)     ln_1 / ln_2 / ln_f output
  float* qkv;       // (T, QKV)   the projections: q (NH heads), k and v (NKV heads each)
  float* heads;     // (T, 3D)    q, k, v with one k and v per query head (GQA/MQA), or qkv itself
  float* z;         // (T, D)
  float* proj;      // (T, C)     attention or MLP output before the residual add
  float* proj2;     // (T, C)     the MLP output of a parallel block
  float* fc;        // (T, FC)
  float* fc_gelu;   // (T, F)
  float* scratch;   // attention_causal_scratch_size(T)
  float* replaced;  // (NH, T, T) replaced patterns of the current layer, when any
};

}  // namespace

bool rope_is_local(const ModelConfig& c, int layer) { return c.rope_local_theta > 0.0f && c.window_of(layer) > 0; }

LayerRope rope_of_layer(const ModelConfig& c, int layer) {
  LayerRope r;
  r.local = rope_is_local(c, layer);
  const int rd = c.rotary_size();
  if (r.local) {
    r.inv_freq = rope_frequencies(rd, c.rope_local_theta);
    return r;
  }
  r.inv_freq = rope_frequencies(rd, c.rope_theta);
  if (c.rope_llama3_factor > 0.0f)
    rope_llama3_frequencies(r.inv_freq, c.rope_llama3_factor, c.rope_llama3_low_freq_factor,
                            c.rope_llama3_high_freq_factor, c.rope_llama3_original_max_positions);
  for (std::size_t i = 0; i < c.rope_freq_factors.size() && i < r.inv_freq.size(); i++)
    r.inv_freq[i] /= c.rope_freq_factors[i];  // GGUF's rope_freqs.weight
  r.scale = c.rope_linear_factor;
  return r;
}

namespace {

// The forward over one or more sequences stacked as rows: `outs[s]` receives sequence s's
// logits, loss and record, and each hook call sees one sequence's rows (HookView::sequence).
// With several, the caller (forward_batch) has refused interventions, which are validated
// against all R rows as one sequence's.
Status forward_rows(const Parameters& params, std::span<const std::span<const int>> seqs, const ForwardOptions& options,
                    ForwardOutput* const* outs, Workspace& ws) {
  const ModelConfig& c = params.config;
  const ParameterTensors& w = params.t;
  const int C = c.n_embd, NH = c.n_head, HS = c.head_size(), L = c.n_layer, V = c.vocab_size;
  const int NKV = c.kv_heads(), D = c.q_width(), QKV = c.qkv_width(), F = c.mlp_width(), FC = c.fc_width();
  const int S = static_cast<int>(seqs.size());
  const bool one = S == 1;

  // 0. validate the input: user text reaches here
  std::vector<int> Ts(S), off(S + 1, 0);  // each sequence's length and first row
  for (int s = 0; s < S; s++) {
    std::span<const int> ids = seqs[std::size_t(s)];
    const std::string who = one ? std::string("the input") : "sequence " + std::to_string(s);
    if (ids.empty()) return make_error(ErrorCode::invalid_argument, who + " has no tokens");
    if (ids.size() > std::size_t(c.n_ctx))
      return make_error(ErrorCode::too_long, who + " has " + std::to_string(ids.size()) +
                                                 " tokens but the model reads at most n_ctx = " + std::to_string(c.n_ctx) +
                                                 "; shorten it or truncate to the last " + std::to_string(c.n_ctx) +
                                                 " tokens");
    for (std::size_t i = 0; i < ids.size(); i++)
      if (ids[i] < 0 || ids[i] >= V)
        return make_error(ErrorCode::invalid_argument, (one ? std::string() : who + ": ") + "token " + std::to_string(i) +
                                                           " has id " + std::to_string(ids[i]) +
                                                           ", outside the vocabulary [0, " + std::to_string(V) + ")");
    Ts[std::size_t(s)] = static_cast<int>(ids.size());
  }
  // start_rows: sequence s runs only its rows first[s].. (Ts then counts those), the others'
  // q, k and v from prefix_qkv[s]; Ns keeps every sequence's whole length
  const std::vector<int> Ns = Ts;
  std::vector<int> first(S, 0);
  const bool prefix = !options.start_rows.empty();
  if (prefix) {
    if (options.start_rows.size() != std::size_t(S) || options.prefix_qkv.size() != std::size_t(S))
      return make_error(ErrorCode::invalid_argument, "start_rows and prefix_qkv need one entry per sequence (" +
                                                         std::to_string(S) + "), got " +
                                                         std::to_string(options.start_rows.size()) + " and " +
                                                         std::to_string(options.prefix_qkv.size()));
    const RecordRequest& r = options.record;
    if (r.pattern || r.scores || r.qkv || r.z || r.head_out || r.residual || options.loss || !options.interventions.empty())
      return make_error(ErrorCode::invalid_argument, "start_rows runs only the last rows: a record, the loss and "
                                                     "interventions read every row (run without start_rows)");
    for (int s = 0; s < S; s++) {
      const int f = options.start_rows[std::size_t(s)];
      if (f < 0 || f >= Ts[std::size_t(s)])
        return make_error(ErrorCode::invalid_argument, "start row " + std::to_string(f) + " of sequence " +
                                                           std::to_string(s) + " is outside its rows 0.." +
                                                           std::to_string(Ts[std::size_t(s)] - 1));
      if (f > 0 && !options.prefix_qkv[std::size_t(s)])
        return make_error(ErrorCode::invalid_argument, "start row " + std::to_string(f) + " of sequence " +
                                                           std::to_string(s) + " needs the q, k and v of the rows before it (prefix_qkv)");
      first[std::size_t(s)] = f;
      Ts[std::size_t(s)] -= f;
    }
  }
  if (options.last_row_only) {
    const RecordRequest& r = options.record;
    if (r.pattern || r.scores || r.qkv || r.z || r.head_out || r.residual || options.loss ||
        !options.interventions.empty() || (options.stop_at_layer >= 0 && options.stop_at_layer < L))
      return make_error(ErrorCode::invalid_argument, "last_row_only runs the last block on the last row only: a record, "
                                                     "the loss, interventions and stop_at_layer read other rows (run "
                                                     "without last_row_only)");
  }
  for (int s = 0; s < S; s++) off[std::size_t(s) + 1] = off[std::size_t(s)] + Ts[std::size_t(s)];
  int R = off[std::size_t(S)];  // rows: every sequence's tokens, one after another (last_row_only: S at the end)
  const int Tmax = *std::max_element(Ns.begin(), Ns.end());  // the attention's rows
  if (Status s = validate_interventions(options.interventions, c, R); !s) return s;
  const int L0 = options.start_layer;
  if (L0 < 0 || L0 > L)
    return make_error(ErrorCode::invalid_argument, "start_layer " + std::to_string(L0) + " is outside 0.." + std::to_string(L));
  // each sequence's resid_pre at L0, (T_s, C): start_resids[s], or the one start_resid
  std::vector<const float*> starts(L0 > 0 ? S : 0, nullptr);
  if (L0 > 0) {
    if (!options.start_resids.empty() && options.start_resids.size() != std::size_t(S))
      return make_error(ErrorCode::invalid_argument, "start_layer " + std::to_string(L0) + ": start_resids has " +
                                                         std::to_string(options.start_resids.size()) +
                                                         " residuals for " + std::to_string(S) + " sequences");
    for (int s = 0; s < S; s++)
      starts[std::size_t(s)] = options.start_resids.empty() ? (one ? options.start_resid : nullptr)
                                                            : options.start_resids[std::size_t(s)];
    if (std::find(starts.begin(), starts.end(), nullptr) != starts.end())
      return make_error(ErrorCode::invalid_argument, "start_layer " + std::to_string(L0) + " needs that block's resid_pre" +
                                                         (one ? std::string() : " for each sequence (start_resids)"));
  }
  // the blocks that run end at Ls (stop_at_layer; the record holds blocks [0, Ls))
  const int Ls = options.stop_at_layer < 0 ? L : options.stop_at_layer;
  if (Ls < L0 || Ls > L)
    return make_error(ErrorCode::invalid_argument, "stop_at_layer " + std::to_string(options.stop_at_layer) +
                                                       " is outside " + std::to_string(L0) + ".." + std::to_string(L));
  if (Ls < L && (options.logits || options.loss))
    return make_error(ErrorCode::invalid_argument, "stop_at_layer " + std::to_string(Ls) +
                                                       " leaves the last blocks out: the logits and the loss need them "
                                                       "(ask for neither, or stop at -1)");
  for (int tok : options.logit_tokens)
    if (tok < 0 || tok >= V)
      return make_error(ErrorCode::invalid_argument, "logit token " + std::to_string(tok) + " is outside the vocabulary [0, " +
                                                         std::to_string(V) + ")");
  if (options.loss && !options.logit_tokens.empty())
    return make_error(ErrorCode::invalid_argument, "the loss needs every logit: logit_tokens must be empty");
  // The hooks: `hook(p, l, view)` calls the caller's function where it asked, once per
  // sequence for a view whose first axis is the R rows (each call sees its own rows and is told
  // which sequence they are); `hook_one` for a view of one sequence (scores, pattern, result).
  const ForwardHooks* H = options.hooks && options.hooks->at && options.hooks->any() ? options.hooks : nullptr;
  auto wants = [&](HookPoint p, int l) { return H && H->wants(p, l); };
  auto hook = [&](HookPoint p, int l, const HookView& v) {
    if (!wants(p, l)) return;
    if (one) {
      HookView rows = v;
      rows.first_row = first[0];
      H->at(p, l, rows);
      return;
    }
    for (int s = 0; s < S; s++) {
      HookView rows = v;
      rows.data += std::size_t(off[std::size_t(s)]) * v.stride[0];
      rows.shape[0] = Ts[std::size_t(s)];
      rows.sequence = s;
      rows.first_row = first[std::size_t(s)];
      H->at(p, l, rows);
    }
  };
  auto hook_one = [&](HookPoint p, int l, HookView v, int s) {
    v.sequence = s;
    H->at(p, l, v);
  };
  std::vector<float> hook_scale(H ? std::size_t(R) : 0);  // a norm's scale, (T)
  auto hook_norm_scale = [&](HookPoint p, int l, const float* in) {
    if (!wants(p, l)) return;
    norm_scale(hook_scale.data(), in, R, C, c.layer_norm_eps, c.norm == ModelConfig::Norm::rmsnorm);
    hook(p, l, view2(hook_scale.data(), R, 1, 1, false));
  };

  // Buffers, grown to the largest R seen and kept.
  std::size_t RC = std::size_t(R) * C;
  const bool any_replace = !options.interventions.replace.empty();
  std::size_t Rz = std::size_t(R);
  // k and v are copied out per query head when heads share them or HS != C/NH
  const bool expand = NKV != NH;
  const std::size_t need = RC * 2 + Rz * QKV + (expand ? Rz * 3 * D : 0) + Rz * D + (c.parallel_residual ? RC : 0) +
                           (c.mlp ? Rz * (FC + F) : 0) +
                           std::size_t(attention_causal_scratch_size(Tmax)) +
                           (any_replace ? std::size_t(NH) * R * R : 0) + RC;  // + residual x
  if (ws.buffer.size() < need) ws.buffer.resize(need);
  float* x = ws.buffer.data();  // (R, C) the residual stream
  Buffers b{};
  float* p = x + RC;
  b.ln = p, p += RC;
  b.qkv = p, p += Rz * QKV;
  b.heads = b.qkv;
  if (expand) b.heads = p, p += Rz * 3 * D;
  b.z = p, p += Rz * D;
  b.proj = p, p += RC;
  if (c.parallel_residual) b.proj2 = p, p += RC;
  if (c.mlp) b.fc = p, p += Rz * FC, b.fc_gelu = p, p += Rz * F;
  b.scratch = p, p += attention_causal_scratch_size(Tmax);
  if (any_replace) b.replaced = p, p += std::size_t(NH) * R * R;

  // Each sequence's record, (L, NH, T*(T+1)/2) etc. for its own T.
  const RecordRequest& rq = options.record;
  auto size_or_clear = [](std::vector<float>& v, bool want, std::size_t n) {
    if (want) v.resize(n);
    else v.clear();
  };
  for (int s = 0; s < S; s++) {
    ActivationRecord& rec = outs[s]->record;
    const int T = Ts[std::size_t(s)];
    const std::size_t Tz = std::size_t(T), TC = Tz * C, packed = ActivationRecord::packed_size(T);
    rec.L = Ls, rec.NH = NH, rec.T = T, rec.C = C;
    size_or_clear(rec.pattern, rq.pattern, std::size_t(Ls) * NH * packed);
    size_or_clear(rec.scores, rq.scores, std::size_t(Ls) * NH * packed);
    rec.HS = HS, rec.NKV = NKV;
    rec.window.resize(Ls);
    for (int l = 0; l < Ls; l++) rec.window[l] = c.window_of(l);
    size_or_clear(rec.qkv, rq.qkv, std::size_t(Ls) * 3 * Tz * D);
    size_or_clear(rec.z, rq.z, std::size_t(Ls) * Tz * D);
    size_or_clear(rec.head_out, rq.head_out, std::size_t(Ls) * NH * TC);
    size_or_clear(rec.residual, rq.residual, std::size_t(Ls + 1) * TC);
  }
  // Copies `per_row` floats of each of sequence s's rows of `from` (rows of R) to `to` + at.
  auto copy_rows = [&](const float* from, std::size_t per_row, int s, std::vector<float>& to, std::size_t at) {
    const float* first = from + std::size_t(off[std::size_t(s)]) * per_row;
    std::copy(first, first + std::size_t(Ts[std::size_t(s)]) * per_row, to.begin() + at);
  };

  std::vector<const float*> replace_ptrs(NH, nullptr);
  std::vector<float> hook_packed, hook_full, hook_result;  // the hooks' views of scores, pattern, result
  std::vector<float> prefix_heads, prefix_z;               // start_rows: one sequence's whole (T, 3D) and (T, D)
  std::vector<std::vector<unsigned char>> block_masks;
  std::vector<const unsigned char*> block_ptrs(NH, nullptr);

  // The linear layers, over all R rows at once (each matrix read once for the batch): over
  // the packed matrices of a loaded model, in their own precision (model/ops/matmul_packed.h),
  // else over float32 rows through sgemm (the trainer's models).
  const PackedWeights* pk = params.packed.get();
  auto linear = [&](float* o, const float* in, const float* weight, const PackedMatrix* packed_weight,
                    const float* bias, int in_dim, int out_dim) {
    if (pk) matmul_forward_packed(o, in, *packed_weight, bias, R);
    else matmul_forward(o, in, weight, bias, R, in_dim, out_dim);
  };
  auto layer_of = [&](std::vector<PackedMatrix> PackedWeights::*m, int l) -> const PackedMatrix* {
    return pk ? &(pk->*m)[std::size_t(l)] : nullptr;
  };
  // layer l's rows of a float32 matrix (null when the model is packed)
  auto rows_at = [](const float* base, std::size_t offset) { return base ? base + offset : nullptr; };

  // The block's norm: LayerNorm (weight and bias) or RMSNorm (weight only).
  const bool rms = c.norm == ModelConfig::Norm::rmsnorm;
  auto norm = [&](float* o, const float* in, const float* weight, const float* bias) {
    if (rms) rmsnorm_forward(o, in, weight, R, C, c.layer_norm_eps, c.norm_plus_one);
    else layernorm_forward(o, nullptr, nullptr, in, weight, bias, R, C, c.layer_norm_eps);
  };
  auto bias_or_null = [](const float* base, bool has, std::size_t offset) { return has ? base + offset : nullptr; };
  const bool has_norm_bias = !rms;

  // 0. x = wte[ids] + wpe[0..T)   (rotary and no positions: x = wte[ids]); the positions
  //    start again at 0 with each sequence (or, from start_layer, x = that block's resid_pre)
  auto embed_rows = [&](int s) {  // x[rows of s] = wte[ids of s]
    std::span<const int> ids = seqs[std::size_t(s)].subspan(std::size_t(first[std::size_t(s)]));
    float* xs = x + std::size_t(off[std::size_t(s)]) * C;
    for (int t = 0; t < Ts[std::size_t(s)]; t++) {
      if (pk) packed_read_rows(pk->wte, ids[t], 1, xs + std::size_t(t) * C);
      else std::copy(w.wte + std::size_t(ids[t]) * C, w.wte + std::size_t(ids[t] + 1) * C, xs + std::size_t(t) * C);
    }
  };
  if (L0 > 0) {
    for (int s = 0; s < S; s++)
      std::copy(starts[std::size_t(s)] + std::size_t(first[std::size_t(s)]) * C,
                starts[std::size_t(s)] + std::size_t(Ns[std::size_t(s)]) * C, x + std::size_t(off[std::size_t(s)]) * C);
  } else if (wants(HookPoint::embed, -1) || wants(HookPoint::pos_embed, -1)) {
    // step by step, so that hook_embed sees wte[ids] (times sqrt(C) for Gemma) and hook_pos_embed wpe
    for (int s = 0; s < S; s++) embed_rows(s);
    if (c.embed_scale) {
      const float sc = static_cast<float>(std::sqrt(double(C)));
      for (std::size_t i = 0; i < RC; i++) x[i] *= sc;
    }
    hook(HookPoint::embed, -1, view2(x, R, C, C, true));
    if (c.positions == ModelConfig::Positions::learned) {
      for (int s = 0; s < S; s++)
        std::copy(w.wpe + std::size_t(first[std::size_t(s)]) * C, w.wpe + std::size_t(Ns[std::size_t(s)]) * C,
                  b.proj + std::size_t(off[std::size_t(s)]) * C);
      hook(HookPoint::pos_embed, -1, view2(b.proj, R, C, C, true));
      residual_forward(x, x, b.proj, static_cast<int>(RC));
    }
  } else {
    for (int s = 0; s < S; s++) {
      float* xs = x + std::size_t(off[std::size_t(s)]) * C;
      const int T = Ts[std::size_t(s)], f = first[std::size_t(s)];
      if (pk) {
        embed_rows(s);
        if (c.positions == ModelConfig::Positions::learned) residual_forward(xs, xs, w.wpe + std::size_t(f) * C, T * C);
      } else if (c.positions == ModelConfig::Positions::learned) {
        embedding_forward(xs, seqs[std::size_t(s)].data() + f, w.wte, w.wpe + std::size_t(f) * C, 1, T, C);
      } else {
        embed_rows(s);
      }
    }
  }
  // 0b. Gemma: x = x * sqrt(C), the factor rounded to float32 first as Gemma's code does
  if (c.embed_scale && L0 == 0 && !wants(HookPoint::embed, -1) && !wants(HookPoint::pos_embed, -1)) {
    const float sc = static_cast<float>(std::sqrt(double(C)));
    for (std::size_t i = 0; i < RC; i++) x[i] *= sc;
  }
  // last_row_only: keeps each sequence's last row of x (R, C) and of `other` (R, width), moved
  // to row s, and makes the rows that run those S (first[s] = N_s - 1)
  bool kept_last_rows = false;
  auto keep_last_rows = [&](float* other, int width) {
    for (int s = 0; s < S; s++) {
      const std::size_t from = std::size_t(off[std::size_t(s)] + Ts[std::size_t(s)] - 1), to = std::size_t(s);
      if (from != to) {
        std::copy(x + from * C, x + (from + 1) * C, x + to * C);
        if (other) std::copy(other + from * width, other + (from + 1) * width, other + to * width);
      }
      first[std::size_t(s)] += Ts[std::size_t(s)] - 1;
      Ts[std::size_t(s)] = 1;
      off[std::size_t(s)] = s;
    }
    off[std::size_t(S)] = S;
    R = S, RC = std::size_t(R) * C, Rz = std::size_t(R);
    kept_last_rows = true;
  };
  // The rotary frequencies: the global layers' and Gemma 3's local ones (rope_of_layer).
  const int rd = c.rotary_size();
  LayerRope rope_global, rope_local;
  if (c.positions == ModelConfig::Positions::rotary) {
    for (int l = 0; l < L; l++) {
      LayerRope& r = rope_is_local(c, l) ? rope_local : rope_global;
      if (r.inv_freq.empty() && rd > 0) r = rope_of_layer(c, l);
    }
  }

  for (int l = L0; l < Ls; l++) {
    hook(HookPoint::resid_pre, l, view2(x, R, C, C, true));
    if (rq.residual)
      for (int s = 0; s < S; s++) copy_rows(x, C, s, outs[s]->record.residual, std::size_t(l) * Ts[std::size_t(s)] * C);

    // 1. qkv = ln_1(x) @ c_attn^T + b                                 (R, QKV)
    hook_norm_scale(HookPoint::ln1_scale, l, x);
    norm(b.ln, x, w.ln1w + l * C, bias_or_null(w.ln1b, has_norm_bias, std::size_t(l) * C));
    hook(HookPoint::ln1_normalized, l, view2(b.ln, R, C, C, true));
    linear(b.qkv, b.ln, rows_at(w.qkvw, std::size_t(l) * QKV * C), layer_of(&PackedWeights::qkvw, l),
           bias_or_null(w.qkvb, c.qkv_bias, std::size_t(l) * QKV), C, QKV);
    // 1a. q/k norm (Qwen 3, Gemma 3): RMSNorm over each head of q and of k     (HS) per head
    if (c.qk_norm) {
      for (int t = 0; t < R; t++) {
        float* row = b.qkv + std::size_t(t) * QKV;
        rmsnorm_forward(row, row, w.qnormw + std::size_t(l) * HS, NH, HS, c.layer_norm_eps, c.norm_plus_one);
        rmsnorm_forward(row + D, row + D, w.knormw + std::size_t(l) * HS, NKV, HS, c.layer_norm_eps, c.norm_plus_one);
      }
    }
    hook(HookPoint::q, l, view3(b.qkv, R, NH, HS, QKV, HS, true));
    hook(HookPoint::k, l, view3(b.qkv + D, R, NKV, HS, QKV, HS, true));
    hook(HookPoint::v, l, view3(b.qkv + D + std::size_t(NKV) * HS, R, NKV, HS, QKV, HS, true));
    // 1b. rotary: q's NH heads and k's NKV heads turn by their position in their own
    //     sequence (Gemma 3's local layers with their own base and no scaling)
    if (c.positions == ModelConfig::Positions::rotary) {
      const LayerRope& r = rope_is_local(c, l) ? rope_local : rope_global;
      for (int s = 0; s < S; s++) {
        float* qs = b.qkv + std::size_t(off[std::size_t(s)]) * QKV;
        const int T = Ts[std::size_t(s)];
        const int f = first[std::size_t(s)];
        rope_forward_frequencies(qs, T, NH, HS, QKV, rd, c.rotary_interleaved, r.inv_freq.data(), r.scale, f);
        rope_forward_frequencies(qs + D, T, NKV, HS, QKV, rd, c.rotary_interleaved, r.inv_freq.data(), r.scale, f);
      }
      hook(HookPoint::rot_q, l, view3(b.qkv, R, NH, HS, QKV, HS, true));
      hook(HookPoint::rot_k, l, view3(b.qkv + D, R, NKV, HS, QKV, HS, true));
    }
    // 1c. GQA/MQA: query head h reads KV head h / (NH / NKV); give it its own copy  (R, 3D)
    if (expand) {
      const int group = NH / NKV;
      for (int t = 0; t < R; t++) {
        const float* src = b.qkv + std::size_t(t) * QKV;
        float* dst = b.heads + std::size_t(t) * 3 * D;
        std::copy(src, src + D, dst);
        for (int h = 0; h < NH; h++) {
          const float* k = src + D + std::size_t(h / group) * HS;
          const float* v = src + D + std::size_t(NKV) * HS + std::size_t(h / group) * HS;
          std::copy(k, k + HS, dst + D + std::size_t(h) * HS);
          std::copy(v, v + HS, dst + 2 * D + std::size_t(h) * HS);
        }
      }
    }
    if (rq.qkv)
      for (int s = 0; s < S; s++)
        copy_rows(b.heads, std::size_t(3) * D, s, outs[s]->record.qkv, std::size_t(l) * 3 * Ts[std::size_t(s)] * D);

    // 2. z = attention(qkv), per sequence (its own causal mask over its own T), with this
    //    layer's interventions (one sequence only: forward_batch refuses them in a batch) and
    //    the hooks on each sequence's scores and pattern
    const bool hook_scores = wants(HookPoint::attn_scores, l), hook_pattern = wants(HookPoint::pattern, l);
    for (int s = 0; s < S; s++) {
      ActivationRecord& rec = outs[s]->record;
      const int T = Ns[std::size_t(s)], f = first[std::size_t(s)];
      const std::size_t packed = ActivationRecord::packed_size(T);
      float* zs = b.z + std::size_t(off[std::size_t(s)]) * D;                     // (T, D)
      const float* qkv_s = b.heads + std::size_t(off[std::size_t(s)]) * 3 * D;  // (T, 3D)
      if (f > 0) {  // start_rows: rows 0..f from the earlier run, f..T from this one; z of all T, rows f.. kept
        const std::size_t D3 = std::size_t(3) * D;
        prefix_heads.resize(std::size_t(T) * D3);
        prefix_z.resize(std::size_t(T) * D);
        const float* earlier = options.prefix_qkv[std::size_t(s)] + std::size_t(l) * T * D3;
        std::copy(earlier, earlier + std::size_t(f) * D3, prefix_heads.begin());
        std::copy(qkv_s, qkv_s + std::size_t(T - f) * D3, prefix_heads.begin() + std::ptrdiff_t(std::size_t(f) * D3));
        qkv_s = prefix_heads.data();
        zs = prefix_z.data();
      }
      AttentionHeadHooks hooks;
      bool layer_replaces = false, layer_blocks = false;
      std::fill(replace_ptrs.begin(), replace_ptrs.end(), nullptr);
      for (const PatternReplacement& r : options.interventions.replace) {
        if (r.layer != l) continue;
        float* dst = b.replaced + std::size_t(r.head) * T * T;
        if (r.kind == PatternReplacementKind::custom) {
          std::copy(r.pattern.begin(), r.pattern.end(), dst);
        } else {
          for (int t = 0; t < T; t++)
            for (int t2 = 0; t2 < T; t2++) dst[std::size_t(t) * T + t2] = t2 <= t ? 1.0f / (t + 1) : 0.0f;
        }
        replace_ptrs[r.head] = dst;
        layer_replaces = true;
      }
      block_masks.assign(NH, {});
      std::fill(block_ptrs.begin(), block_ptrs.end(), nullptr);
      for (const KeyBlock& kb : options.interventions.block) {
        if (kb.layer != l) continue;
        for (int h = 0; h < NH; h++) {
          if (kb.head != -1 && kb.head != h) continue;
          if (block_masks[h].empty()) block_masks[h].assign(T, 0);
          block_masks[h][kb.key] = 1;
          block_ptrs[h] = block_masks[h].data();
          layer_blocks = true;
        }
      }
      if (layer_replaces) hooks.replace_pattern = replace_ptrs.data();
      if (layer_blocks) hooks.block_key = block_ptrs.data();
      // the hooks on scores and pattern see them whole, (NH, T, T): the kernel hands its causal half
      if (hook_scores || hook_pattern) {
        hook_packed.resize(2 * std::size_t(NH) * packed);
        hook_full.resize(std::size_t(NH) * T * T);
      }
      hooks.window = c.window_of(l);      // sliding layers: keys further back than the window are masked
      hooks.softcap = c.attn_softcap;     // Gemma 2: scores = cap * tanh(scores / cap)
      float* scores_packed = rq.scores ? rec.scores.data() + std::size_t(l) * NH * packed
                                       : (hook_scores ? hook_packed.data() : nullptr);
      float* pattern_packed = rq.pattern ? rec.pattern.data() + std::size_t(l) * NH * packed
                                         : (hook_pattern ? hook_packed.data() + std::size_t(NH) * packed : nullptr);
      hooks.pattern_out = pattern_packed;
      hooks.scores_out = scores_packed;
      attention_forward_causal(zs, qkv_s, T, D, NH, c.attention_scale(l), hooks, b.scratch);
      if (hook_scores) {  // after the scale, the soft-cap and the mask: -inf where masked, as TransformerLens
        const int window = c.window_of(l);
        for (int h = 0; h < NH; h++)
          for (int t = 0; t < T; t++)
            for (int t2 = 0; t2 < T; t2++)
              hook_full[(std::size_t(h) * T + t) * T + t2] =
                  t2 > t || (window > 0 && t - t2 >= window)
                      ? -std::numeric_limits<float>::infinity()
                      : scores_packed[std::size_t(h) * packed + ActivationRecord::packed_offset(t) + t2];
        hook_one(HookPoint::attn_scores, l, view3(hook_full.data(), NH, T, T, std::size_t(T) * T, T, false), s);
      }
      if (hook_pattern) {
        auto expand = [&](int h, float* full) {
          for (int t = 0; t < T; t++)
            for (int t2 = 0; t2 < T; t2++)
              full[std::size_t(t) * T + t2] =
                  t2 > t ? 0.0f : pattern_packed[std::size_t(h) * packed + ActivationRecord::packed_offset(t) + t2];
        };
        for (int h = 0; h < NH; h++) expand(h, hook_full.data() + std::size_t(h) * T * T);
        hook_one(HookPoint::pattern, l, view3(hook_full.data(), NH, T, T, std::size_t(T) * T, T, true), s);
        // a head whose pattern the hook changed attends with the new one
        std::vector<float> made(std::size_t(T) * T);
        bool changed = false;
        for (int h = 0; h < NH; h++) {
          expand(h, made.data());
          const float* now = hook_full.data() + std::size_t(h) * T * T;
          if (!std::equal(made.begin(), made.end(), now)) replace_ptrs[h] = now, changed = true;
        }
        if (changed) {
          hooks.replace_pattern = replace_ptrs.data();
          hooks.scores_out = nullptr;
          attention_forward_causal(zs, qkv_s, T, D, NH, c.attention_scale(l), hooks, b.scratch);
        }
      }
      if (f > 0) std::copy(zs + std::size_t(f) * D, zs + std::size_t(T) * D, b.z + std::size_t(off[std::size_t(s)]) * D);
    }

    for (const HeadAblation& a : options.interventions.ablate) {
      if (a.layer != l) continue;
      for (int s = 0; s < S; s++) {
        const int T = Ts[std::size_t(s)];
        float* zh = b.z + std::size_t(off[std::size_t(s)]) * D + a.head * HS;  // (T, HS), row stride D
        std::vector<float> fill(HS, 0.0f);
        if (a.kind == Ablation::mean) {
          for (int t = 0; t < T; t++)
            for (int i = 0; i < HS; i++) fill[i] += zh[std::size_t(t) * D + i] / T;
        }
        for (int t = 0; t < T; t++) std::copy(fill.begin(), fill.end(), zh + std::size_t(t) * D);
      }
    }
    hook(HookPoint::z, l, view3(b.z, R, NH, HS, D, HS, true));
    if (rq.z)
      for (int s = 0; s < S; s++) copy_rows(b.z, D, s, outs[s]->record.z, std::size_t(l) * Ts[std::size_t(s)] * D);
    if (options.last_row_only && l == L - 1) keep_last_rows(b.z, D);  // the rest of the block: the last rows only
    const float* wo = rows_at(w.attprojw, std::size_t(l) * C * D);  // (C, D): head h reads columns h*HS..
    // each head's output z_h (T, HS) @ W_O[:, h*HS..]^T for sequence s's rows, (NH, T, C): for
    // the record and hook_result
    auto head_outputs = [&](float* dst, int s) {
      const int Tn = Ts[std::size_t(s)];
      const std::size_t TnC = std::size_t(Tn) * C;
      const float* zs = b.z + std::size_t(off[std::size_t(s)]) * D;
      // head h: z_h (Tn, HS) @ W_O[:, h*HS..]^T -> (Tn, C); the heads go over the pool as one job
      // (not one per head), on the caller alone when small (thread_pool_parts)
      auto head = [&](int h) {
        if (pk)  // head h's columns of each panel
          matmul_forward_packed_part(dst + std::size_t(h) * TnC, zs + h * HS, D, pk->attprojw[std::size_t(l)], h * HS, HS,
                                     Tn);
        else
          blas_sgemm(false, true, Tn, C, HS, 1.0f, zs + h * HS, D, wo + h * HS, D, 0.0f, dst + std::size_t(h) * TnC, C);
      };
      if (thread_pool_parts(std::size_t(Tn) * C * D, NH) == 1)
        for (int h = 0; h < NH; h++) head(h);
      else
        thread_pool_run(NH, head);
    };
    if (rq.head_out)
      for (int s = 0; s < S; s++)
        head_outputs(outs[s]->record.head_out.data() + std::size_t(l) * NH * Ts[std::size_t(s)] * C, s);
    if (wants(HookPoint::result, l)) {
      for (int s = 0; s < S; s++) {
        const int T = Ts[std::size_t(s)];
        const std::size_t TC = std::size_t(T) * C;
        float* result = rq.head_out ? outs[s]->record.head_out.data() + std::size_t(l) * NH * TC : nullptr;
        if (!result) {
          hook_result.resize(std::size_t(NH) * TC);
          head_outputs(result = hook_result.data(), s);
        }
        HookView rv = view3(result, T, NH, C, C, TC, false);  // (T, NH, C) over (NH, T, C)
        rv.first_row = first[std::size_t(s)];
        hook_one(HookPoint::result, l, rv, s);
      }
    }

    // 3. attn = z @ c_proj^T + b;  sequential: x = x + attn
    linear(b.proj, b.z, wo, layer_of(&PackedWeights::attprojw, l),
           bias_or_null(w.attprojb, c.attn_out_bias, std::size_t(l) * C), D, C);
    // 3b. Gemma: attn = norm(attn) (post_attention_layernorm) before the residual add
    if (c.sandwich_norm) {
      hook_norm_scale(HookPoint::ln1_post_scale, l, b.proj);
      norm(b.proj, b.proj, w.postattnw + std::size_t(l) * C, nullptr);
      hook(HookPoint::ln1_post_normalized, l, view2(b.proj, R, C, C, true));
    }
    hook(HookPoint::attn_out, l, view2(b.proj, R, C, C, true));
    if (!c.parallel_residual) {
      residual_forward(x, x, b.proj, static_cast<int>(RC));
      if (c.mlp) hook(HookPoint::resid_mid, l, view2(x, R, C, C, true));
    }

    // 4. mlp = c_proj(act(c_fc(ln_2(x))));  x = x + mlp, or x = x + attn + mlp when parallel
    //    (skipped when mlp = false). act: GELU (tanh or erf), or SwiGLU over [gate; up].
    if (c.mlp) {
      float* mlp_out = c.parallel_residual ? b.proj2 : b.proj;
      hook_norm_scale(HookPoint::ln2_scale, l, x);
      norm(b.ln, x, w.ln2w + l * C, bias_or_null(w.ln2b, has_norm_bias, std::size_t(l) * C));
      hook(HookPoint::ln2_normalized, l, view2(b.ln, R, C, C, true));
      linear(b.fc, b.ln, rows_at(w.fcw, std::size_t(l) * FC * C), layer_of(&PackedWeights::fcw, l),
             bias_or_null(w.fcb, c.mlp_bias, std::size_t(l) * FC), C, FC);
      // gated: each row holds [gate; up]; TransformerLens's hook_pre is the gate, hook_pre_linear the up
      hook(HookPoint::mlp_pre, l, view2(b.fc, R, F, FC, true));
      if (c.gated()) hook(HookPoint::mlp_pre_linear, l, view2(b.fc + F, R, F, FC, true));
      // the activation's rows split over the pool (the same values as one call)
      thread_pool_for_parts(Rz, [&](std::size_t r0, std::size_t r1) {
        float* out = b.fc_gelu + r0 * F;
        const float* in = b.fc + r0 * FC;
        const int n = static_cast<int>(r1 - r0);
        switch (c.mlp_kind) {
          case ModelConfig::Mlp::gelu_tanh: gelu_forward(out, in, n * F); break;
          case ModelConfig::Mlp::gelu_erf: gelu_erf_forward(out, in, n * F); break;
          case ModelConfig::Mlp::swiglu: swiglu_forward(out, in, n, F); break;
          case ModelConfig::Mlp::geglu: geglu_forward(out, in, n, F); break;
        }
      }, std::size_t(F));
      hook(HookPoint::mlp_post, l, view2(b.fc_gelu, R, F, F, true));
      linear(mlp_out, b.fc_gelu, rows_at(w.fcprojw, std::size_t(l) * C * F), layer_of(&PackedWeights::fcprojw, l),
             bias_or_null(w.fcprojb, c.mlp_bias, std::size_t(l) * C),
             F, C);
      // 4b. Gemma: mlp = norm(mlp) (post_feedforward_layernorm) before the residual add
      if (c.sandwich_norm) {
        hook_norm_scale(HookPoint::ln2_post_scale, l, mlp_out);
        norm(mlp_out, mlp_out, w.postmlpw + std::size_t(l) * C, nullptr);
        hook(HookPoint::ln2_post_normalized, l, view2(mlp_out, R, C, C, true));
      }
      hook(HookPoint::mlp_out, l, view2(mlp_out, R, C, C, true));
      residual_forward(x, x, mlp_out, static_cast<int>(RC));
    }
    if (c.parallel_residual) residual_forward(x, x, b.proj, static_cast<int>(RC));
    hook(HookPoint::resid_post, l, view2(x, R, C, C, true));
  }
  if (rq.residual)
    for (int s = 0; s < S; s++) copy_rows(x, C, s, outs[s]->record.residual, std::size_t(Ls) * Ts[std::size_t(s)] * C);

  // 5. logits = ln_f(x) @ unembedding^T, over all rows at once, then each sequence's own
  if (options.last_row_only && !kept_last_rows) keep_last_rows(nullptr, 0);  // start_layer = L: ln_f alone
  for (int s = 0; s < S; s++) {
    outs[s]->T = Ts[std::size_t(s)];
    outs[s]->V = V;
    outs[s]->loss = std::numeric_limits<float>::quiet_NaN();
  }
  if (!options.logits && !options.loss) {
    for (int s = 0; s < S; s++) outs[s]->logits.clear();
    return {};
  }
  hook_norm_scale(HookPoint::ln_final_scale, -1, x);
  norm(b.ln, x, w.lnfw, bias_or_null(w.lnfb, has_norm_bias, 0));
  hook(HookPoint::ln_final_normalized, -1, view2(b.ln, R, C, C, true));
  // 5b. Gemma 2: logits = cap * tanh(logits / cap)
  auto softcap = [&](std::vector<float>& logits) {
    if (c.final_softcap <= 0.0f) return;
    const float cap = c.final_softcap, inv = 1.0f / c.final_softcap;
    for (float& v : logits) v = cap * std::tanh(v * inv);
  };
  if (!options.logit_tokens.empty()) {
    // only the asked columns: logits[t, j] = ln_f(x)_t . unembedding[token j]   (R, n), then
    // each sequence's rows (one sequence: straight into its logits)
    const int n = static_cast<int>(options.logit_tokens.size());
    std::vector<float> all_logits;
    std::vector<float>& logits = one ? outs[0]->logits : all_logits;
    logits.assign(std::size_t(R) * n, 0.0f);
    std::vector<float> row(C);
    for (int j = 0; j < n; j++) {
      parameters_read_rows(params, parameters_unembedding_tensor(c), 0, options.logit_tokens[std::size_t(j)], 1, row.data());
      for (int t = 0; t < R; t++) {
        const float* in = b.ln + std::size_t(t) * C;
        float sum = 0.0f;
        for (int i = 0; i < C; i++) sum += in[i] * row[std::size_t(i)];
        logits[std::size_t(t) * n + j] = sum;
      }
    }
    softcap(logits);
    if (!one)
      for (int s = 0; s < S; s++) {
        const float* first = all_logits.data() + std::size_t(off[std::size_t(s)]) * n;
        outs[s]->logits.assign(first, first + std::size_t(Ts[std::size_t(s)]) * n);
      }
  } else {
    // Each sequence's (T, V) straight into its own logits: one (R, V) block would be written
    // and copied once more (257 MB for forty 32-token texts of GPT-2). The packed unembedding is
    // one grouped product (matmul_forward_packed_groups): its panels come from memory once for
    // the batch, not once per sequence (Llama 3's is 525 MB in bf16).
    std::vector<PackedGroup> groups;
    for (int s = 0; s < S; s++) {
      std::vector<float>& logits = outs[s]->logits;
      const int T = Ts[std::size_t(s)];
      const float* in = b.ln + std::size_t(off[std::size_t(s)]) * C;
      logits.resize(std::size_t(T) * V);
      if (pk) groups.push_back({logits.data(), V, in, C, T});
      else matmul_forward(logits.data(), in, parameters_unembedding(w, c), nullptr, T, C, V);
    }
    if (pk) matmul_forward_packed_groups(groups, pk->unembedding(c.tied));
    for (int s = 0; s < S; s++) softcap(outs[s]->logits);
  }
  for (int s = 0; s < S; s++) {
    ForwardOutput& out = *outs[s];
    if (options.loss && out.T >= 2) out.loss = static_cast<float>(mean_next_token_loss(out.logits, seqs[std::size_t(s)], V));
    if (!options.logits) out.logits.clear();
  }
  return {};
}

}  // namespace

std::size_t forward_bytes(const ModelConfig& c, int T, const ForwardOptions& options) {
  const std::size_t Tz = std::size_t(std::max(T, 0)), NH = std::size_t(c.n_head);
  const std::size_t L = std::size_t(options.stop_at_layer >= 0 && options.stop_at_layer < c.n_layer ? options.stop_at_layer
                                                                                                     : c.n_layer);
  const std::size_t C = std::size_t(c.n_embd), D = std::size_t(c.q_width()), packed = ActivationRecord::packed_size(T);
  const RecordRequest& rq = options.record;
  std::size_t floats = 0;
  if (rq.pattern) floats += L * NH * packed;
  if (rq.scores) floats += L * NH * packed;
  if (rq.qkv) floats += L * 3 * Tz * D;
  if (rq.z) floats += L * Tz * D;
  if (rq.head_out) floats += L * NH * Tz * C;
  if (rq.residual) floats += (L + 1) * Tz * C;
  if (options.logits || options.loss)
    floats += Tz * (options.logit_tokens.empty() ? std::size_t(c.vocab_size) : options.logit_tokens.size());
  // the workspace's rows: x, ln, qkv, heads, z, proj (and proj2), the MLP's fc and its activation
  floats += Tz * (4 * C + std::size_t(c.qkv_width()) + 4 * D + std::size_t(c.fc_width() + c.mlp_width()));
  return floats * sizeof(float);
}

Status forward(const Parameters& params, std::span<const int> ids, const ForwardOptions& options,
               ForwardOutput& out, Workspace& ws) {
  ForwardOutput* outs[1] = {&out};
  return forward_rows(params, std::span<const std::span<const int>>(&ids, 1), options, outs, ws);
}

Status forward_batch(const Parameters& params, std::span<const std::span<const int>> sequences,
                     const ForwardOptions& options, std::vector<ForwardOutput>& outs, Workspace& ws) {
  if (sequences.empty()) return make_error(ErrorCode::invalid_argument, "the batch has no sequences");
  if (sequences.size() > 1) {
    auto refused = [](const std::string& what) {
      return make_error(ErrorCode::invalid_argument,
                        what + " cannot run in a batch of several sequences; run each sequence with forward()");
    };
    if (!options.interventions.empty()) return refused("interventions");
  }
  outs.resize(sequences.size());
  std::vector<ForwardOutput*> ptrs(outs.size());
  for (std::size_t i = 0; i < outs.size(); i++) ptrs[i] = &outs[i];
  return forward_rows(params, sequences, options, ptrs.data(), ws);
}

}  // namespace headlab::model
