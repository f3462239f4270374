// model/forward.h — the inference forward of a GPT-2-family model, with an activation
// record of every head (like TransformerLens's cache) and interventions on heads.
//
//   Workspace ws;                                  // reused across calls: no re-allocation
//   ForwardOptions opt;
//   opt.record.pattern = true;                     // every head's pattern
//   opt.interventions.ablate.push_back({/*layer=*/1, /*head=*/4, Ablation::zero});
//   ForwardOutput out;
//   Status s = forward(params, ids, opt, out, ws);
//   if (!s) return s;
//   float p = out.record.pattern_at(/*layer=*/0, /*head=*/3, /*query=*/5, /*key=*/2);
//
// The steps, per layer l (pre-LayerNorm GPT-2; nanoGPT's Block.forward), for the one
// configured block of every family (model/config.h; GPT-2: QKV = 3C, D = C):
//   0. x = wte[ids] + wpe[0..T)      (rotary or no positions: x = wte[ids])   (T, C)
//      0b. Gemma: x = x * sqrt(C)
//   1. qkv = ln_1(x) @ c_attn^T + b  (ln: LayerNorm or RMSNorm, Gemma's with 1 + w)  (T, QKV)
//      1a. q/k norm (Qwen 3, Gemma 3): RMSNorm over each head of q and k
//      1b. rotary on q and k (NeoX halves or GPT-J pairs, all or part of HS; linear or
//          llama3 scaling; Gemma 3's local layers their own base)
//      1c. GQA/MQA: query head h reads KV head h / (NH / NKV)               (T, 3D)
//   2. z = attention(qkv), per query head, causal half only                  (T, D)
//      scores = q.k * attention_scale(l), Gemma 2 soft-capped; masked: the future and, on a
//      sliding layer, keys t - t2 >= sliding_window (their pattern is 0 in the record)
//   3. x = x + z @ c_proj^T + b      (Gemma: x + norm(z @ c_proj^T))
//   4. x = x + c_proj(act(c_fc(ln_2(x))))  act: GELU tanh/erf, SwiGLU or GeGLU (skipped when mlp = false)
//      Gemma: x + norm(mlp(...)); parallel_residual (GPT-NeoX): x = x + attn(ln_1(x)) + mlp(ln_2(x))
//   5. logits = ln_f(x) @ unembedding^T                                      (T, V)
//      5b. Gemma 2: logits = cap * tanh(logits / cap)
// Asking for no record costs nothing beyond the logits.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "model/hooks.h"       // TransformerLens's hook points: read or change an activation
#include "model/next_token.h"  // top_k and the next-token losses of the logits
#include "model/parameters.h"
#include "util/result.h"

namespace headlab::model {

// What the record keeps. Each is empty unless asked for.
struct RecordRequest {
  bool pattern = false;   // softmax(masked scores), causal half
  bool scores = false;    // q.k * attention_scale(l) (q.k/sqrt(HS) for GPT-2; Gemma 2's after soft-capping) before
                          // the mask, causal half (the masked half is never computed, so it cannot be recorded;
                          // keys outside a sliding window are recorded, their pattern is 0)
  bool qkv = false;       // q, k, v of every layer
  bool z = false;         // each head's output before W_O, heads side by side
  bool head_out = false;  // each head's output through its slice of W_O (no bias)
  bool residual = false;  // the residual stream entering each layer, and the final one
};

// The activation record of one forward. Patterns and scores store only the causal half
// (row t holds keys 0..t, packed at offset t*(t+1)/2) in float32: for GPT-2 small at
// T = 1024 the patterns take L*NH*T*(T+1)/2*4 bytes = 302 MB. See src/model/README.md.
// D = NH * HS (= C for GPT-2). q and k are recorded after the rotary; with GQA/MQA each
// query head has its own copy of the k and v of the KV head it reads (kv_head_of).
struct ActivationRecord {
  int L = 0, NH = 0, T = 0, C = 0;
  int HS = 0, NKV = 0;          // head size; KV heads (NKV = NH without GQA)
  std::vector<float> pattern;   // (L, NH, T*(T+1)/2)
  std::vector<float> scores;    // (L, NH, T*(T+1)/2)
  std::vector<float> qkv;       // (L, T, 3*D)  q at [0,D), k at [D,2D), v at [2D,3D), per query head
  std::vector<float> z;         // (L, T, D)    head h at columns h*HS..(h+1)*HS
  std::vector<float> head_out;  // (L, NH, T, C)
  std::vector<float> residual;  // (L+1, T, C)  [l] enters layer l; [L] goes into ln_f
  std::vector<int> window;      // (L) each layer's sliding window (keys a query sees back from itself), 0 = all

  int kv_head_of(int head) const { return head / (NH / NKV); }  // the KV head query head `head` reads
  static std::size_t packed_size(int T) { return std::size_t(T) * (T + 1) / 2; }
  static std::size_t packed_offset(int query) { return std::size_t(query) * (query + 1) / 2; }
  // Keys 0..query of one head's pattern row (query+1 values).
  const float* pattern_row(int layer, int head, int query) const;
  const float* scores_row(int layer, int head, int query) const;
  // One cell; 0 above the diagonal (a masked key gets no attention).
  float pattern_at(int layer, int head, int query, int key) const;
  // The (T, T) pattern of one head, zeros above the diagonal, row-major.
  std::vector<float> pattern_full(int layer, int head) const;
};

// ---- interventions ---------------------------------------------------------------------

enum class Ablation {
  zero,  // the head's output z_h becomes 0
  mean,  // z_h becomes its mean over the positions of this input
};
struct HeadAblation {
  int layer = 0;
  int head = 0;
  Ablation kind = Ablation::zero;
};

enum class PatternReplacementKind {
  uniform,  // query t attends 1/(t+1) to each key 0..t
  custom,   // the given (T, T) pattern
};
struct PatternReplacement {
  int layer = 0;
  int head = 0;
  PatternReplacementKind kind = PatternReplacementKind::uniform;
  std::vector<float> pattern;  // (T, T) for custom: rows sum to 1, zeros above the diagonal
};

// Hides key `key` from every query of the head (or of every head when head = -1). A
// query whose only visible key is blocked (query 0 when key = 0) keeps attending to it.
struct KeyBlock {
  int layer = 0;
  int head = -1;
  int key = 0;
};

struct Interventions {
  std::vector<HeadAblation> ablate;
  std::vector<PatternReplacement> replace;
  std::vector<KeyBlock> block;
  bool empty() const { return ablate.empty() && replace.empty() && block.empty(); }
};

struct ForwardOptions {
  RecordRequest record;
  Interventions interventions;
  bool logits = true;  // false: skip the unembedding (only the record is wanted)
  bool loss = false;   // true: mean next-token cross-entropy of ids[1..T) given ids[0..T-1)
  // TransformerLens's hook points (model/hooks.h), called in the forward's order; null: none.
  const ForwardHooks* hooks = nullptr;
  // Start at block `start_layer` from its resid_pre (T, C), taken from an earlier run of the
  // same ids: a change at block l leaves the blocks before it as they were, so a patching
  // sweep need not run them again. The embedding and the blocks before are skipped (their
  // record and hooks are not filled). 0: the whole forward. start_layer = L runs only ln_f.
  int start_layer = 0;
  const float* start_resid = nullptr;
  // forward_batch from start_layer: sequence s starts from start_resids[s], (T_s, C) (one per
  // sequence; each may come from a different run). Empty: start_resid, for one sequence.
  std::vector<const float*> start_resids;
  // Run only rows start_rows[s].. of sequence s (one per sequence; empty: every row). A change
  // at position p leaves positions < p as they were at every layer (causality), so a patching
  // sweep need not run them again: their q, k and v at each layer come from prefix_qkv[s], the
  // record.qkv (L, T_s, 3D) of an earlier run of the same ids (after the rotary and q/k norm,
  // one k and v per query head), and the attention runs over all T_s rows as in the whole
  // forward (the masks, windows and soft-caps unchanged). The rows that run start from the
  // embedding at their positions, or from start_resids' rows start_rows[s]..; the hooks on
  // rows see those rows only (HookView::first_row says which), the hooks on scores and
  // pattern all T_s rows; outs[s].T is T_s - start_rows[s] and the logits are those rows'.
  // Not with a record, interventions or the loss (they read every row).
  std::vector<int> start_rows;
  std::vector<const float*> prefix_qkv;
  // true: the last block runs only each sequence's last row past its attention (a metric that
  // reads the last position's logits needs no other row there). The last block's q, k, v,
  // scores, pattern and z are computed for every row that runs (its keys and values are every
  // row's), then the attention's output (hook_result on), c_proj, the MLP, ln_f and the
  // unembedding run on the last row only: those hooks see one row (HookView::first_row = T_s - 1),
  // outs[s].T is 1 and the logits are the last row's, the same numbers bit for bit as that row
  // of the whole forward. With start_layer = L, only ln_f and the unembedding run, on the last
  // row. Not with a record, interventions, the loss, or stop_at_layer < L (they read other rows).
  bool last_row_only = false;
  // Stop after block stop_at_layer - 1 (TransformerLens's stop_at_layer): only blocks
  // [start_layer, stop_at_layer) run, for a caller that needs no layer past it. The record
  // then holds those blocks (record.L = stop_at_layer; residual[stop_at_layer] is the last
  // block's output), each the same numbers, bit for bit, as in the whole forward. Needs
  // logits and loss off (they read the last block). -1: every block.
  int stop_at_layer = -1;
  // Non-empty: out.logits holds only these vocabulary columns, (T, n) in this order (a metric
  // that reads a few tokens need not unembed them all). Not with `loss`.
  std::vector<int> logit_tokens;
};

struct ForwardOutput {
  int T = 0, V = 0;           // T: the rows run (the tokens, less options.start_rows')
  std::vector<float> logits;  // (T, V) when options.logits
  float loss = 0.0f;          // when options.loss and T >= 2, else NaN
  ActivationRecord record;
};

// The rotary frequencies (rotary_size / 2) of layer `layer`'s q and k and its positions'
// divisor (angle = t / scale * inv_freq[i]): a global layer's (rope_theta, llama3 scaling or
// rope_freq_factors, rope_linear_factor) or a Gemma 3 local layer's (rope_local_theta,
// unscaled). The forward's step 1b, and the GGUF writer's check of what a file carries.
struct LayerRope {
  std::vector<float> inv_freq;  // (rotary_size / 2)
  float scale = 1.0f;
  bool local = false;
};
bool rope_is_local(const ModelConfig& config, int layer);
LayerRope rope_of_layer(const ModelConfig& config, int layer);

// Buffers reused between calls (they grow to the largest T seen and are never shrunk).
struct Workspace {
  std::vector<float> buffer;
};

// Runs the model on `ids` (1 <= T <= n_ctx, every id in [0, V)).
// Errors: invalid_argument (empty input, an id outside the vocabulary, an intervention
// naming a layer/head/key that does not exist or a custom pattern of the wrong shape),
// too_long (T > n_ctx: the message says how many tokens and that the input can be
// truncated to the last n_ctx).
Status forward(const Parameters& params, std::span<const int> ids, const ForwardOptions& options,
               ForwardOutput& out, Workspace& workspace);

// The bytes a forward of T tokens needs beyond the weights: its output (the record asked for
// and the logits) and the workspace's activations. What a queue of waiting runs is bounded by.
std::size_t forward_bytes(const ModelConfig& config, int T, const ForwardOptions& options);

// Runs several sequences as the rows of one forward: every row-wise step of the blocks (the
// norms, the products through the weights, the MLP, the residual adds) runs once over all
// sum(T_s) rows, so each block's matrices are read once for the batch, while the positions
// (wpe, rotary) start at 0 in each sequence and the attention is each sequence's own (its
// causal mask over its own T); the unembedding writes each sequence's (T, V) logits straight
// into its own output (one (R, V) block copied again cost more than it saved), as one grouped
// product whose panels are read once for the batch (ops/matmul_packed.h). outs[s] is what
// forward(params, sequences[s], options, ...) gives: its logits, loss and record (the same
// numbers to float rounding; the kernels this CPU runs give them bit for bit,
// tests/model/forward_batch_test.cpp).
//   std::vector<std::span<const int>> seqs = {a, b, c};
//   std::vector<ForwardOutput> outs;
//   Status s = forward_batch(params, seqs, opt, outs, ws);   // outs.size() == 3
// Hooks are called once per sequence at each site, in sequence order, each with a view of that
// sequence's own (T_s, ...) activation and HookView::sequence = s, so one callback can treat
// each row differently (a patching sweep writes each row's own slice). With start_layer > 0,
// options.start_resids gives each sequence its own resid_pre.
// Errors: forward's, naming the sequence ("sequence 2 has no tokens"); invalid_argument for an
// empty batch, for start_resids not one per sequence, and, with several sequences, for
// interventions (run such a sequence alone with forward()). The workspace grows to the batch's rows.
Status forward_batch(const Parameters& params, std::span<const std::span<const int>> sequences,
                     const ForwardOptions& options, std::vector<ForwardOutput>& outs, Workspace& workspace);

}  // namespace headlab::model
