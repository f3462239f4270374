// train/lr_schedule.cpp — warm-up then cosine or constant.
#include "train/lr_schedule.h"

#include <cmath>
#include <numbers>
#include <string>

namespace headlab::train {

Result<LrDecay> lr_decay_from_name(std::string_view name) {
  if (name == "constant") return LrDecay::constant;
  if (name == "cosine") return LrDecay::cosine;
  return make_error(ErrorCode::invalid_argument,
                    "unknown learning-rate decay '" + std::string(name) + "': use constant or cosine");
}

float learning_rate_at(const LrSchedule& s, int step) {
  if (step < s.warmup_steps) return s.lr * static_cast<float>(step + 1) / static_cast<float>(s.warmup_steps);
  if (s.decay == LrDecay::constant) return s.lr;
  const int span = s.total_steps - s.warmup_steps;
  if (span <= 1) return s.lr;
  float progress = static_cast<float>(step - s.warmup_steps) / static_cast<float>(span - 1);
  if (progress > 1.0f) progress = 1.0f;
  const float min_lr = s.lr * s.min_lr_fraction;
  return min_lr + (s.lr - min_lr) * 0.5f * (1.0f + std::cos(std::numbers::pi_v<float> * progress));
}

}  // namespace headlab::train
