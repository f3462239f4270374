// research/run_batch.h — the runs of a sweep that start at one layer, gathered as the rows of
// one model::forward_batch until the next would not fit (patch_batch_fits: the batch's tokens
// and the bytes its forward keeps), then run. Activation patching's and path patching's sweeps
// fill their batches through it.
//
//   RunBatch<Run> batch(config, shortcuts.batch_rows);   // batch_rows off: every run alone
//   auto run_them = [&](std::span<const Run> runs) -> Status { ... forward_batch ... };
//   if (Status s = batch.add(run, rows, probe, run_them); !s) ...  // may run the gathered ones first
//   if (Status s = batch.flush(run_them); !s) ...                  // the rest
#pragma once

#include <span>
#include <vector>

#include "model/config.h"
#include "model/forward.h"
#include "research/patching.h"
#include "util/result.h"

namespace headlab::research {

template <class Run>
class RunBatch {
 public:
  RunBatch(const model::ModelConfig& config, bool batch_rows) : config_(config), batch_rows_(batch_rows) {}

  // Adds a run of `rows` rows; when it would not fit beside the runs gathered (probe: the
  // options of the batch's forward, for its bytes), or batching is off, runs those first.
  template <class RunThem>
  Status add(const Run& run, int rows, const model::ForwardOptions& probe, const RunThem& run_them) {
    if (!runs_.empty() && !(batch_rows_ && patch_batch_fits(config_, tokens_ + rows, probe)))
      if (Status s = flush(run_them); !s) return s;
    runs_.push_back(run);
    tokens_ += rows;
    return {};
  }

  // Runs the runs gathered (none: nothing) and empties the batch, whatever run_them answers.
  template <class RunThem>
  Status flush(const RunThem& run_them) {
    if (runs_.empty()) return {};
    Status s = run_them(std::span<const Run>(runs_));
    runs_.clear();
    tokens_ = 0;
    return s;
  }

 private:
  const model::ModelConfig& config_;
  bool batch_rows_;
  std::vector<Run> runs_;
  int tokens_ = 0;  // the rows of runs_
};

}  // namespace headlab::research
