// analysis/scanner.h — scores every head of a model (or the five constructed heads) with
// the measures of head_scores.h on probes the scanner builds itself, and labels each head
// with every role it passes, with its margin (never one forced class):
//   natural text      BOS + windows of held-out text: previous / current / first token,
//                     entropy, punctuation, value-weighted first-token share
//   repeated random   BOS + R random tokens + the same R again: duplicate token, induction,
//                     and in-context learning (loss on the second copy vs the first)
//   three copies      BOS + R' random tokens three times: prefix matching
//   weights           the OV circuit's copying score (eigenvalues, Elhage et al. 2021)
//
//   Result<ScanProbes> probes = scan_probes_build(natural_ids, is_punct_by_id, V, bos, n_ctx, options);
//   Result<ScanReport> r = scan_model(params, *probes);
//   for (const HeadReport& h : r->heads) ... h.scores.induction.score ...
// From text, use analysis/scan_text.h (tokenizer, punctuation table and probes in one call).
// The report is values; its JSON is the server's codec's, its table and CSV the CLI's.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "analysis/head_scores.h"
#include "model/parameters.h"
#include "util/result.h"

namespace headlab::analysis {

struct HeadScores {
  Scored previous_token, current_token, first_token, duplicate_token, induction, prefix_matching,
      entropy, punctuation;
  // Kobayashi et al. 2020: mean_q |p[q][0] f(x_0)| / sum_k |p[q][k] f(x_k)|, f(x) = W_O v(x):
  // near first_token when the head reads the first token, near 0 when it only parks there.
  Scored first_token_value_weighted;
  Scored copying;        // chance 0: a random OV circuit copies as often as it suppresses
  bool has_weights = false;  // false for the constructed heads: copying and value-weighted unset
};

// The names of the scores in HeadScores order, as in the JSON ("previous_token", ...).
struct ScoreField {
  const char* name;
  Scored HeadScores::*member;
  bool needs_weights;
};
const std::vector<ScoreField>& score_fields();

struct Label {
  std::string name;  // "previous_token", "induction", "sink", "first_token", ...
  double score = 0.0;
  double threshold = 0.0;
  double margin() const { return score - threshold; }
};

struct HeadReport {
  int layer = 0;
  int head = 0;
  std::string name;  // "1.3", or the constructed head's name
  HeadScores scores;
  std::vector<Label> labels;  // every role the head passes, largest margin first
};

struct InContextLearning {
  double loss_first_copy = 0.0;   // mean loss predicting tokens 2..R of the first copy
  double loss_second_copy = 0.0;  // the same tokens again, in the second copy
  double ratio() const { return loss_first_copy > 0 ? loss_second_copy / loss_first_copy : 0.0; }
};

struct ScanReport {
  std::vector<HeadReport> heads;  // ranked: heads with the largest label margin first
  bool has_icl = false;
  InContextLearning icl;
  int repeat_length = 0;   // R of the repeated-random probe
  int natural_tokens = 0;  // tokens of natural text scored
};

// How far scan_model is, for a progress line: `stage` of the five ("natural text",
// "repeated random", "three copies", "OV circuits", "copying scores"), `done` of `total` steps
// of that stage (probes, blocks of 256 vocabulary rows, heads). Called on the scanning thread.
struct ScanProgress {
  const char* stage = "";
  int done = 0, total = 0;
};
using ScanProgressFn = std::function<void(const ScanProgress&)>;

struct ScanOptions {
  int natural_windows = 4;  // windows of held-out text
  int window_length = 0;    // tokens per window incl. BOS; 0: min(n_ctx, 128)
  int random_probes = 4;    // repeated random sequences (and as many with three copies)
  int repeat_length = 0;    // R; 0: min(50, (window_length - 1) / 2)
  std::uint64_t seed = 1;
  ScanProgressFn progress;  // null: none (the CLI's --progress prints it)
};

// The probes: token sequences and what the scorer needs to know about them.
struct ScanProbes {
  std::vector<std::vector<int>> natural;            // each starts with BOS
  std::vector<std::vector<bool>> natural_is_punct;  // per position
  std::vector<std::vector<int>> repeated;           // BOS + R random + the same R
  std::vector<std::vector<int>> three_copies;       // BOS + R' random, three times
  int R = 0;
};

// natural_ids: held-out text as ids (no BOS); is_punct_by_id (V): whether a token is a
// punctuation mark. Random tokens are drawn from [0, V) without BOS.
// Errors: invalid_argument when the text is shorter than one window.
// The options' ranges, checked by scan_probes_build for every caller (the CLI, Python, the
// trainer): natural_windows and random_probes 1 to kMaxScanProbes; window_length 0 or 5 to
// n_ctx; repeat_length 0 or 1 to (window - 1) / 2, the most two copies fit. Each was clamped
// silently before. Errors: invalid_argument naming the option and its range.
inline constexpr int kMaxScanProbes = 1024;
Status scan_options_check(const ScanOptions& options, int n_ctx);

Result<ScanProbes> scan_probes_build(const std::vector<int>& natural_ids, const std::vector<bool>& is_punct_by_id,
                                     int V, int bos, int n_ctx, const ScanOptions& options);

// Runs the model on every probe and scores every head. The heads' scores and the OV circuits'
// products are split over the engine's thread pool (model/thread_pool.h), each head and each
// sum computed as one thread would, in the same order: the report is the same bit for bit on
// any number of threads. `progress` (may be null) hears of each step.
// Errors: the engine's forward errors (never expected for probes built above).
Result<ScanReport> scan_model(const model::Parameters& params, const ScanProbes& probes,
                              const ScanProgressFn& progress = {});

// G = E^T Wu diag(lnfw) (C, C), the middle of every head's OV circuit (E = wte, Wu the
// unembedding, both (V, C)), summed over the vocabulary in order, in double precision.
// ov_gram_plain is the loop as written; ov_gram the same sums (each element's terms in the same
// order, so the same bits) in cache-sized tiles over the thread pool.
std::vector<double> ov_gram_plain(const model::Parameters& params);
std::vector<double> ov_gram(const model::Parameters& params, const ScanProgressFn& progress = {});

// The copying score of head h of layer l (Elhage et al. 2021): the eigenvalues of the (HS, HS)
// M = Wv_h diag(ln1w) G Wo_h, whose non-zero eigenvalues are those of the (V, V) OV circuit.
// ov_copying_score reads each row of G once for all rows of M's left factor (the same sums in
// the same order: the same bits as the plain loop).
double ov_copying_score_plain(const model::Parameters& params, const std::vector<double>& G, int l, int h);
double ov_copying_score(const model::Parameters& params, const std::vector<double>& G, int l, int h);

// The five constructed heads of the first lesson through the same scorer, on word probes
// (held-out words as tokens; random words from a fixed list).
ScanReport scan_constructed_heads(const std::vector<std::string>& natural_words, const ScanOptions& options);

// Labels of a head from its scores (thresholds in scanner.cpp), largest margin first.
std::vector<Label> label_head(const HeadScores& s);

// The best score of one measure over all heads, and the head that has it.
struct BestHead {
  double score = 0.0;
  int layer = -1, head = -1;
};
BestHead best_head(const ScanReport& r, Scored HeadScores::*member);

}  // namespace headlab::analysis
