// train/lr_schedule.h — the learning rate at each step: linear warm-up, then constant or
// a cosine decay to min_lr_fraction * lr at the last step.
//   warm-up (step < warmup):  lr * (step + 1) / warmup
//   cosine:                   min + (lr - min) * (1 + cos(pi * progress)) / 2
#pragma once

#include <string_view>

#include "util/result.h"

namespace headlab::train {

enum class LrDecay { constant, cosine };

// "constant" or "cosine"; otherwise invalid_argument.
Result<LrDecay> lr_decay_from_name(std::string_view name);

struct LrSchedule {
  float lr = 1e-3f;
  int warmup_steps = 0;
  int total_steps = 1;
  LrDecay decay = LrDecay::cosine;
  float min_lr_fraction = 0.1f;
};

float learning_rate_at(const LrSchedule& s, int step);  // step counts from 0

}  // namespace headlab::train
