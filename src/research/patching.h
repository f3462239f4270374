// research/patching.h — activation patching: TransformerLens's get_act_patch_* (patching.py),
// every family, one sweep per call. For each index (layer, pos, head …) one patched run of the
// base prompt has one slice of one activation replaced by the source prompt's, and a metric
// of its logits is kept:
//   denoising (default): base = corrupted, source = clean  (which slices restore the answer)
//   noising:             base = clean,     source = corrupted (which slices break it)
//   value[index] = mean over prompt pairs of metric(run(base ids, slice[index] := source's))
//
//   PatchPair pair{clean_ids, corrupted_ids, /*answer=*/mary, /*wrong=*/john};
//   PatchRequest rq;  rq.what = PatchWhat::resid_pre;  rq.metric = PatchMetric::logit_diff;
//   Workspace ws;
//   Result<PatchResult> r = patch(params, {&pair, 1}, rq, ws);
//   r->values[r->offset({layer, pos})];      // axes {"layer", "pos"}, TL's order
//
// Exact and fast (each shortcut is tested equal to TL's loop, one full forward per index,
// tests/research/patching_test.cpp): a patched run starts at the patched layer from the base
// run's resid_pre (model::ForwardOptions::start_layer: the blocks before cannot change); the
// runs that start at one layer, of every pair, go as the rows of one model::forward_batch (each
// block's weights read once for them all; a batch holds at most 2048 tokens and 16 MB); the
// logit-difference metrics unembed only the answer's and the wrong token's columns; a run that
// patches position p only (the by-position sweeps, pattern_by_pos's destination row) runs only
// rows p.. (model::ForwardOptions::start_rows: by causality the rows before are the base run's at
// every layer, and their q, k and v come from its record; a head patched at every position runs
// the rows from the first where the two runs' slices differ, the same way; not with steering or
// the loss over every position, which read every row; the loss over positions from.. runs rows
// min(p, from)..); a metric that reads the last position only (not the loss) has the last block
// run its attention output, MLP, ln_f and unembedding on the last row only
// (model::ForwardOptions::last_row_only); a slice that
// is the same in both runs (a prefix both prompts share) leaves the base run, whose metric it
// takes without running. Steering (PatchRequest::steering) is applied in every run, the
// shortcuts included.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/forward.h"
#include "model/parameters.h"
#include "research/steering.h"
#include "util/result.h"

namespace headlab::research {

// What is patched, with TransformerLens's axes (the output's, in this order):
enum class PatchWhat : std::uint8_t {
  resid_pre,  // (layer, pos)  blocks.{l}.hook_resid_pre[pos]
  resid_mid,  // (layer, pos)  hook_resid_mid: none in a parallel (GPT-NeoX) or attention-only block
  attn_out,   // (layer, pos)
  mlp_out,    // (layer, pos)  none in an attention-only block
  z_all_pos,  // (layer, head)  attn.hook_z[:, head] at every position
  q_all_pos,
  k_all_pos,  // (layer, head)  head = a KV head (NKV of them with GQA/MQA), as TL indexes hook_k
  v_all_pos,
  pattern_all_pos,  // (layer, head)  attn.hook_pattern[head]: every query row
  z_by_pos,         // (layer, pos, head)  attn.hook_z[pos, head]
  q_by_pos,
  k_by_pos,  // (layer, pos, head)  KV heads, as k_all_pos
  v_by_pos,
  pattern_by_pos,  // (layer, head, dest_pos)  one query row: TL's own order for patterns
  block_every,     // (patch_type, layer, pos)  patch_type: resid_pre, attn_out, mlp_out
  attn_head_all_pos_every,  // (patch_type, layer, head)  z, q, k, v, pattern; k and v padded with 0 to NH
  attn_head_by_pos_every,   // (patch_type, layer, pos, head)  as above, pattern transposed to (pos, head)
};
std::string_view patch_what_name(PatchWhat w);  // "resid_pre", "z_all_pos", …
std::optional<PatchWhat> parse_patch_what(std::string_view name);
std::string patch_what_list();                  // "resid_pre, resid_mid, …" for help and errors

enum class PatchMetric : std::uint8_t {
  logit_diff,  // logit(answer) - logit(wrong) at the last position, per pair, averaged
  normalized,  // (patched - corrupted) / (clean - corrupted) of the averaged logit differences
  loss,        // mean next-token cross-entropy of the run's own tokens (PatchRequest::loss_positions of them), per pair, averaged
  logprob,     // log softmax(logits at the last position)[answer], per pair, averaged
};
std::string_view patch_metric_name(PatchMetric m);
std::optional<PatchMetric> parse_patch_metric(std::string_view name);

// The positions the loss metric reads: TransformerLens's loss_per_token[:, from:to], where
// position t's loss is that of token t+1 given tokens 0..t. On BOS, 8 tokens and the same 8
// again (T = 17), the second copy's tokens an induction head can predict (10..16, all but its
// first) have their losses read at positions 9..15: {9, 16}. to = -1: to the end (T - 1, the
// last position with a next token).
struct LossPositions {
  int from = 0;
  int to = -1;
};
// "9:16", "9:" (to the end), ":16" (from 0). nullopt: not that form.
std::optional<LossPositions> parse_loss_positions(std::string_view text);
std::string loss_positions_text(const LossPositions& lp);  // "9:16", "9:" …

// One prompt pair as token ids (BOS already applied: research/patch_input.h makes them from text).
struct PatchPair {
  std::vector<int> clean;      // (T)
  std::vector<int> corrupted;  // (T): the same length (positions must match)
  int answer = -1;             // the token the clean run should predict next (-1: none)
  int wrong = -1;              // the token the corrupted run should predict next (-1: none)
};

// The shortcuts, each exact; all on by default (off: TL's loop, for the tests and the benchmark).
struct PatchShortcuts {
  bool start_at_layer = true;       // start each patched run at its layer from the base run's resid_pre
  bool metric_columns_only = true;  // logit_diff/normalized: unembed only the answer and wrong columns
  bool skip_unchanged = true;       // a slice equal in both runs: the base run's metric, no run
  bool batch_rows = true;           // the runs that start at one layer go as the rows of one forward_batch
  // a run patched at position p only runs rows p.. (a head's z, q, k or v at every position: rows
  // from the first where the source's differs), the rows before are the base run's
  bool reuse_prefix = true;
  // logit_diff, normalized, logprob (the last position's logits): the last block past its
  // attention, ln_f and the unembedding run on the last row only (model::ForwardOptions::last_row_only)
  bool last_row_only = true;
};

struct PatchRequest {
  PatchWhat what = PatchWhat::resid_pre;
  PatchMetric metric = PatchMetric::logit_diff;
  bool noising = false;        // true: clean run, corrupted slices
  std::vector<int> layers;     // the layers swept (sorted, unique); empty: every layer
  std::vector<int> positions;  // the positions swept (sorted, unique); empty: 0 .. longest T - 1
  // The loss metric's positions (only with metric loss); none: every position. A run patched at
  // position p then runs only rows min(p, from).. (reuse_prefix: the rows before are neither
  // changed nor read).
  std::optional<LossPositions> loss_positions;
  PatchShortcuts shortcuts;
  // Added to every run of the sweep, clean, corrupted and patched (research/steering.h): each at
  // its layer's resid_pre, before the patch, so a patched slice of a steered point is the source
  // run's steered value (TL with the steering hook added before the patching hook). Empty: none.
  std::vector<Steering> steering;
  // Called after each patched run (or skipped one): done of total. Empty: nothing.
  std::function<void(std::size_t done, std::size_t total)> progress;
  // Asked before each patched run joins a batch; false stops the sweep (unavailable) once the
  // runs already let in have run: a server whose client has gone frees its worker. Empty: run
  // to the end.
  std::function<bool()> keep_going;
};

// What a sweep costs, known before it runs (an upper bound: skipped runs are counted, and a run that
// starts at its patched row as if it ran every row).
struct PatchCost {
  std::size_t forwards = 0;      // 2 per pair (the clean and corrupted runs) + one per patched index per pair
  std::size_t block_tokens = 0;  // sum over those forwards of T x the blocks it runs: the work
  double multiply_adds = 0;      // block_tokens x one block's multiply-adds per token (weights only)
};

struct PatchResult {
  PatchWhat what = PatchWhat::resid_pre;
  PatchMetric metric = PatchMetric::logit_diff;
  bool noising = false;
  std::optional<LossPositions> loss_positions;  // the request's, as given
  std::vector<std::string> axes;         // TL's axis names: "patch_type", "layer", "pos", "head", "dest_pos"
  std::vector<int> shape;                // the length of each axis
  std::vector<float> values;             // row-major over shape
  std::vector<std::string> patch_types;  // the *_every's first axis: {"resid_pre", "attn_out", "mlp_out"} …
  std::vector<int> layers;               // what the layer axis indexes
  std::vector<int> positions;            // what the pos / dest_pos axis indexes (empty without one)
  int heads = 0;                         // the head axis' length: NH (NKV for k and v alone)
  float clean = 0.0f, corrupted = 0.0f;  // the metric of the clean and corrupted runs (normalized: 1, 0)
  PatchCost cost;
  std::size_t skipped = 0;               // patched runs the skip_unchanged shortcut did not need
  struct Steered {
    int layer = 0, from = 0, rows = 1;
    float coef = 1.0f;
  };
  std::vector<Steered> steering;  // the request's steerings, without their vectors (said in the output)
  std::size_t offset(std::initializer_list<int> index) const;  // into values, one index per axis
};

// The cost of the sweep, after the same checks as patch(). Errors: those of patch() that the
// request alone shows.
Result<PatchCost> patch_cost(const model::ModelConfig& config, std::span<const PatchPair> pairs,
                             const PatchRequest& request);

// Runs the sweep. Errors (invalid_argument, naming what is wrong and how to fix it): no pairs;
// a pair whose clean and corrupted lengths differ (pair N, both lengths); a metric's token
// missing or outside the vocabulary; what the model has no hook for (resid_mid in a parallel or
// attention-only block, mlp_out without an MLP); a layer or position outside the model or the
// prompts; loss on a one-token prompt; loss_positions that are empty, past a pair's end or
// with a metric other than loss; normalized when the clean and corrupted logit differences are equal. The forward's (too_long past n_ctx). unavailable when keep_going said stop.
Result<PatchResult> patch(const model::Parameters& params, std::span<const PatchPair> pairs,
                          const PatchRequest& request, model::Workspace& workspace);

// ---- the steps the sweeps share (research/path_patching.cpp runs them too) ----

// The pairs' checks: at least one; each pair's prompts non-empty and of one length; the
// metric's tokens inside the vocabulary; loss on two tokens at least. max_T: the longest.
Status patch_check_pairs(const model::ModelConfig& config, std::span<const PatchPair> pairs, PatchMetric metric,
                         int& max_T);
// loss_positions' checks: only with the loss metric; from < to, and to at most every pair's T - 1.
Status patch_check_loss_positions(std::span<const PatchPair> pairs, PatchMetric metric,
                                  const std::optional<LossPositions>& loss_positions);
// [from, to) for a run of T tokens (to = -1: T - 1).
LossPositions loss_positions_for(const LossPositions& lp, int T);
// The mean over t in [from, to) of -log softmax(logits[t])[ids[t+1]], in double, the terms
// summed in order (over every position: mean_next_token_loss's value, bit for bit). out holds
// every vocabulary column of its rows; a run of start_rows r holds rows r.. (r <= from).
double patch_loss_over(const model::ForwardOutput& out, std::span<const int> ids, const LossPositions& lp);

// The forward's options for what the metric reads (two logit columns when columns_only and
// the metric is a logit difference; the loss without logits), and the metric of one run
// (normalized: its logit difference, normalised once the sweep is done).
// The loss over loss_positions reads every logit of the run's rows and its own tokens `ids`.
void patch_metric_options(model::ForwardOptions& options, const PatchPair& pair, PatchMetric metric, bool columns_only,
                          const std::optional<LossPositions>& loss_positions = std::nullopt);
double patch_run_metric(const model::ForwardOutput& out, const PatchPair& pair, PatchMetric metric, bool columns_only,
                        std::span<const int> ids = {}, const std::optional<LossPositions>& loss_positions = std::nullopt);
// The same for a run whose forward unembedded `columns` (its logit_tokens; empty: every one): a
// batch of several pairs unembeds each pair's answer and wrong token, and each row finds its own.
double patch_run_metric(const model::ForwardOutput& out, const PatchPair& pair, PatchMetric metric,
                        const std::vector<int>& columns, std::span<const int> ids = {},
                        const std::optional<LossPositions>& loss_positions = std::nullopt);
// Whether a batch of patched runs of `tokens` rows in all stays within a sweep's bounds: 2048
// tokens, and 16 MB as model::forward_bytes counts a forward with `options` (the workspace's
// rows and the logits the metric reads).
bool patch_batch_fits(const model::ModelConfig& config, int tokens, const model::ForwardOptions& options);

}  // namespace headlab::research
