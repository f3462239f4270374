// cli/steer_option.h — the steering options `headlab intervene` and `headlab run` share:
//   --steer L:COEF:FILE                      COEF * v at blocks.L.hook_resid_pre, v from FILE
//                                            (n_embd float32, or a JSON list of n_embd numbers)
//   --steer-prompts L:COEF:PLUS TEXT:MINUS TEXT   ActAdd: v is the two texts' resid_pre difference
//   --steer-from POS                         the first position they are added at
//
//   auto steering = steering_from_options(opts.steer, opts.steer_prompts, opts.steer_from,
//                                         params, tok.get(), bos, workspace);
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "model/forward.h"
#include "research/steering.h"
#include "tokenizer/bpe_tokenizer.h"
#include "util/result.h"

namespace CLI {
class App;
}

namespace headlab::cli {

struct SteerOptions {
  std::vector<std::string> steer, steer_prompts;
  int steer_from = 0;
};

// Adds --steer, --steer-prompts and --steer-from to `cmd`.
void add_steer_options(CLI::App* cmd, SteerOptions& options);

// The options as steerings; the ActAdd texts are tokenised with `bos` (the run's rule) and run
// here. Errors: invalid_argument (a spec not of the form above, a bad coefficient, a layer the
// model lacks, a vector steering_check refuses, no tokenizer for texts), the file's and the
// forward's.
Result<std::vector<research::Steering>> steering_from_options(const SteerOptions& options,
                                                              const model::Parameters& params,
                                                              const model::BpeTokenizer* tokenizer,
                                                              std::optional<bool> bos, model::Workspace& workspace);

}  // namespace headlab::cli
