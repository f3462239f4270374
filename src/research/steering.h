// research/steering.h — activation steering: add coef * v to the residual stream entering
// block l (blocks.{l}.hook_resid_pre), at every position from `from` on; or ActAdd (Turner et
// al. 2023, "Activation Addition"): v is the difference of two prompts' resid_pre at l,
// position by position, added at the same positions of the run.
//
//   auto v = steering_vector_read("love.f32", params.config.n_embd);      // or a JSON list
//   Steering s{.layer = 6, .coef = 4.0f, .vector = *v};
//   auto hooks = steering_hooks(params.config, {&s, 1});
//   ForwardOptions opt;  opt.hooks = &hooks;                               // resid_pre[l] += 4 v
//
// ActAdd's rule here: both prompts are tokenised as the run is (BOS by the same rule); the
// difference is taken at the positions of the shorter, aligned from the start (position 0 with
// position 0), giving rows (n, C), and row i is added at position from + i of the run (rows
// past its end are dropped). Turner et al. pad the shorter prompt with spaces to the longer's
// length instead; headlab cuts, so no space token's own residual enters the vector.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/config.h"
#include "model/forward.h"
#include "model/hooks.h"
#include "model/parameters.h"
#include "util/result.h"

namespace headlab::research {

struct Steering {
  int layer = 0;              // added at blocks.{layer}.hook_resid_pre
  float coef = 1.0f;
  int from = 0;               // the first position it is added at
  int rows = 1;               // 1: one vector at every position >= from; n (ActAdd): row i at position from + i
  std::vector<float> vector;  // (rows, C)
};

// The largest |coef * v[i]| a steering may add. The norms square the residual stream in
// float32 (3.4e38 at most): from about 1e18 a sum of squares can overflow, and the numbers
// after it turn to NaN (the API answered nulls for 1e20). 1e15 keeps C = 100,000 squares
// finite, and is far past any steering that still lets the model's own values count (a
// residual's entries are 1 to 1e4 in GPT-2 and Llama).
inline constexpr double kMaxSteeringAdd = 1e15;

// Errors (invalid_argument): a layer the model lacks, a vector whose length is not rows * C
// (n_embd), a NaN or infinite value or coefficient (the message gives the first index), a
// value of coef * v past kMaxSteeringAdd (the index and the product), a negative `from`.
Status steering_check(const model::ModelConfig& config, const Steering& steering);

// A steering that starts at or past the last position of a run of T tokens (the longest, for
// a batch) adds nothing: refused (invalid_argument) rather than run as if it had steered.
Status steering_reaches(const Steering& steering, int T);

// resid_pre (T, C) += coef * vector at the steering's positions (a writable view).
void steering_add(const Steering& steering, const model::HookView& resid_pre);

// Hooks that apply each steering at its layer's resid_pre, in the order given. The steerings
// are copied into the hooks' callback: they need not outlive it.
model::ForwardHooks steering_hooks(const model::ModelConfig& config, std::span<const Steering> steerings);

// A vector from text: a JSON list of C numbers. Errors: invalid_argument (not a JSON list of
// numbers, a length other than C, NaN or infinity), naming `what` (the option or the file).
Result<std::vector<float>> steering_vector_parse_json(std::string_view text, int C, const std::string& what);
// A vector from a file: a JSON list of C numbers when it starts with '[', else C float32
// little-endian (numpy: v.astype('<f4').tofile(path)). Errors: not_found, invalid_argument
// (a size other than 4 * C bytes, a bad JSON list, NaN or infinity).
Result<std::vector<float>> steering_vector_read(const std::string& path, int C);

// ActAdd's rows: resid_pre at `layer` of `plus` minus that of `minus`, over the positions of the
// shorter, (min(T+, T-), C). Errors: invalid_argument (a layer the model lacks, an empty
// prompt), the forward's.
Result<Steering> steering_from_prompts(const model::Parameters& params, std::span<const int> plus,
                                       std::span<const int> minus, int layer, float coef, model::Workspace& workspace);

}  // namespace headlab::research
