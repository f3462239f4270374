// server/model_service/model_service.h — the one loaded model behind the model API: its weights, its
// tokenizer, the inference pool that runs it, and its scanner report (made once).
//
//   auto svc = ModelService::load({.dir = "models/headlab-tiny"});
//   Result<ModelRunResult> r = (*svc)->run(request);
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "analysis/scanner.h"
#include "tokenizer/bpe_tokenizer.h"
#include "model/parameters.h"
#include "server/model_service/inference_pool.h"
#include "server/model_service/model_types.h"
#include "research/steering.h"
#include "server/model_service/patch_types.h"
#include "util/result.h"

namespace headlab::server {

struct ModelServiceOptions {
  std::string dir;               // config.json, model.safetensors, vocab.json + merges.txt
  model::LoadOptions load;       // --dtype: the type its matrices are kept in (model/parameters.h)
  // load.compute was chosen for the CPU, not asked for: a model without bf16 matrices runs in
  // float32 under bf16 (not refused), and the load's notes say which arithmetic runs and why
  // (bf16_speedup: the CPU's bf16 dot products over its float32 ones, model::cpu_bf16_speedup;
  // 0 without AVX512_BF16)
  bool compute_auto = false;
  double bf16_speedup = 0.0;
  int max_tokens = 256;          // per request (at most n_ctx)
  double max_patch_multiply_adds = 1e11;  // a patching sweep's work (research::PatchCost): ~10 s on 2 cores
  std::size_t max_pattern_cells = 2'000'000;  // pattern values one answer may carry
  std::size_t max_cache_bytes = std::size_t(32) << 20;  // POST /api/model/cache: the largest file it answers
  InferencePoolOptions pool;
};

class ModelService {
 public:
  // Errors: those of checkpoint_load and BpeTokenizer::load, naming the folder.
  static Result<std::unique_ptr<ModelService>> load(const ModelServiceOptions& options);

  const ModelInfo& info() const { return info_; }
  // The limits it was started with (POST /api/model/path-patch checks max_patch_multiply_adds).
  const ModelServiceOptions& options() const { return options_; }
  // Read-only views for computations outside the pool (the word-order lesson's).
  const model::Parameters& parameters() const { return params_; }
  const model::BpeTokenizer& tokenizer() const { return *tokenizer_; }
  // Runs the forward in the pool, batched with the other runs waiting when the model becomes
  // free (InferencePool::forward). Errors: the tokenizer's and the request's checks;
  // unavailable when the queue is full or the deadline passed.
  Result<ModelRunResult> run(const ModelRunRequest& request);
  // Where the request tagged `request_id` (InferencePool::RequestScope) is: waiting with how
  // many ahead of it, running, or unknown (answered, refused or never seen).
  QueuePlace queue_place(const std::string& request_id) const { return pool_->place(request_id); }
  // A request answered by another identical one's computation reports that one's place.
  void queue_follow(const std::string& request_id, const std::string& lead_id) { pool_->follow(request_id, lead_id); }
  void queue_unfollow(const std::string& request_id) { pool_->unfollow(request_id); }
  // What the pool's memory budget counts as held: answers still read and the runs' results not
  // yet encoded (InferencePool::held_bytes).
  std::size_t held_bytes() const { return pool_->held_bytes(); }
  Result<ModelInterveneResult> intervene(const ModelInterveneRequest& request);
  // The selected hooks' activations as a safetensors file's bytes (research/cache.h). Errors:
  // invalid_argument (hooks, ids), too_long (a prompt over max_tokens, a file over
  // max_cache_bytes: the message gives the size and how to narrow), unavailable (busy).
  Result<std::string> cache(const ModelCacheRequest& request);
  // One query's scores against every key of the text, the keys after it too
  // (analysis/query_scores.h). Errors: the tokenizer's; a layer, head or query out of range.
  Result<QueryScoresResult> query_scores(const QueryScoresRequest& request);
  // Activation patching (research/patching.h) of one pair or a batch. Errors: those of
  // patch_input_from_prompts and patch; too_long when the sweep's cost is past
  // max_patch_multiply_adds (the message gives the cost and how to narrow the sweep; the error's
  // details the narrower sweeps that fit: work_refusal.h).
  Result<ModelPatchResult> patch(const ModelPatchRequest& request);
  // The scanner's report on the folder's heldout.txt (analysis::scan_text; computed on
  // first use, then kept). Errors: not_found without heldout.txt; those of scan_text.
  Result<analysis::ScanReport> scan_report();
  // Loss on `text` (BOS first) with each head zero-ablated, minus the loss without:
  // (n_layer * n_head), layer-major.
  Result<std::vector<float>> head_ablation_deltas(const std::string& text);
  Result<TrainingLog> training_log() const;
  // Runs `fn` (a computation on parameters() or tokenizer()) in the inference pool's turns:
  // 503 when the queue is full, the same deadline as a run.
  template <class T>
  Result<T> in_turn(std::function<Result<T>()> fn) {
    return pool_->run<T>([fn = std::move(fn)](model::Workspace&) { return fn(); });
  }

 private:
  ModelService() = default;
  // hint: what a text past the limit is told to do (empty: send "truncate": true)
  Result<std::vector<model::Token>> tokenize(const std::string& text, std::optional<bool> bos, bool truncate,
                                             bool& truncated, std::string_view hint = {}) const;
  // A request's steerings (SteerSpec): vectors checked, ActAdd's texts tokenised (BOS by `bos`),
  // outside the pool; resolve_steering runs ActAdd's two forwards in the turn. Errors name the
  // steering by its index ("Steering 1: …").
  struct PreparedSteering {
    std::vector<research::Steering> steering;
    std::vector<std::pair<std::vector<int>, std::vector<int>>> actadd;  // (plus, minus) per steering; empty: a vector
  };
  Result<PreparedSteering> prepare_steering(const std::vector<SteerSpec>& specs, std::optional<bool> bos) const;
  Result<std::vector<research::Steering>> resolve_steering(PreparedSteering prepared, model::Workspace& ws) const;

  ModelServiceOptions options_;
  ModelInfo info_;
  model::Parameters params_;
  std::optional<model::BpeTokenizer> tokenizer_;
  std::unique_ptr<InferencePool> pool_;
  std::mutex scan_mutex_;
  std::optional<analysis::ScanReport> scan_;
};

}  // namespace headlab::server
