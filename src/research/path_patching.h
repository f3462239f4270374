// research/path_patching.h — path patching (Wang et al. 2022, the IOI paper's appendix B; ARENA's
// IOI chapter): how much of a sender head's effect on the answer goes by one path — straight to
// the logits (through the MLPs only), or into chosen receiver heads' queries, keys or values.
// For each sender head, per prompt pair (orig = the clean run, new = the corrupted one, as ARENA;
// `noising = false` swaps them):
//   run 1: orig and new, each head's z (attn.hook_z) kept at every layer
//   run 2: orig with the sender's z from new and every other head's z frozen to orig's (the MLPs
//          and norms recomputed), recording the receivers' inputs (attn.hook_q/k/v[:, head]) —
//          or, with the final residual stream as the receiver, its logits are the answer
//   run 3 (receiver heads only): orig with only those inputs replaced by run 2's, the rest of the
//          model free; the metric of its logits is the sender's value
//   value[layer][head] = mean over pairs of metric(run 3, or run 2 for the final residual)
//
//   PathPatchRequest rq;                                 // every head as a sender, into the logits
//   rq.receivers = {{1, 2, 'k'}};                        // or into head 1.2's keys
//   Result<PathPatchResult> r = path_patch(params, pairs, rq, ws);
//   r->values[r->offset(layer, head)];                   // (layer, head); NaN: not a sender asked for
//
// Exact and fast (each shortcut tested equal to the full runs, tests/research/path_patching_test.cpp):
// run 2 starts at the sender's layer from orig's resid_pre (the layers before are orig's), run 3
// at the first receiver's layer; logit differences unembed only their two columns; a sender at or
// after every receiver's layer reaches none of them (its value is orig's metric, no run), and a
// sender whose z is the same in both runs changes nothing; the runs of the senders of one layer,
// of every pair, go as the rows of one model::forward_batch (as activation patching's).
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
#include "research/patching.h"
#include "util/result.h"

namespace headlab::research {

struct HeadIndex {
  int layer = 0, head = 0;
};

// A receiver head's input: 'q' (a query head), 'k' or 'v' (a KV head, as TL indexes hook_k and
// hook_v: with GQA, the group of query heads reading it).
struct PathReceiver {
  int layer = 0, head = 0;
  char input = 'q';
};
std::string path_receiver_name(const PathReceiver& r);  // "1.2:k"
// "final" -> empty (the final residual stream); "1.2:q,1.3:k,2.0:v" -> receivers. Errors name the bad part.
Result<std::vector<PathReceiver>> parse_path_receivers(std::string_view text);
// "all" -> empty (every head); "0.1,0.3" -> heads; "1.*" -> {1, -1}: every head of layer 1.
Result<std::vector<HeadIndex>> parse_path_senders(std::string_view text);

struct PathShortcuts {
  bool start_at_layer = true;       // run 2 at the sender's layer, run 3 at the first receiver's
  bool metric_columns_only = true;  // logit differences: only the answer's and wrong token's columns
  bool skip_unreachable = true;     // a sender after every receiver, or whose z is the same in both runs: no run
  bool batch_rows = true;           // the senders of one layer, of every pair, as the rows of one forward_batch
};

struct PathPatchRequest {
  std::vector<HeadIndex> senders;       // each its own cell (head -1: the layer's every head); empty: every head
  std::vector<PathReceiver> receivers;  // empty: the final residual stream (the logits)
  PatchMetric metric = PatchMetric::logit_diff;
  std::optional<LossPositions> loss_positions;  // the loss metric over positions [from, to) only (PatchRequest's)
  bool noising = true;  // ARENA's: orig = clean, new = corrupted (the metric drops); false: the reverse
  PathShortcuts shortcuts;
  std::function<void(std::size_t done, std::size_t total)> progress;  // after each sender of each pair
  std::function<bool()> keep_going;  // asked before each run; false stops (unavailable)
};

struct PathPatchResult {
  PatchMetric metric = PatchMetric::logit_diff;
  std::optional<LossPositions> loss_positions;  // the request's, as given
  bool noising = true;
  std::vector<PathReceiver> receivers;  // empty: the final residual stream
  std::vector<HeadIndex> senders;       // the senders run, in the grid's order
  std::vector<int> layers;              // the grid's rows: the layers holding a sender
  int heads = 0;                        // the grid's columns: NH
  std::vector<float> values;            // (layers, heads) row-major; NaN where no sender was asked for
  float clean = 0.0f, corrupted = 0.0f; // the metric of the clean and corrupted runs (normalized: 1, 0)
  PatchCost cost;
  std::size_t skipped = 0;              // sender runs the shortcuts did not need
  std::size_t offset(int layer_index, int head) const { return std::size_t(layer_index) * heads + head; }
};

// The cost (an upper bound), after the same checks as path_patch().
Result<PatchCost> path_patch_cost(const model::ModelConfig& config, std::span<const PatchPair> pairs,
                                  const PathPatchRequest& request);

// Errors (invalid_argument, naming what is wrong): those of patch_check_pairs; a sender or
// receiver head outside the model (k and v: its KV heads); an input other than q, k, v; the same
// receiver twice; normalized when the clean and corrupted logit differences are equal. The
// forward's; unavailable when keep_going said stop.
Result<PathPatchResult> path_patch(const model::Parameters& params, std::span<const PatchPair> pairs,
                                   const PathPatchRequest& request, model::Workspace& workspace);

}  // namespace headlab::research
